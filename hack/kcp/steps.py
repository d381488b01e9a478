"""One build step of `hack/cluster build`: a command run with its output kept for the error, the summed memory of
its process tree sampled, and every log line prefixed with the component being built (two build side by side)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

building = threading.local()  # the component the current thread builds, named in each log line


def prefix() -> str:
    component = getattr(building, "name", "")
    return f"[build {component}]" if component else "[build]"


def log(msg: str) -> None:
    sys.stderr.write(f"{prefix()} {msg}\n")  # one write per line: two builds log side by side
    sys.stderr.flush()


class TreeRssSampler:
    """Samples the summed RSS of a process and its descendants from /proc (hack/cluster is stdlib-only)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_tree = 0
        self.peak_proc = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeRssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            rss = _tree_rss(self.pid)
            if rss:
                self.peak_tree = max(self.peak_tree, sum(rss))
                self.peak_proc = max(self.peak_proc, *rss)


def _tree_rss(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/statm") as f:
                resident = int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = resident * page
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in rss:
            out.append(rss[pid])
        todo.extend(children.get(pid, []))
    return out


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], sampler_out: list[TreeRssSampler] | None = None) -> str:
    log(" ".join(cmd))
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with TreeRssSampler(proc.pid) as sampler:
        out, _ = proc.communicate()
    if sampler_out is not None:
        sampler_out.append(sampler)
    if proc.returncode != 0:
        raise SystemExit(f"{prefix()} command failed ({proc.returncode}): {' '.join(cmd)}\n{out}")
    return out
