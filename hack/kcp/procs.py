"""Start, identify and stop the control plane's processes by their own PIDs (never by name)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass(frozen=True)
class ProcessRecord:
    name: str
    pid: int
    start_ticks: int  # /proc/<pid>/stat field 22: tells a reused PID from ours
    argv0: str
    log: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def start_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # exited, not yet reaped
        return None
    return int(fields[19])


def is_ours_and_alive(rec: ProcessRecord) -> bool:
    return start_ticks(rec.pid) == rec.start_ticks


def start(name: str, argv: list[str], log_dir: Path, env: dict[str, str] | None = None) -> ProcessRecord:
    """Start a process in its own session (it outlives `hack/cluster up`), logging to log_dir/<name>.log."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"{name}.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True, env=env,
        )
    ticks = None
    for _ in range(100):
        ticks = start_ticks(proc.pid)
        if ticks is not None:
            break
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    if ticks is None:
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{name} exited at once (code {proc.poll()}); log {log_path}:\n{tail}")
    # The Popen object is dropped: the process is ours by PID + start time, recorded in the state file.
    # Reaping happens in stop() (we may be its parent) or by init once this process exits.
    proc.returncode = 0  # keep Popen.__del__ from warning; we reap explicitly
    return ProcessRecord(name, proc.pid, ticks, argv[0], str(log_path))


def _reap(pid: int) -> None:
    # Not our child when another `hack/cluster up` started it: init reaps it then.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(rec: ProcessRecord, grace: float = 10.0) -> str:
    """SIGTERM, wait up to `grace`, then SIGKILL. Returns what happened, for the log."""
    if not is_ours_and_alive(rec):
        _reap(rec.pid)
        return "not running"
    os.kill(rec.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(rec.pid)
        if not is_ours_and_alive(rec):
            return "stopped"
        time.sleep(0.05)
    os.kill(rec.pid, signal.SIGKILL)
    for _ in range(200):
        _reap(rec.pid)
        if not is_ours_and_alive(rec):
            return "killed"
        time.sleep(0.05)
    raise RuntimeError(f"{rec.name} (pid {rec.pid}) survived SIGKILL")
