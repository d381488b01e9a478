"""Dry-run: what the remediator would do, logged once per action (and counted), never written to the cluster."""

from __future__ import annotations

import logging

from remediator.alerts.metrics import Metrics
from remediator.model.plan import Plan
from remediator.read_side.plan_rows import EvictionRow, TaintRow
from remediator.read_side.plan_sections import FreeingRow, RepairStartRow, UnfenceRow


class DryRunReport:
    def __init__(self, metrics: Metrics, log: logging.Logger) -> None:
        self.metrics, self.log = metrics, log
        self.seen: set[str] = set()

    def report(self, plan: Plan) -> None:
        # Each action as /plan writes it (its row's JSON), built from the plan's items only.
        actions: list[tuple[str, dict[str, object]]] = [
            *(("taint", TaintRow.of(c).to_json()) for c in plan.taints_add),
            *(("untaint", TaintRow.of(c).to_json()) for c in plan.taints_remove),
            *(("evict", EvictionRow.of(e).to_json()) for e in plan.evictions),
            # A repair step: its id is new every cycle (it names the second it would start): left out of the key.
            *(("repair", {k: v for k, v in RepairStartRow.of(s).to_json().items() if k != "id"})
              for s in plan.repair.starts),
        ]
        # A dark node freed: its detail names how long it has been dark, a different text every cycle.
        dark = [*(("fence", FreeingRow.of(f).to_json("evidence")) for f in plan.dark.fences),
                *(("replace", FreeingRow.of(c).to_json("nodeClaim")) for c in plan.dark.claim_deletes),
                *(("unfence", UnfenceRow.of(u).to_json()) for u in plan.dark.unfences)]
        actions += [(kind, {k: v for k, v in a.items() if k not in ("detail", "why")}) for kind, a in dark]
        current: set[str] = set()
        for kind, action in actions:
            # The action, not its explanation: a cause says "for 1h0m5s" and changes every cycle.
            key = f"{kind}:{sorted((k, v) for k, v in action.items() if k not in ('cause', 'reason'))}"
            current.add(key)
            if key not in self.seen:
                self.metrics.dry_run_planned.labels(kind).inc()
                self.log.info("dry-run: would " + kind, extra={"dry_run": True, "action": action})
        self.seen = current  # what the plan no longer holds is forgotten (and reported again if it returns)
