"""What a plan says that people should hear about once, not every cycle: taints held back by a rail or the breaker,
the breaker tripping, and nodes holding a workload's only restarting pods.

A plan is recomputed every cycle and says the same things again; this keeps what was announced, so a condition
that flaps under an open breaker raises one Event and one notification, not one per flap.
"""

from __future__ import annotations

from collections.abc import Callable

from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.metrics import Metrics
from remediator.model import HoldReason, Plan

# Seconds a held taint is remembered after it was last held: one that comes back within this is not announced again
# (a condition flapping under an open breaker would otherwise raise an Event and a notification at every flap).
HELD_MEMORY = 600.0


class PlanAnnouncements:
    def __init__(self, alerts: Alerts, metrics: Metrics, monotonic: Callable[[], float]) -> None:
        self.alerts, self.metrics, self.monotonic = alerts, metrics, monotonic
        self.held_seen: dict[tuple[str, str, HoldReason], float] = {}  # (node, taint, reason) -> when last held
        self.breaker_was_open = False
        self.crash_loops_seen: set[tuple[str, str, str]] = set()  # (node, namespace, owner) announced and in the gauge

    async def held(self, plan: Plan) -> None:
        now = self.monotonic()
        for key in [k for k, t in self.held_seen.items() if now - t >= HELD_MEMORY]:
            del self.held_seen[key]
        for h in plan.held:
            key = (h.node, h.taint.key, h.reason)
            announced = key in self.held_seen
            self.held_seen[key] = now
            if announced:
                continue
            self.metrics.held.labels(str(h.reason)).inc()
            breaker = h.reason is HoldReason.CIRCUIT_BREAKER
            await self.alerts.node(h.node, kind=AlertKind.BREAKER_OPEN if breaker else AlertKind.HELD,
                                   type_="Warning",
                                   reason="NodemedicCircuitBreakerOpen" if breaker else "NodemedicHeld",
                                   message=f"not tainting {h.taint.key}: {h.why}",
                                   details={"rule": ",".join(h.rules)})
        if plan.breaker_open and not self.breaker_was_open:
            self.metrics.breaker_trips.inc()
        self.breaker_was_open = plan.breaker_open

    async def crash_loops(self, plan: Plan, *, write: bool) -> None:
        """A node holding a workload's only restarting pods: a gauge while it lasts (dry-run too: it is an
        observation), and one Event when it starts when `write` (not in dry-run, which writes nothing)."""
        current = {(c.node, c.namespace, c.owner): c for c in plan.crash_loop_nodes}
        for key in self.crash_loops_seen - set(current):
            self.metrics.crash_loop_node.remove(*key)
        for key, c in sorted(current.items()):
            self.metrics.crash_loop_node.labels(*key).set(len(c.restarting))
            if key not in self.crash_loops_seen and write:
                await self.alerts.node(c.node, kind=AlertKind.CRASH_LOOP_NODE, type_="Warning",
                                       reason="NodemedicCrashLoopNode", message=c.describe(),
                                       details={"namespace": c.namespace, "owner": c.owner,
                                                "pods": ",".join(c.restarting)})
        self.crash_loops_seen = set(current)
