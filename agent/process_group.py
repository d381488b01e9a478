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
