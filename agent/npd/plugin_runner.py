"""Run one NPD-style plugin and read its verdict, without ever leaking a process or blocking on its pipes.

The protocol is NPD's: exit 0 = OK (condition False), 1 = problem (True), anything else — another code, a signal,
a timeout, a file that can't be executed — = Unknown; the message is stdout, trimmed and cut to `max_output` bytes.

What NPD gets wrong and this module does not (its issues #726/#941, #1050, #372):
- The plugin starts in its own session, so it and everything it forks share one process group. On timeout the
  whole group gets SIGTERM, then SIGKILL after a short grace; after a normal exit the group gets SIGKILL too, so a
  `sleep 1000 &` left behind by a plugin dies with it.
- stdout and stderr are our own non-blocking pipes read from the event loop: the first bytes are kept, the rest is
  read and dropped, so a plugin that floods can't stall on a full pipe and can't grow our memory.
- Waiting never depends on a pipe reaching EOF (a grandchild that escaped the group may hold it open forever), and
  every wait has a deadline, so even a process stuck in uninterruptible sleep costs a bounded time, not the monitor.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent.model import Status
from agent.process_group import CappedPipe, exited, signal_group, signal_name

BUFFER_BYTES = 4096  # what NPD keeps of each stream before cutting the message; the rest is drained
TERM_GRACE = 1.0  # seconds between SIGTERM and SIGKILL on timeout
REAP_TIMEOUT = 2.0  # seconds to wait for a SIGKILLed plugin to be reaped; only a D-state process takes longer
DRAIN_TIMEOUT = 0.5  # seconds to collect the last bytes once the group is dead
WORST_CASE_OVERHEAD = TERM_GRACE + REAP_TIMEOUT + DRAIN_TIMEOUT  # beyond `timeout`, the longest a call can take


@dataclass(frozen=True)
class PluginResult:
    status: Status
    message: str  # stdout trimmed and cut to max_output bytes, or our own explanation when there is none
    exit_code: int | None  # None when it never ran or was never reaped; negative = killed by that signal
    timed_out: bool
    duration: float  # seconds, from start to the plugin's group being dead
    stderr: str = ""  # the first BUFFER_BYTES of stderr, for logs; never part of the condition




async def run_plugin(path: str | os.PathLike[str], args: Sequence[str] = (), *, timeout: float, max_output: int,
                     env: Mapping[str, str] | None = None) -> PluginResult:
    """Run `path args...` for at most `timeout` seconds; never raises for anything the plugin does."""
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            os.fspath(path), *args, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w,
            env=dict(env) if env is not None else None, start_new_session=True)
    except BaseException as e:
        os.close(out_r)
        os.close(err_r)
        if not isinstance(e, OSError | ValueError):  # cancelled: nothing was started that we could lose
            raise
        # missing, not executable, no interpreter, a NUL byte in an argument: the plugin's fault, so Unknown
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        return PluginResult(Status.UNKNOWN, f"cannot run plugin {os.fspath(path)}: {reason}", None, False,
                            time.monotonic() - started)
    finally:
        # The child holds its own copies; ours must go, or the read ends never see EOF.
        os.close(out_w)
        os.close(err_w)

    pgid = proc.pid  # start_new_session: the plugin leads a new session and process group with its own pid
    stdout = CappedPipe(loop, out_r, max(BUFFER_BYTES, max_output))
    stderr = CappedPipe(loop, err_r, BUFFER_BYTES)
    timed_out = group_killed = False
    try:
        if not await exited(proc, timeout):
            timed_out = True
            signal_group(pgid, signal.SIGTERM)
            await exited(proc, TERM_GRACE)
        # Whether it finished or timed out, nothing it started may outlive the call: background children included.
        # The group id can't be reused while any member lives, so signalling it after the leader is reaped is safe.
        signal_group(pgid, signal.SIGKILL)
        group_killed = True
        reaped = proc.returncode is not None or await exited(proc, REAP_TIMEOUT)
        # With the group dead the pipes reach EOF at once, unless a process that left the group still holds them.
        await asyncio.wait([stdout.eof, stderr.eof], timeout=DRAIN_TIMEOUT)
    finally:
        if not group_killed:  # cancelled mid-way: kill now, and reap, which after SIGKILL takes milliseconds
            signal_group(pgid, signal.SIGKILL)
            if proc.returncode is None:
                await exited(proc, REAP_TIMEOUT)
        stdout.close()
        stderr.close()
    return verdict(os.fspath(path), proc.returncode if reaped else None, bytes(stdout.data), bytes(stderr.data),
                   reaped=reaped, timed_out=timed_out, timeout=timeout, max_output=max_output,
                   duration=time.monotonic() - started)


def verdict(name: str, code: int | None, stdout: bytes, stderr: bytes, *, reaped: bool, timed_out: bool,
            timeout: float, max_output: int, duration: float) -> PluginResult:
    """What a finished plugin said: NPD's reading of its exit code and output (any bytes; never raises)."""
    output = _cut(stdout, max_output)
    errors = stderr.decode("utf-8", "replace").strip()
    if not reaped:
        return PluginResult(Status.UNKNOWN, f"plugin {name} did not exit after SIGKILL (stuck in uninterruptible "
                            "I/O?)", None, timed_out, duration, errors)
    if timed_out:
        said = f'; output: "{output}"' if output else ""
        return PluginResult(Status.UNKNOWN, f"timeout when running plugin {name} after {timeout:g}s; its process "
                            f"group was killed{said}", code, True, duration, errors)
    if code == 0:
        return PluginResult(Status.FALSE, output, code, False, duration, errors)
    if code == 1:
        return PluginResult(Status.TRUE, output, code, False, duration, errors)
    if not output:
        output = (f"plugin {name} was killed by {signal_name(-code)}" if code is not None and code < 0
                  else f"plugin {name} exited with status {code}")
    return PluginResult(Status.UNKNOWN, output, code, False, duration, errors)




def _cut(raw: bytes, max_output: int) -> str:
    """NPD's message: trim whitespace, then keep at most `max_output` bytes (never half a UTF-8 character)."""
    text = raw.decode("utf-8", "replace").strip()
    return text.encode()[:max_output].decode("utf-8", "ignore")
