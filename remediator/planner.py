"""One planning cycle: conditions → taints → strategy candidates → DefaultEvictor → limits → node fit → Plan.

Pure: it reads one Snapshot and the policy and returns a Plan; the only state it carries between cycles is
`PlannerMemory`, which the controller owns. Nothing here writes to the cluster.
Cost is linear in nodes + pods, plus one node-fit search (linear in nodes) per pod the limits let through:
per-node requests are summed once per cycle, and a pod shape that fitted nowhere is not searched again.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from remediator.defaultevictor import protection
from remediator.limits import LimitState
from remediator.model import Plan, PlannedEviction, PodRecord, Protected, Snapshot, Taint
from remediator.nodefit import PODS, find_destination, pod_request_summary
from remediator.podaffinity import PodAffinityIndex
from remediator.policy import Policy
from remediator.strategies import KINDS, lookup
from remediator.taints import plan_taints, safety_hold
from remediator.topologyspread import SpreadIndex


@dataclass
class PlannerMemory:
    clear_since: dict[tuple[str, str], dt.datetime] = field(default_factory=dict)
    owner_last_eviction: dict[str, dt.datetime] = field(default_factory=dict)  # the controller records evictions here


def plan_cycle(snapshot: Snapshot, policy: Policy, memory: PlannerMemory) -> Plan:
    taints = plan_taints(snapshot, policy, memory.clear_since)
    plan = Plan(taints_add=taints.adds, taints_remove=taints.removes, held=taints.held,
                breaker_open=taints.breaker_open, tainted_limit=taints.tainted_limit, next_check=taints.next_check)
    if policy.safety.paused:
        return plan  # a pause stops every eviction, not only new taints
    planned_taints: dict[str, list[Taint]] = {}
    for c in taints.adds:
        planned_taints.setdefault(c.node, []).append(c.taint)

    candidates = _candidates(snapshot, policy, evict_taints=taints.evict_taints, planned_taints=planned_taints)
    limits = LimitState(policy.limits, snapshot.now, dict(memory.owner_last_eviction))
    # No destination: nodes being drained or tainted, and nodes whose problem a safety rail only held back.
    exclude = set(taints.evict_taints) | set(planned_taints) | {h.node for h in taints.held}
    fit = _NodeFit(snapshot, exclude=exclude, planned_taints=planned_taints)
    for c in candidates:
        node = snapshot.nodes.get(c.pod.node_name)
        why = safety_hold(node, policy.safety) if node is not None else None
        if why is None:
            why = protection(c.pod, snapshot, policy.evictor)
        if why is not None:
            plan.protected.append(Protected(c.pod, why))
            continue
        # Limits before node fit: a deferred pod neither pays for a node search nor holds room elsewhere,
        # and a pod with nowhere to go does not use up a limit.
        why = limits.refusal(c)
        if why is not None:
            plan.deferred.append(Protected(c.pod, why))
            continue
        if policy.evictor.node_fit:
            why = fit.place(c.pod)
            if why is not None:
                plan.protected.append(Protected(c.pod, "no other node fits: " + why))
                continue
        limits.take(c)
        plan.evictions.append(c)
    return plan


def _candidates(snapshot: Snapshot, policy: Policy, *, evict_taints: Mapping[str, Sequence[Taint]],
                planned_taints: Mapping[str, Sequence[Taint]]) -> list[PlannedEviction]:
    """Every configured strategy's candidates, deschedule kind first (stable within a kind); first claim wins."""
    configured = [(lookup(s.name), s.args) for s in policy.strategies]
    configured.sort(key=lambda sa: KINDS.index(sa[0].kind))
    seen: set[str] = set()
    out: list[PlannedEviction] = []
    for strategy, args in configured:
        for c in strategy.plan(snapshot, args, evict_taints=evict_taints, planned_taints=planned_taints):
            if c.pod.key not in seen:
                seen.add(c.pod.key)
                out.append(c)
    return out


@dataclass
class _NodeFit:
    """Destinations for this cycle's moves, reserving the room each planned move will take."""

    snapshot: Snapshot
    exclude: set[str]
    planned_taints: Mapping[str, Sequence[Taint]]
    reserved: dict[str, dict[str, int]] = field(default_factory=dict)
    requested: dict[str, dict[str, int]] | None = None  # summed once, on the first search
    pod_affinity: PodAffinityIndex | None = None  # built on the first search
    spread: SpreadIndex | None = None  # likewise
    # Reservations only grow within a cycle, so a pod shape that fitted nowhere fits nowhere later either.
    no_fit: dict[tuple[object, ...], str] = field(default_factory=dict)

    def place(self, pod: PodRecord) -> str | None:
        """Reserve room for `pod` on a destination; or why there is none."""
        # Pod (anti-)affinity and spread make the pod's namespace and labels part of its shape. A later move could
        # satisfy an affinity term or a skew that failed earlier; the cached refusal then errs towards not evicting.
        shape = (pod.node_name, pod.tolerations, tuple(sorted(pod.node_selector.items())),
                 pod.required_node_affinity, tuple(sorted(pod.requests.items())), pod.namespace,
                 tuple(sorted(pod.labels.items())), pod.required_anti_affinity, pod.required_affinity,
                 pod.hard_spread)
        if shape in self.no_fit:
            return self.no_fit[shape]
        if self.requested is None:
            self.requested = {name: pod_request_summary(self.snapshot.pods(name)) for name in self.snapshot.nodes}
        if self.pod_affinity is None:
            self.pod_affinity, self.spread = PodAffinityIndex(self.snapshot), SpreadIndex(self.snapshot)
        result = find_destination(pod, self.snapshot, exclude=self.exclude, planned_taints=self.planned_taints,
                                  reserved=self.reserved, requested=self.requested, pod_affinity=self.pod_affinity,
                                  spread=self.spread)
        if result.node is None:
            self.no_fit[shape] = result.reason
            return result.reason
        self.pod_affinity.add(pod, result.node)
        if self.spread is not None:
            self.spread.add(pod, result.node)
        room = self.reserved.setdefault(result.node, {})
        room[PODS] = room.get(PODS, 0) + 1
        for resource, quantity in pod.requests.items():
            room[resource] = room.get(resource, 0) + quantity
        return None
