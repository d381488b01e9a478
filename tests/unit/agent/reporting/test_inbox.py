"""The inbox while the API server is away at start-up: conditions coalesced and never dropped, Events bounded,
each dropped Event counted and logged."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random

import pytest
from prometheus_client import CollectorRegistry, Counter

from agent.model import ConditionReport, EventReport, Observation, Status
from agent.reporting.conditions import ConditionBook
from agent.reporting.inbox import Inbox

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
TYPES = {"kernel": ("KernelDeadlock", "XfsShutdown"), "fs": ("ReadonlyFilesystem",)}


def inbox(max_events: int = 1000) -> tuple[Inbox, CollectorRegistry]:
    registry = CollectorRegistry()
    suppressed = Counter("nodemedic_agent_events_suppressed_total", "t", ["reason"], registry=registry)
    return Inbox(suppressed=suppressed, log=logging.getLogger("inbox-test"), max_events=max_events), registry


def random_observation(rng: random.Random, i: int) -> Observation:
    check = rng.choice(sorted(TYPES))
    at = T0 + dt.timedelta(seconds=i)
    if rng.random() < 0.15:
        return Observation(check, at, error=f"failure {i}")
    reports = tuple(ConditionReport(t, rng.choice(list(Status)), f"R{rng.randint(0, 3)}", f"m{i}")
                    for t in TYPES[check] if rng.random() < 0.7)
    return Observation(check, at, conditions=reports, events=(EventReport("E", f"e{i}"),) * rng.randint(0, 1))


@pytest.mark.parametrize("seed", range(20))
def test_folding_what_the_inbox_hands_over_leaves_the_book_as_folding_every_observation(seed: int) -> None:
    rng = random.Random(seed)
    observations = [random_observation(rng, i) for i in range(rng.randint(1, 300))]
    one_by_one, coalesced = ConditionBook(TYPES), ConditionBook(TYPES)
    for obs in observations:
        one_by_one.apply(obs)
    box, _ = inbox()
    for obs in observations:
        box.put(obs)
    for obs in asyncio.run(box.take()):
        coalesced.apply(obs)
    assert [(c.type, c.status, c.reason, c.message) for c in coalesced.conditions()] == [
        (c.type, c.status, c.reason, c.message) for c in one_by_one.conditions()]


def test_a_long_outage_keeps_every_condition_and_counts_and_logs_each_dropped_event(
        caplog: pytest.LogCaptureFixture) -> None:
    box, registry = inbox(max_events=100)
    latest = ConditionReport("ReadonlyFilesystem", Status.TRUE, "FilesystemIsReadOnly", "ro")
    with caplog.at_level(logging.WARNING, logger="inbox-test"):
        box.put(Observation("fs", T0, conditions=(latest,)))  # the first, and only, report of this type
        for i in range(5000):  # then a kernel-log flood while the book waits
            box.put(Observation("kernel", T0, events=(EventReport("OOMKilling", f"killed {i}"),)))
        first_drop = [r for r in caplog.records if "events dropped" in r.getMessage()]
        assert len(first_drop) == 1, "the first drop is logged at once, not every drop"
        handed = asyncio.run(box.take())
    assert [c for obs in handed for c in obs.conditions] == [latest]
    events = [e.message for obs in handed for e in obs.events]
    assert events == [f"killed {i}" for i in range(4900, 5000)], "the newest Events are kept, in order"
    assert registry.get_sample_value("nodemedic_agent_events_suppressed_total", {"reason": "OOMKilling"}) == 4900
    summary = [r for r in caplog.records if getattr(r, "total", None) == 4900]
    assert len(summary) == 1 and summary[0].dropped == {"OOMKilling": 4900}


def test_nothing_dropped_nothing_counted() -> None:
    box, registry = inbox(max_events=10)
    for i in range(10):
        box.put(Observation("kernel", T0, events=(EventReport("TaskHung", f"h{i}"),)))
    assert len(asyncio.run(box.take())) == 10
    assert registry.get_sample_value("nodemedic_agent_events_suppressed_total", {"reason": "TaskHung"}) is None


def test_each_coalesced_condition_keeps_the_time_it_was_observed() -> None:
    box, _ = inbox()
    early, late = T0, T0 + dt.timedelta(minutes=5)
    box.put(Observation("kernel", early, conditions=(ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung"),)))
    box.put(Observation("kernel", late, conditions=(ConditionReport("XfsShutdown", Status.TRUE, "Shutdown"),)))
    book = ConditionBook(TYPES)
    for obs in asyncio.run(box.take()):
        book.apply(obs)
    assert {c.type: c.last_transition for c in book.conditions()} == {"KernelDeadlock": early, "XfsShutdown": late}
