"""Dry-run: what the remediator would do, logged once per action (and counted), never written to the cluster."""

from __future__ import annotations

import logging

from remediator.alerts.metrics import Metrics
from remediator.model.plan import Plan
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.plan_sections import DarkSection, RepairSection


class DryRunReport:
    def __init__(self, metrics: Metrics, log: logging.Logger) -> None:
        self.metrics, self.log = metrics, log
        self.seen: set[str] = set()

    def report(self, plan: Plan) -> None:
        doc = PlanAnswer.of(plan).to_json()
        actions: list[tuple[str, dict[str, object]]] = []
        taints_doc = doc["taints"]
        assert isinstance(taints_doc, dict)
        actions += [("taint", a) for a in taints_doc["add"]] + [("untaint", a) for a in taints_doc["remove"]]
        evictions = doc["evictions"]
        assert isinstance(evictions, list)
        actions += [("evict", a) for a in evictions]
        # A repair step: its id is new every cycle (it names the second it would start), so it is left out of the key.
        actions += [("repair", {k: v for k, v in s.to_json().items() if k != "id"})
                    for s in RepairSection.of(plan.repair).starts]
        # A dark node freed: its detail names how long it has been dark, a different text every cycle.
        dark = DarkSection.of(plan.dark).to_json()
        for kind, key in (("fence", "fence"), ("replace", "deleteNodeClaim"), ("unfence", "unfence")):
            entries = dark[key]
            assert isinstance(entries, list)
            actions += [(kind, {k: v for k, v in a.items() if k not in ("detail", "why")}) for a in entries]
        current: set[str] = set()
        for kind, action in actions:
            # The action, not its explanation: a cause says "for 1h0m5s" and changes every cycle.
            key = f"{kind}:{sorted((k, v) for k, v in action.items() if k not in ('cause', 'reason'))}"
            current.add(key)
            if key not in self.seen:
                self.metrics.dry_run_planned.labels(kind).inc()
                self.log.info("dry-run: would " + kind, extra={"dry_run": True, "action": action})
        self.seen = current  # what the plan no longer holds is forgotten (and reported again if it returns)
