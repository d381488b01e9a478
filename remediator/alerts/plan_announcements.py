"""What a plan says that people should hear about once, not every cycle: taints held back by a rail or the breaker,
the breaker tripping, what the strategies' reports found on nodes, workloads crossing the zone-exposure threshold,
and workloads the scheduler keeps putting back.

A plan is recomputed every cycle and says the same things again; this keeps what was announced, so a condition
that flaps under an open breaker raises one Event and one notification, not one per flap.
"""

from __future__ import annotations

from collections.abc import Callable

from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.metrics import Metrics
from remediator.alerts.zone_exposure_gauges import ZoneExposureGauges
from remediator.model.plan import HoldReason, Plan
from remediator.repair.dark_decisions import Seen

# Seconds a held taint is remembered after it was last held: one that comes back within this is not announced again
# (a condition flapping under an open breaker would otherwise raise an Event and a notification at every flap).
HELD_MEMORY = 600.0


class PlanAnnouncements:
    def __init__(self, alerts: Alerts, metrics: Metrics, monotonic: Callable[[], float]) -> None:
        self.alerts, self.metrics, self.monotonic = alerts, metrics, monotonic
        self.held_seen: dict[tuple[str, str, HoldReason], float] = {}  # (node, taint, reason) -> when last held
        self.breaker_was_open = False
        self.notices_seen: set[tuple[str, tuple[str, ...]]] = set()  # (strategy, notice key) of the reports' notices
        self.exposure_gauges = ZoneExposureGauges(metrics)
        self.exposed: set[tuple[str, str]] = set()  # (namespace, workload) below the threshold, announced
        self.loops_seen: set[str] = set()  # owner uids of scheduler loops announced
        self.dark_seen: set[tuple[str, str]] = set()  # (node, reason) of the dark nodes announced

    async def held(self, plan: Plan) -> None:
        now = self.monotonic()
        for key in [k for k, t in self.held_seen.items() if now - t >= HELD_MEMORY]:
            del self.held_seen[key]
        for h in plan.held:
            if h.reason is HoldReason.UNTAINT_PENDING:
                continue  # one cycle long: the next plan admits it or holds it by the breaker, and that is news
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

    async def notices(self, plan: Plan, *, write: bool) -> None:
        """What the strategies' reports found on nodes: one Event when a notice first appears, when `write` (not in
        dry-run, which writes nothing)."""
        current = {(strategy, n.key): n for strategy, report in plan.reports.items() for n in report.notices()}
        for key, n in sorted(current.items()):
            if key not in self.notices_seen and write:
                await self.alerts.node(n.node, kind=n.kind, type_="Warning", reason=n.reason, message=n.message,
                                       details=dict(n.details))
        self.notices_seen = set(current)

    async def zone_exposure(self, plan: Plan, *, write: bool, max_series: int) -> None:
        """The exposure gauges of the exposed workloads, at most `max_series` of them (dry-run too), and an Event on
        the workload when it falls below the policy's share (Warning) or is back above it (Normal), when `write`."""
        current = {(z.namespace, z.workload): z for z in plan.zone_exposure}
        below = {key: z for key, z in current.items() if z.exposed(plan.min_surviving_share)}
        self.exposure_gauges.show(below, max_series)
        exposed = set(below)
        for key in sorted(exposed - self.exposed) if write else ():
            z = current[key]
            await self._on_workload(z.namespace, z.workload, type_="Warning", reason="NodemedicZoneExposure",
                                    message=f"below {plan.min_surviving_share:.0%}: {z.describe()}",
                                    kind=AlertKind.ZONE_EXPOSURE)
        for key in sorted(self.exposed - exposed) if write else ():
            z_now = current.get(key)
            share = f"{z_now.surviving:.0%}" if z_now is not None else "no replicas left to lose"
            await self._on_workload(*key, type_="Normal", reason="NodemedicZoneExposureCleared",
                                    message=f"{share} of its replicas survive the loss of its worst zone now "
                                            f"(threshold {plan.min_surviving_share:.0%})", kind=None)
        self.exposed = exposed if write else self.exposed

    async def scheduler_loops(self, plan: Plan, *, write: bool) -> None:
        """A gauge of the workloads held for a scheduler loop, and a counter and a Warning Event on each new one."""
        self.metrics.scheduler_loop_held.set(len(plan.scheduler_loops))
        current = {loop.owner_uid: loop for loop in plan.scheduler_loops}
        for uid in sorted(set(current) - self.loops_seen):
            loop = current[uid]
            self.metrics.scheduler_loops.inc()
            if write:
                await self._on_workload(loop.namespace, loop.owner, type_="Warning",
                                        reason="NodemedicSchedulerDisagrees", message=loop.describe(),
                                        kind=AlertKind.SCHEDULER_LOOP)
        self.loops_seen = set(current)

    async def dark_nodes(self, plan: Plan, *, write: bool) -> None:
        """The silent-node gauges (dry-run too), and one Warning Event on each dark node whose pods stay for want of
        evidence or because too many nodes of its group went dark at once, when `write`."""
        d, m = plan.dark, self.metrics.dark
        for seen in Seen:
            m.nodes.labels(str(seen)).set(d.count(seen))
        waiting = {n.node: n for n in d.nodes.values() if n.needs_evidence}
        m.needs_evidence.clear()
        for node in waiting:
            m.needs_evidence.labels(node).set(1)
        m.halted.clear()
        for group in d.halted:
            m.halted.labels(group).set(1)
        # Keyed by node and reason: a node waiting for evidence that a partition then holds is told again.
        told = {(n.node, "NodemedicManyNodesDark" if n.halted else "NodemedicDarkNode"): n
                for n in d.nodes.values() if n.needs_evidence or n.halted}
        for node, reason in sorted(set(told) - self.dark_seen) if write else ():
            await self.alerts.node(node, kind=AlertKind.DARK_NODE, type_="Warning", reason=reason,
                                   message=told[(node, reason)].why, details={})
        self.dark_seen = set(told) if write else self.dark_seen

    async def _on_workload(self, namespace: str, workload: str, *, type_: str, reason: str, message: str,
                           kind: AlertKind | None) -> None:
        owner_kind, _, name = workload.partition("/")
        self.alerts.log.info(message, extra={"event": reason, "namespace": namespace, "workload": workload})
        await self.alerts.object(namespace=namespace, type_=type_, reason=reason, message=message, kind=kind,
                                 involved={"kind": owner_kind, "name": name, "namespace": namespace,
                                           "apiVersion": "v1" if owner_kind == "ReplicationController" else "apps/v1"})
