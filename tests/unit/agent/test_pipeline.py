"""The pipeline step: observations wait for the Node's conditions, then reach the book, the reporter (conditions
and Events) and the metrics. A fake REST client stands for the API server; nothing sleeps."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agent.model import ConditionReport, EventReport, Observation, Status
from agent.pipeline import Pipeline, still_true
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook
from agent.reporting.inbox import Inbox
from agent.reporting.reporter import Reporter, StateFile

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
LOG = logging.getLogger("test.pipeline")


class FakeKube:
    """The Node carries `conditions`; an Event POST waits forever when `posts_hang`."""

    def __init__(self, conditions: list[dict[str, str]] | None = None, *, posts_hang: bool = False) -> None:
        self.conditions = conditions or []
        self.posts_hang = posts_hang
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path, body))
        if method == "GET":
            return {"status": {"conditions": self.conditions}}
        if method == "POST" and self.posts_hang:
            await asyncio.Event().wait()
        return {}


class World:
    def __init__(self, tmp_path: Path, kube: FakeKube | None = None) -> None:
        self.kube = kube or FakeKube()
        self.registry = CollectorRegistry()
        self.book = ConditionBook({"kernel": ("KernelDeadlock",)})
        self.reporter = Reporter(self.kube, "n1", self.book, state=StateFile(tmp_path / "state.json"),  # type: ignore[arg-type]
                                 registry=self.registry, log=LOG)
        self.inbox = Inbox(suppressed=self.reporter.suppressed, log=LOG)
        self.pipeline = Pipeline(inbox=self.inbox, book=self.book, reporter=self.reporter,
                                 metrics=ConditionMetrics(self.registry, unmetered={}), log=LOG)

    def sample(self, name: str, **labels: str) -> float | None:
        return self.registry.get_sample_value(name, labels)


def deadlock(status: Status, *events: str) -> Observation:
    return Observation("kernel", AT, (ConditionReport("KernelDeadlock", status, "TaskHung", "m"),),
                       tuple(EventReport(e, "m") for e in events))


def run(coroutine: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 10))


async def settle() -> None:
    """Let every task that can run, run."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_nothing_is_folded_in_before_the_reporter_has_read_the_node(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        task = asyncio.create_task(w.pipeline.run())
        w.inbox.put(deadlock(Status.TRUE))
        await settle()
        assert w.book.current == {} and not w.reporter.changed.is_set()
        await w.reporter.seed()
        await settle()
        assert w.book.current["KernelDeadlock"].status is Status.TRUE and w.reporter.changed.is_set()
        task.cancel()

    run(main())


def test_once_seeded_the_gauges_show_the_conditions_adopted_from_the_node(tmp_path: Path) -> None:
    on_node = {"type": "KernelDeadlock", "status": "True", "reason": "TaskHung",
               "lastTransitionTime": "2026-01-01T00:00:00Z"}
    w = World(tmp_path, FakeKube([on_node]))

    async def main() -> None:
        task = asyncio.create_task(w.pipeline.run())
        await w.reporter.seed()
        await settle()
        task.cancel()

    run(main())
    assert w.sample("nodemedic_agent_condition_status", type="KernelDeadlock", status="True") == 1


