"""The condition metrics: a status gauge per type from the book, and problems counted once per problem."""

from __future__ import annotations

import datetime as dt

from prometheus_client import CollectorRegistry

from agent.model import ConditionReport, EventReport, Observation, Status
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook


def test_problems_are_counted_once_per_problem_not_once_per_observation() -> None:
    registry = CollectorRegistry()
    metrics, book = ConditionMetrics(registry, unmetered={}), ConditionBook({"kernel": ("KernelDeadlock",)})
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

    def observe(status: Status, *events: str) -> None:
        obs = Observation("kernel", at, (ConditionReport("KernelDeadlock", status, "TaskHung"),),
                          tuple(EventReport(e, "m") for e in events))
        was_true = {t for t, c in book.current.items() if c.status == Status.TRUE}
        if book.apply(obs):
            metrics.show(book)
        metrics.count(obs, was_true)

    def sample(name: str, labels: dict[str, str]) -> float | None:
        return registry.get_sample_value(name, labels)

    for _ in range(5):  # a poll five times a second keeps reporting the same True condition
        observe(Status.TRUE)
    observe(Status.TRUE, "OOMKilling")
    assert sample("nodemedic_agent_problems_total", {"type": "KernelDeadlock", "reason": "TaskHung"}) == 1
    assert sample("nodemedic_agent_problems_total", {"type": "", "reason": "OOMKilling"}) == 1
    assert sample("nodemedic_agent_condition_status", {"type": "KernelDeadlock", "status": "True"}) == 1
    observe(Status.FALSE)
    observe(Status.TRUE)  # a second episode is a second problem
    assert sample("nodemedic_agent_problems_total", {"type": "KernelDeadlock", "reason": "TaskHung"}) == 2
    observe(Status.FALSE)
    assert sample("nodemedic_agent_condition_status", {"type": "KernelDeadlock", "status": "True"}) == 0
    assert sample("nodemedic_agent_condition_status", {"type": "KernelDeadlock", "status": "False"}) == 1
