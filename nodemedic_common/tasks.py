"""Running a daemon's long-lived tasks until a signal, stopping them without losing what they raise, and keeping
fire-and-forget tasks referenced until they end."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine, Iterable
from typing import Any


def keep(tasks: set[asyncio.Task[Any]], coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
    """Run `coroutine` as a task held in `tasks` until it ends: the event loop keeps only a weak reference to a task,
    so one nobody holds may be collected mid-flight; whoever owns `tasks` may await or cancel what is left."""
    task = asyncio.get_running_loop().create_task(coroutine)
    tasks.add(task)
    task.add_done_callback(tasks.discard)
    return task


async def run_until_signal(coroutines: Iterable[Coroutine[Any, Any, Any]], log: logging.Logger) -> int:
    """Runs the coroutines until SIGTERM or SIGINT, or until one of them ends; then cancels the rest.

    Returns 1 when a task failed, else 0. Whatever a task raises, before or while being cancelled, is logged with
    the task's name: nothing is swallowed on the way out."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    tasks = [asyncio.create_task(c, name=getattr(c, "__qualname__", None)) for c in coroutines]
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
    code = 0
    for t in tasks:
        if t in done and t.exception() is not None:
            log.error("task failed", extra={"task": t.get_name(), "error": repr(t.exception())})
            code = 1
    for t in [*tasks, stopper]:
        t.cancel()
    for t in tasks:
        if t not in done:
            await cancelled(t, log)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.remove_signal_handler(sig)
    return code


async def cancelled(task: asyncio.Task[Any], log: logging.Logger) -> None:
    """Cancels the task and waits for it to end; an exception it raises on the way out is logged, not raised."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    except Exception as e:  # noqa: BLE001 - stopping must go on, but what went wrong is told
        log.error("task failed while stopping", extra={"task": task.get_name(), "error": repr(e)})
