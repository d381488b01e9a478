"""A hung or crashing check reports Unknown and never blocks the others; /healthz sees a stalled check."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from prometheus_client import CollectorRegistry

from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.supervisor import SharedReaders, Supervisor, until_next_tick

FAST = CheckTiming(interval=dt.timedelta(seconds=0.05), timeout=dt.timedelta(seconds=0.2))
SLOW = CheckTiming(interval=dt.timedelta(minutes=10), timeout=dt.timedelta(seconds=1))


@dataclass
class FakeCheck:
    name: str
    behaviour: str  # ok | hang | crash
    timing: CheckTiming = FAST
    condition_types: tuple[str, ...] = ("X",)

    async def observe(self, now: dt.datetime) -> Observation:
        if self.behaviour == "hang":
            await asyncio.Event().wait()
        if self.behaviour == "crash":
            raise RuntimeError("sensor exploded")
        return Observation(self.name, now, (ConditionReport("X", Status.FALSE, "Fine"),))


def sup(*checks: FakeCheck, publish: Callable[[Observation], None] = lambda obs: None) -> Supervisor:
    return Supervisor(checks, registry=CollectorRegistry(), log=logging.getLogger("t"), publish=publish)


def test_a_hung_check_times_out_into_an_error_observation() -> None:
    s = sup(FakeCheck("stuck", "hang"))
    obs = asyncio.run(s.run_once(s.checks[0]))
    assert obs.error == "timed out after 200ms" and obs.conditions == ()


def test_a_crashing_check_becomes_an_error_observation() -> None:
    s = sup(FakeCheck("boom", "crash"))
    obs = asyncio.run(s.run_once(s.checks[0]))
    assert "sensor exploded" in obs.error


def test_a_hung_check_does_not_block_a_healthy_one() -> None:
    async def main() -> list[Observation]:
        got: list[Observation] = []
        three = asyncio.Event()

        def publish(obs: Observation) -> None:
            got.append(obs)
            if sum(1 for o in got if o.check == "fine") >= 3:
                three.set()

        s = sup(FakeCheck("stuck", "hang"), FakeCheck("fine", "ok"), publish=publish)
        task = asyncio.create_task(s.run())
        await asyncio.wait_for(three.wait(), 5)
        task.cancel()
        return got

    got = asyncio.run(main())
    assert sum(1 for o in got if o.check == "fine" and not o.error) >= 3


def test_health_fails_when_a_check_has_not_completed_in_time() -> None:
    s = sup(FakeCheck("fine", "ok"))
    assert s.health()[0]
    s.started -= 100  # pretend we started long ago and the check never completed
    ok, why = s.health()
    assert not ok and "fine" in why


@dataclass
class PipeCheck:
    """A check whose source is a pipe: it drains the pipe and counts its runs."""

    fd: int
    name: str = "pipe"
    timing: CheckTiming = SLOW
    condition_types: tuple[str, ...] = ()
    runs: int = 0

    def input_fd(self) -> int | None:
        return self.fd

    async def observe(self, now: dt.datetime) -> Observation:
        self.runs += 1
        with contextlib.suppress(BlockingIOError):
            os.read(self.fd, 4096)
        return Observation(self.name, now)


def test_a_check_that_waits_for_input_runs_when_its_input_arrives_not_on_its_interval() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    check = PipeCheck(read_end)

    async def scenario() -> int:
        published: asyncio.Queue[Observation] = asyncio.Queue()
        s = sup(check, publish=published.put_nowait)  # type: ignore[arg-type]
        task = asyncio.create_task(s.run())
        await asyncio.wait_for(published.get(), 5)  # the first run, at start
        os.write(write_end, b"a kernel record\n")
        await asyncio.wait_for(published.get(), 5)  # far sooner than the 10-minute interval: woken by the input
        task.cancel()
        return check.runs

    try:
        assert asyncio.run(scenario()) == 2
    finally:
        os.close(read_end)
        os.close(write_end)


@pytest.mark.parametrize(("elapsed", "interval", "expected"), [
    (0.0, 30.0, 30.0),
    (0.004, 30.0, 29.996),
    (29.5, 30.0, 0.5),
    (30.0, 10.0, 10.0),
    (41.0, 10.0, 9.0),
    (47.0, 30.0, 13.0),
], ids=["at-start", "after-a-quick-run", "just-before-a-tick", "on-a-tick", "a-shorter-interval-on-the-same-grid",
        "a-run-that-overran-waits-for-the-next-tick"])
def test_checks_wake_on_one_grid_of_their_interval_from_the_start(elapsed: float, interval: float,
                                                                   expected: float) -> None:
    assert until_next_tick(elapsed, interval) == pytest.approx(expected)


def test_many_checks_waiting_on_one_descriptor_all_wake_when_it_is_readable() -> None:
    readers = SharedReaders()
    read_end, write_end = os.pipe()

    async def scenario() -> list[bool]:
        waits = [asyncio.create_task(readers.readable(read_end, 30)) for _ in range(3)]
        await asyncio.sleep(0)  # every wait registered before the write
        os.write(write_end, b"x")
        done, _ = await asyncio.wait(waits, timeout=5)
        return [w in done for w in waits]

    try:
        assert asyncio.run(scenario()) == [True, True, True]
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_shared_descriptor_that_stays_quiet_lets_each_wait_time_out() -> None:
    readers = SharedReaders()
    read_end, write_end = os.pipe()

    async def scenario() -> None:
        await asyncio.gather(readers.readable(read_end, 0.01), readers.readable(read_end, 0.02))

    try:
        asyncio.run(scenario())
        assert readers._waiting == {}  # nothing left registered with the loop
    finally:
        os.close(read_end)
        os.close(write_end)
