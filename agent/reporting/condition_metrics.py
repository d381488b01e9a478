"""The conditions as Prometheus metrics: a status gauge per condition type, and a counter of problems.

NPD monitors with `metricsReporting: false` stay out of both (`unmetered`: check name -> its condition types).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

from agent.model import Observation, Status
from agent.reporting.conditions import ConditionBook


class ConditionMetrics:
    def __init__(self, registry: CollectorRegistry, *, unmetered: Mapping[str, Iterable[str]]) -> None:
        self.unmetered_checks = set(unmetered)
        self.unmetered_types = {t for types in unmetered.values() for t in types}
        self.status = Gauge("nodemedic_agent_condition_status", "1 for the current status of each condition type",
                            ["type", "status"], registry=registry)
        self.problems = Counter("nodemedic_agent_problems_total",
                                "Problems seen: a condition turning True (by type and reason) or an event (by reason)",
                                ["type", "reason"], registry=registry)

    def show(self, book: ConditionBook) -> None:
        """Condition status gauges from the book: called when it changes, not on every observation (the kmsg
        monitor observes five times a second, and a node may carry dozens of condition types)."""
        for c in book.conditions():
            if c.type in self.unmetered_types:
                continue
            for s in Status:
                self.status.labels(c.type, str(s)).set(1 if c.status == s else 0)

    def count(self, obs: Observation, was_true: set[str]) -> None:
        """One per problem, not per observation: a condition counts when it turns True, an event each time."""
        if obs.check in self.unmetered_checks:
            return
        for rep in obs.conditions:
            if rep.status == Status.TRUE and rep.type not in was_true:
                self.problems.labels(rep.type, rep.reason).inc()
        for ev in obs.events:
            self.problems.labels("", ev.reason).inc()
