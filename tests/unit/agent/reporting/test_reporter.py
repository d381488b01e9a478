"""The reporter: owned conditions only, retired types deleted, latest state kept while the API is away,
events aggregated and rate-limited with a counter for what was not sent."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.model import ConditionReport, EventReport, Observation, Status
from agent.reporting.conditions import ConditionBook
from agent.reporting.reporter import Reporter, StateFile, TokenBucket
from nodemedic_common.kube_errors import ApiError

NOW = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


class FakeKube:
    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.calls: list[tuple[str, str, Any]] = []
        self.capacity: dict[str, str] = {"cpu": "8", "nvidia.com/gpu": "8"}  # what the Node says, in either answer

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, body))
        if self.fail:
            self.fail -= 1
            raise ApiError(0, method, path, "connection refused")
        if method == "GET":
            return {"status": {"conditions": [{"type": "Ready", "status": "True"}], "capacity": self.capacity}}
        if path.endswith("/status"):
            return {"status": {"capacity": self.capacity}}
        return {}


def reporter(tmp_path: Path, kube: FakeKube, previously: set[str] | None = None) -> tuple[Reporter, ConditionBook]:
    state = StateFile(tmp_path / "state.json")
    if previously:
        state.save(previously)
    book = ConditionBook({"kernel": ["KernelDeadlock"]})
    r = Reporter(kube, "n1", book, state=state, registry=CollectorRegistry(), log=logging.getLogger("t"),  # type: ignore[arg-type]
                 events_per_second=0.0, event_burst=2)
    return r, book


def test_the_status_patch_carries_only_owned_conditions_and_deletes_retired_types(tmp_path: Path) -> None:
    kube = FakeKube()
    r, book = reporter(tmp_path, kube, previously={"KernelDeadlock", "NTPProblem"})
    book.apply(Observation("kernel", NOW, (ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "m"),)))
    asyncio.run(r.write_conditions())
    method, path, body = kube.calls[-1]
    assert (method, path) == ("PATCH", "/api/v1/nodes/n1/status")
    types = [(c["type"], c.get("status"), c.get("$patch")) for c in body["status"]["conditions"]]
    assert types == [("KernelDeadlock", "True", None), ("NTPProblem", None, "delete")]
    assert StateFile(tmp_path / "state.json").load() == {"KernelDeadlock"}
    asyncio.run(r.write_conditions())
    assert [c["type"] for c in kube.calls[-1][2]["status"]["conditions"]] == ["KernelDeadlock"]


def test_while_the_api_is_away_the_reporter_backs_off_and_then_writes_the_latest_state(tmp_path: Path) -> None:
    kube = FakeKube(fail=2)
    r, book = reporter(tmp_path, kube)

    async def main() -> None:
        task = asyncio.create_task(r.run())
        book.apply(Observation("kernel", NOW, (ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung"),)))
        while not any(m == "PATCH" for m, _, _ in kube.calls[2:]):
            await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 10))
    patches = [b for m, _, b in kube.calls if m == "PATCH"]
    assert patches[-1]["status"]["conditions"][0]["status"] == "True"


def test_the_written_timestamp_starts_at_the_agents_start_and_moves_only_with_an_accepted_write(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What NodemedicAgentNotReporting reads: an agent that just started is not silent; a failed write is."""
    clock = iter([1000.0, 1300.0, 1600.0])
    monkeypatch.setattr(time, "time", lambda: next(clock))
    kube = FakeKube()
    state = StateFile(tmp_path / "state.json")
    registry = CollectorRegistry()
    r = Reporter(kube, "n1", ConditionBook({"kernel": ["KernelDeadlock"]}), state=state,  # type: ignore[arg-type]
                 registry=registry, log=logging.getLogger("t"), heartbeat=120.0)
    written = lambda: registry.get_sample_value("nodemedic_agent_status_written_timestamp_seconds")  # noqa: E731
    assert written() == 1000.0 and registry.get_sample_value("nodemedic_agent_heartbeat_seconds") == 120.0
    asyncio.run(r.write_conditions())
    assert written() == 1300.0
    kube.fail = 1
    with pytest.raises(ApiError):
        asyncio.run(r.write_conditions())
    assert written() == 1300.0
    asyncio.run(r.write_conditions())
    assert written() == 1600.0


def test_repeated_events_are_aggregated_and_excess_ones_are_counted_not_sent(tmp_path: Path) -> None:
    kube = FakeKube()
    r, _ = reporter(tmp_path, kube)
    e = EventReport("OOMKilling", "Killed process 1 (x)")
    for _ in range(4):
        asyncio.run(r.event(e, source="kernel-monitor"))
    sent = [(m, p) for m, p, _ in kube.calls]
    assert sent[0] == ("POST", "/api/v1/namespaces/default/events")
    assert sent[1][0] == "PATCH" and kube.calls[1][2]["count"] == 2
    assert len(sent) == 2  # burst of 2, no refill: the 3rd and 4th are suppressed
    assert r.suppressed.labels("OOMKilling")._value.get() == 2


def test_the_token_bucket_refills_with_time() -> None:
    t = [0.0]
    b = TokenBucket(1, 1.0, clock=lambda: t[0])
    assert b.take() and not b.take()
    t[0] = 1.0
    assert b.take()


class SlowKube(FakeKube):
    """Answers after a few loop turns, as a real API server does: concurrent requests overlap."""

    async def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        self.calls.append((method, path, body))
        for _ in range(3):
            await asyncio.sleep(0)
        if self.fail:
            self.fail -= 1
            raise ApiError(0, method, path, "connection refused")
        return {}