def test_an_observation_that_changes_a_condition_wakes_the_reporter_and_reaches_the_api(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        w.pipeline.fold(deadlock(Status.TRUE))
        assert w.reporter.changed.is_set()
        await w.reporter.write_conditions()

    run(main())
    method, path, body = w.kube.calls[-1]
    assert (method, path) == ("PATCH", "/api/v1/nodes/n1/status")
    assert [(c["type"], c["status"], c["reason"]) for c in body["status"]["conditions"]] == [
        ("KernelDeadlock", "True", "TaskHung")]


def test_an_observation_that_changes_nothing_leaves_the_reporter_asleep(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.pipeline.fold(deadlock(Status.TRUE))
    w.reporter.changed.clear()

    w.pipeline.fold(deadlock(Status.TRUE))

    assert not w.reporter.changed.is_set()


def test_a_condition_reported_true_again_and_again_is_one_problem_and_its_gauge_follows_the_book(
        tmp_path: Path) -> None:
    w = World(tmp_path)
    for _ in range(5):  # a poll five times a second keeps reporting the same True condition
        w.pipeline.fold(deadlock(Status.TRUE))
    assert w.sample("nodemedic_agent_problems_total", type="KernelDeadlock", reason="TaskHung") == 1
    assert w.sample("nodemedic_agent_condition_status", type="KernelDeadlock", status="True") == 1

    w.pipeline.fold(deadlock(Status.FALSE))
    w.pipeline.fold(deadlock(Status.TRUE))  # a second episode is a second problem

    assert w.sample("nodemedic_agent_problems_total", type="KernelDeadlock", reason="TaskHung") == 2


def test_still_true_names_only_the_types_the_book_already_holds_true(tmp_path: Path) -> None:
    w = World(tmp_path)
    assert still_true(w.book, deadlock(Status.TRUE)) == set()
    w.book.apply(deadlock(Status.TRUE))
    assert still_true(w.book, deadlock(Status.TRUE)) == {"KernelDeadlock"}
    assert still_true(w.book, deadlock(Status.FALSE)) == set()


def test_each_event_is_sent_by_the_reporter_with_its_check_as_the_source_and_counted(tmp_path: Path) -> None:
    w = World(tmp_path)

    async def main() -> None:
        w.pipeline.fold(deadlock(Status.FALSE, "OOMKilling"))
        await asyncio.gather(*w.pipeline.sending)
        await settle()

    run(main())
    (post,) = [body for method, _, body in w.kube.calls if method == "POST"]
    assert (post["reason"], post["source"]["component"]) == ("OOMKilling", "nodemedic-agent/kernel")
    assert w.sample("nodemedic_agent_problems_total", type="", reason="OOMKilling") == 1
    assert w.pipeline.sending == set()


def test_closing_cancels_the_events_still_being_sent(tmp_path: Path) -> None:
    w = World(tmp_path, FakeKube(posts_hang=True))

    async def main() -> None:
        w.pipeline.fold(deadlock(Status.FALSE, "OOMKilling"))
        await settle()
        (sending,) = w.pipeline.sending
        await w.pipeline.close()
        assert sending.cancelled()
        await settle()
        assert w.pipeline.sending == set()

    run(main())


def test_seeded_gives_a_condition_as_the_node_carried_it_once_read(tmp_path: Path) -> None:
    on_node = {"type": "KernelDeadlock", "status": "True", "reason": "TaskHung", "message": "m",
               "lastTransitionTime": "2026-01-01T00:00:00Z"}
    w = World(tmp_path, FakeKube([on_node]))

    async def main() -> None:
        seeded = asyncio.create_task(w.pipeline.seeded("KernelDeadlock"))
        await settle()
        assert not seeded.done(), "not before the Node was read"
        await w.reporter.seed()
        assert await seeded == ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "m")
        assert await w.pipeline.seeded("Unowned") is None

    run(main())


def test_an_answer_is_folded_in_at_once_and_returns_once_the_api_server_accepted_it(tmp_path: Path) -> None:
    w = World(tmp_path)
    w.reporter.min_write_gap = w.reporter.debounce = 0.0

    async def main() -> None:
        reporting = asyncio.create_task(w.reporter.run())
        answering = asyncio.create_task(w.pipeline.answer(deadlock(Status.TRUE, "OOMKilling")))
        await settle()
        assert w.book.current["KernelDeadlock"].status is Status.TRUE  # folded in, not through the inbox
        await asyncio.wait_for(answering, 5)
        assert w.reporter.written_version >= w.book.version
        await w.pipeline.close()
        reporting.cancel()

    run(main())
    patches = [b for m, _, b in w.kube.calls if m == "PATCH"]
    assert patches[-1]["status"]["conditions"][0]["status"] == "True"
