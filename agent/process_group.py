"""Waiting for and signalling a child's process group: what the custom plugins (agent/npd/plugin_runner.py) and the
repair commands (agent/repair/commands.py) both need to end a command with everything it started."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal


async def exited(proc: asyncio.subprocess.Process, within: float) -> bool:
    """True once `proc` has exited (and is reaped), False if it has not within `within` seconds."""
    try:
        await asyncio.wait_for(proc.wait(), within)
    except TimeoutError:
        return False
    return True


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already gone
        os.killpg(pgid, sig)


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


READ_CHUNK = 65536


class CappedPipe:
    """Reads one pipe to EOF from the event loop, keeping `cap` bytes of it: the first ones (a plugin's message is
    its output's start) or, with `keep_last`, the last ones (a failed command's last stderr line)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int, cap: int, *, keep_last: bool = False) -> None:
        self._loop, self._fd, self._cap, self._keep_last = loop, fd, cap, keep_last
        self.data = bytearray()
        self.eof: asyncio.Future[None] = loop.create_future()
        os.set_blocking(fd, False)
        loop.add_reader(fd, self._on_readable)

    def _on_readable(self) -> None:
        # One read per wake-up: a writer faster than us must not keep the loop in this callback forever.
        try:
            chunk = os.read(self._fd, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._loop.remove_reader(self._fd)
            if not self.eof.done():
                self.eof.set_result(None)
            return
        if self._keep_last:
            self.data += chunk
            del self.data[:-self._cap]
        else:
            self.data += chunk[:max(0, self._cap - len(self.data))]

    def close(self) -> None:
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        if not self.eof.done():
            self.eof.cancel()
