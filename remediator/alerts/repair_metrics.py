"""The repair ladders' metrics (docs/repair.md), part of the remediator's registry."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from nodemedic_common.repair_contract import RepairAction
from remediator.repair.decisions import RepairPlan


@dataclass(frozen=True)
class RepairMetrics:
    started: Counter
    finished: Counter
    seconds: Histogram
    needs_a_person: Gauge
    in_repair: Gauge
    halted: Gauge

    def show(self, r: RepairPlan) -> None:
        """The gauges of one plan's ladders."""
        self.in_repair.set(sum(1 for s in r.in_repair.values() if s.action != RepairAction.PERSON))
        self.needs_a_person.clear()
        for node in r.needs_a_person():
            self.needs_a_person.labels(node, r.in_repair[node].rule).set(1)
        self.halted.clear()
        for group in r.halted:
            self.halted.labels(group).set(1)


def create_repair_metrics(r: CollectorRegistry) -> RepairMetrics:
    return RepairMetrics(
        started=Counter("nodemedic_repair_steps_started_total", "Repair steps asked for (restart, reboot, replace, "
                        "person)", ["action"], registry=r),
        finished=Counter("nodemedic_repair_steps_finished_total",
                         "Repair steps that ended: repaired (the condition cleared and the node is Ready), persisted "
                         "(past its wait), failed (the agent answered Failed or Refused), skipped, by a person, ended",
                         ["action", "result"], registry=r),
        seconds=Histogram("nodemedic_repair_seconds",
                          "From a ladder's first step to the node repaired, by the step that repaired it",
                          ["action"], registry=r, buckets=(30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600)),
        needs_a_person=Gauge("nodemedic_repair_needs_a_person",
                             "1 for each node whose repair ladder handed it to a person", ["node", "rule"],
                             registry=r),
        in_repair=Gauge("nodemedic_repair_nodes", "Nodes with a repair ladder under way", registry=r),
        halted=Gauge("nodemedic_repair_halted",
                     "1 for each node group where more nodes are unhealthy than repair.maxUnhealthyPercent allows: "
                     "nothing in it is repaired", ["group"], registry=r),
    )
