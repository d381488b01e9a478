"""Runs every check in its own task: on its interval (on a grid shared by all, see `until_next_tick`), cancelled
at its timeout, restarted with back-off if it crashes. A hung or broken check turns its own conditions Unknown and
never blocks the others. Each observation is handed to `publish` (the CLI's `reporting.inbox.Inbox.put`), which
never blocks a check; `agent/pipeline.py` takes it from there.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence

from prometheus_client import CollectorRegistry, Counter, Histogram

from agent.model import Check, Observation, WaitsForInput
from nodemedic_common.durations import format_duration


class Supervisor:
    def __init__(self, checks: Sequence[Check], *, registry: CollectorRegistry, log: logging.Logger,
                 publish: Callable[[Observation], None] = lambda obs: None) -> None:
        self.checks = list(checks)
        self.log = log
        self.publish = publish
        self.started = time.monotonic()
        self.last_completed: dict[str, float] = {}
        self.duration = Histogram("nodemedic_agent_check_duration_seconds", "Time one check run took", ["check"],
                                  registry=registry, buckets=(0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30))
        self.errors = Counter("nodemedic_agent_check_errors_total", "Check runs that failed or timed out",
                              ["check", "kind"], registry=registry)
        self._readers = SharedReaders()
        self._timed: dict[str, Histogram] = {}  # check name -> its labelled histogram, not labels() each run

    async def run_once(self, check: Check) -> Observation:
        now = dt.datetime.now(dt.UTC)
        t0 = time.monotonic()
        try:
            # in this task, not one of its own as wait_for would make: a task and its extra loop pass per run
            async with asyncio.timeout(check.timing.timeout.total_seconds()):
                obs = await check.observe(now)
        except TimeoutError:
            self.errors.labels(check.name, "timeout").inc()
            obs = Observation(check=check.name, at=now,
                              error=f"timed out after {format_duration(check.timing.timeout)}")
        except Exception as e:  # a buggy check must not take the agent down
            self.errors.labels(check.name, "exception").inc()
            self.log.exception("check failed", extra={"check": check.name})
            obs = Observation(check=check.name, at=now, error=f"{type(e).__name__}: {e}")
        else:
            if obs.error:
                self.errors.labels(check.name, "reported").inc()
        timed = self._timed.get(check.name)
        if timed is None:
            timed = self._timed[check.name] = self.duration.labels(check.name)
        timed.observe(time.monotonic() - t0)
        self.last_completed[check.name] = time.monotonic()
        return obs

    async def _loop(self, check: Check) -> None:
        # once, not per round: a runtime-checkable Protocol's isinstance walks the class's attributes every time
        waiter = check if isinstance(check, WaitsForInput) else None
        while True:
            self.publish(await self.run_once(check))
            # read each time: a check's timing may change once it knows its source (see WaitsForInput)
            delay = until_next_tick(time.monotonic() - self.started, check.timing.interval.total_seconds())
            fd = waiter.input_fd() if waiter is not None else None
            if fd is None:
                await asyncio.sleep(delay)
            else:
                await self._readers.readable(fd, delay)

    async def run(self) -> None:
        await asyncio.gather(*(self._loop(c) for c in self.checks))

    def health(self) -> tuple[bool, str]:
        """Unhealthy when any check has not completed within 2 intervals + its timeout (a stalled loop or check)."""
        now = time.monotonic()
        late = []
        for c in self.checks:
            allowed = 2 * c.timing.interval.total_seconds() + c.timing.timeout.total_seconds() + 1
            last = self.last_completed.get(c.name, self.started)
            if now - last > allowed:
                late.append(f"{c.name} ({now - last:.0f}s > {allowed:.0f}s)")
        return (not late, "ok" if not late else "checks not completing: " + ", ".join(late))


def until_next_tick(elapsed: float, interval: float) -> float:
    """Seconds from `elapsed` (since the supervisor started) to the next multiple of `interval`.

    Every check runs on one grid from one start, not `interval` after its own last run: the checks that share an
    interval (most run every 30 s) then wake in one pass of the event loop instead of one each, scattered by their
    run times, and their schedule never drifts. A run that overran its interval waits for the next tick."""
    return interval - elapsed % interval


class SharedReaders:
    """Waits for descriptors that several checks may share (the journal monitors wait on one journal descriptor):
    asyncio keeps one reader callback per descriptor, so one callback here wakes every check waiting on it."""

    def __init__(self) -> None:
        self._waiting: dict[int, set[asyncio.Future[None]]] = {}

    async def readable(self, fd: int, timeout: float) -> None:
        """Return when `fd` is readable or after `timeout` seconds, whichever comes first."""
        loop = asyncio.get_running_loop()
        waiters = self._waiting.get(fd)
        if waiters is None:
            try:
                loop.add_reader(fd, self._wake, fd)
            except (OSError, ValueError):  # not pollable after all: wait the interval
                await asyncio.sleep(timeout)
                return
            waiters = self._waiting[fd] = set()
        ready: asyncio.Future[None] = loop.create_future()
        waiters.add(ready)
        try:
            async with asyncio.timeout(timeout):
                await ready
        except TimeoutError:
            pass
        finally:
            waiters.discard(ready)
            if not waiters:
                del self._waiting[fd]
                loop.remove_reader(fd)

    def _wake(self, fd: int) -> None:
        for ready in self._waiting.get(fd, ()):
            if not ready.done():
                ready.set_result(None)