def test_identical_events_sent_concurrently_make_one_event_with_a_count(tmp_path: Path) -> None:
    kube = SlowKube()
    r, _ = reporter(tmp_path, kube)
    r.bucket = TokenBucket(10, 0.0)
    e = EventReport("TaskHung", "task a blocked for more than 120 seconds")

    async def main() -> None:
        await asyncio.gather(*(r.event(e, source="kernel-monitor") for _ in range(3)))

    asyncio.run(main())
    assert [m for m, _, _ in kube.calls] == ["POST", "PATCH", "PATCH"]
    assert [b["count"] for m, _, b in kube.calls if m == "PATCH"] == [2, 3]


def test_when_the_creating_post_fails_the_next_identical_event_creates_it(tmp_path: Path) -> None:
    kube = SlowKube(fail=1)
    r, _ = reporter(tmp_path, kube)
    r.bucket = TokenBucket(10, 0.0)
    e = EventReport("TaskHung", "task a blocked for more than 120 seconds")

    async def main() -> None:
        await asyncio.gather(r.event(e, source="kernel-monitor"), r.event(e, source="kernel-monitor"))

    asyncio.run(main())
    assert [m for m, _, _ in kube.calls] == ["POST", "POST"]
    assert kube.calls[1][2]["count"] == 1 and r.suppressed.labels("TaskHung")._value.get() == 1


def test_the_nodes_capacity_comes_from_the_get_at_start_and_every_status_patch(tmp_path: Path) -> None:
    kube = FakeKube()
    r, _ = reporter(tmp_path, kube)
    assert r.capacity.count("nvidia.com/gpu") is None  # nothing seen yet: nothing to compare with

    asyncio.run(r.seed())
    assert r.capacity.count("nvidia.com/gpu") == 8
    kube.capacity = {"cpu": "8", "nvidia.com/gpu": "7"}  # the device plugin registered one device fewer
    asyncio.run(r.write_conditions())

    assert r.capacity.count("nvidia.com/gpu") == 7
    assert [m for m, _, _ in kube.calls] == ["GET", "PATCH"]  # no request of its own


def test_accepted_returns_only_once_a_write_of_that_version_went_through(tmp_path: Path) -> None:
    """What the repair worker waits for before it runs a command: its Acting answer on the Node."""
    kube = FakeKube()
    r, book = reporter(tmp_path, kube)
    r.min_write_gap = r.debounce = 0.0

    async def main() -> None:
        task = asyncio.create_task(r.run())
        await asyncio.wait_for(r.accepted(0), 5)  # the first write, of the book as seeded
        kube.fail = 2  # the API server refuses the next two writes
        book.apply(Observation("kernel", NOW, (ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung"),)))
        r.notify_changed()
        waiting = asyncio.create_task(r.accepted(book.version))
        while kube.fail:
            assert not waiting.done(), "not accepted while the writes fail"
            await asyncio.sleep(0.01)
        await asyncio.wait_for(waiting, 10)
        assert r.written_version == book.version
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 20))
    patches = [b for m, _, b in kube.calls if m == "PATCH"]
    assert patches[-1]["status"]["conditions"][0]["status"] == "True"


@pytest.mark.parametrize("text", ["not json", "[1]", "[" * 100_000 + "]" * 100_000],
                         ids=["not JSON", "a list", "nested past the decoder"])
def test_an_unreadable_state_file_remembers_no_types(tmp_path: Path, text: str) -> None:
    (tmp_path / "state.json").write_text(text)
    assert StateFile(tmp_path / "state.json").load() == set()


def flapping_writes(tmp_path: Path, flaps: int) -> tuple[Reporter, FakeKube, ConditionBook, list[int]]:
    """A reporter whose gap between writes is an hour (so only its burst can write) and a condition that flips
    `flaps` times, the burst's flips each waited for until written; returns the book versions accepted."""
    kube = FakeKube()
    r, book = reporter(tmp_path, kube)
    r.min_write_gap, r.debounce, r.write_burst = 3600.0, 0.0, 3
    accepted: list[int] = []

    async def main() -> None:
        task = asyncio.create_task(r.run())
        await asyncio.wait_for(r.accepted(0), 5)
        for i in range(flaps):
            status = Status.TRUE if i % 2 == 0 else Status.FALSE
            book.apply(Observation("kernel", NOW, (ConditionReport("KernelDeadlock", status, "TaskHung"),)))
            r.notify_changed()
            if i < r.write_burst - 1:  # the burst's writes: each awaited, however slow the machine
                await asyncio.wait_for(r.accepted(book.version), 5)
                accepted.append(book.version)
            else:
                await asyncio.sleep(0.01)
        await asyncio.sleep(0.3)  # room for a write the gap should hold back
        task.cancel()

    asyncio.run(asyncio.wait_for(main(), 30))
    return r, kube, book, accepted


def test_a_change_just_after_a_write_is_written_at_once_not_after_the_gap(tmp_path: Path) -> None:
    """The chain's first step: a kernel line arriving just after the agent's first status write was held back until
    a second after it (issue 43). The burst lets it out at once; the gap here is an hour."""
    _, kube, book, accepted = flapping_writes(tmp_path, 1)
    assert accepted == [book.version]
    assert [m for m, _, _ in kube.calls] == ["GET", "PATCH", "PATCH"]


def test_a_condition_flapping_on_every_observation_gets_only_the_burst_then_the_gap(tmp_path: Path) -> None:
    """Twenty flips in a row: the first write and two more (a burst of 3), then nothing until the gap passes."""
    r, kube, _, accepted = flapping_writes(tmp_path, 20)
    assert [m for m, _, _ in kube.calls].count("PATCH") == 3
    assert len(accepted) == 2 and r.written_version == accepted[-1]
