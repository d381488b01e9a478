"""Run one repair command (`systemctl restart kubelet` in the host's namespaces) and say how it ended.

The lifecycle of agent/npd/plugin_runner.py, for a command whose exit code is the answer: it starts in a session
of its own, so it and everything it forks share one process group; at its timeout the group gets SIGTERM, then
SIGKILL after a grace, and after it exits the group gets SIGKILL too (nothing it started outlives the call; a
service systemd restarts is systemd's child, not ours). stdout is not read; stderr is read from the event loop
keeping only its last bytes, so a command that floods can neither stall on a full pipe nor grow our memory, and no
wait depends on a pipe reaching EOF. Never raises for anything the command does.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

from agent.process_group import CappedPipe, exited, signal_group, signal_name

TAIL_BYTES = 4096  # what is kept of stderr: its last line is what a person needs
MAX_LINE = 300  # characters of that line in an answer
TERM_GRACE = 5.0  # seconds between SIGTERM and SIGKILL on timeout: systemctl cancels its wait on SIGTERM
REAP_TIMEOUT = 2.0  # seconds to wait for a SIGKILLed command to be reaped; only a D-state process takes longer
DRAIN_TIMEOUT = 0.5  # seconds to collect the last bytes of stderr once the group is dead
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


@dataclass(frozen=True)
class CommandResult:
    exit_code: int | None  # None: it never started, or was never reaped; negative: killed by that signal
    timed_out: bool
    duration: float  # seconds, from start to its group being dead
    stderr: str  # the last line it wrote to stderr, control characters removed, at most MAX_LINE characters
    error: str = ""  # why it could not be started

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def failure(self, timeout: float) -> str:
        """How it failed, in a few words for an answer ("exit code 1: Unit crio.service not found.")."""
        if self.error:
            return self.error
        if self.timed_out:
            return f"timed out after {timeout:g}s; its process group was killed"
        if self.exit_code is None:
            return "did not exit after SIGKILL (stuck in uninterruptible I/O?)"
        said = f": {self.stderr}" if self.stderr else ""
        if self.exit_code < 0:
            return f"killed by {signal_name(-self.exit_code)}{said}"
        return f"exit code {self.exit_code}{said}"




async def run_command(argv: Sequence[str], *, timeout: float) -> CommandResult:
    """Run `argv` (no shell) for at most `timeout` seconds."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                    stderr=err_w, start_new_session=True)
    except BaseException as e:
        os.close(err_r)
        if not isinstance(e, OSError | ValueError):  # cancelled: nothing was started that we could lose
            raise
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return CommandResult(None, False, time.monotonic() - started, "", f"cannot run {argv[0]}: {reason}")
    finally:
        os.close(err_w)  # the child holds its own copy; ours must go, or the read end never sees EOF

    pgid = proc.pid  # start_new_session: it leads a new process group with its own pid
    stderr = CappedPipe(loop, err_r, TAIL_BYTES, keep_last=True)
    timed_out = group_killed = False
    try:
        if not await exited(proc, timeout):
            timed_out = True
            signal_group(pgid, signal.SIGTERM)
            await exited(proc, TERM_GRACE)
        signal_group(pgid, signal.SIGKILL)  # the group id is not reused while any member lives
        group_killed = True
        reaped = proc.returncode is not None or await exited(proc, REAP_TIMEOUT)
        await asyncio.wait([stderr.eof], timeout=DRAIN_TIMEOUT)
    finally:
        if not group_killed:  # cancelled mid-way (the agent stops): kill now, and reap
            signal_group(pgid, signal.SIGKILL)
            if proc.returncode is None:
                await exited(proc, REAP_TIMEOUT)
        stderr.close()
    return CommandResult(proc.returncode if reaped else None, timed_out, time.monotonic() - started,
                         last_line(bytes(stderr.data)))


def last_line(raw: bytes) -> str:
    """The last non-blank line of `raw`, with control characters (escapes, CR) replaced by a space, cut short."""
    for line in reversed(raw.decode("utf-8", "replace").splitlines()):
        text = _CONTROL.sub(" ", line).strip()
        if text:
            return text if len(text) <= MAX_LINE else text[:MAX_LINE - 3] + "..."
    return ""


