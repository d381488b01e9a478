"""RemovePodsViolatingNodeTaints: evict pods that do not tolerate a NoSchedule taint of their node.

descheduler semantics (Ready nodes only, NoExecute never in scope — the kubelet's taint manager owns it,
excludedTaints/includedTaints as "key" or "key=value"), with one nodemedic default: when includedTaints is
not given, only the taints nodemedic's own evicting rules put on the node count, so a manual cordon
(node.kubernetes.io/unschedulable) or a human's taint never starts a mass eviction.
Plans only: the DefaultEvictor, node fit and limits are applied by the planner.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from remediator.model.plan import PlannedEviction
from remediator.model.records import Effect, NodeRecord, Taint
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.scheduling.tolerations import untolerated
from remediator.state.snapshot import Snapshot
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

NAME = "RemovePodsViolatingNodeTaints"
KIND = "deschedule"


def plan(snapshot: Snapshot, args: RemovePodsViolatingNodeTaintsArgs, gate: Gate) -> Wants:
    for c in candidates(snapshot, args, evict_taints=gate.view.evict_taints, planned_taints=gate.view.planned_taints):
        gate.admit(c)
    return NOTHING


def candidates(snapshot: Snapshot, args: RemovePodsViolatingNodeTaintsArgs, *,
               evict_taints: Mapping[str, Sequence[Taint]],
               planned_taints: Mapping[str, Sequence[Taint]]) -> list[PlannedEviction]:
    effects = {Effect.NO_SCHEDULE, Effect.PREFER_NO_SCHEDULE} if args.include_prefer_no_schedule \
        else {Effect.NO_SCHEDULE}
    out: list[PlannedEviction] = []
    for name in sorted(snapshot.nodes):
        node = snapshot.nodes[name]
        if not node.ready:
            continue
        taints = [t for t in _candidate_taints(node, args, evict_taints, planned_taints)
                  if t.effect in effects and not _listed(t, args.excluded_taints)]
        if not taints:
            continue
        for pod in sorted(snapshot.pods(name), key=lambda p: (p.namespace, p.name)):
            if not (pod.live and args.scope.selects(pod)):
                continue
            violated = untolerated(pod.tolerations, taints, effects)
            if violated:
                out.append(PlannedEviction(pod, NAME, f"untolerated taint {describe(violated[0])}"))
    return out


def describe(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


def _candidate_taints(node: NodeRecord, args: RemovePodsViolatingNodeTaintsArgs,
                      evict_taints: Mapping[str, Sequence[Taint]],
                      planned_taints: Mapping[str, Sequence[Taint]]) -> list[Taint]:
    if args.included_taints is None:
        return list(evict_taints.get(node.name, ()))
    present = {t.identity() for t in node.taints}
    every = list(node.taints) + [t for t in planned_taints.get(node.name, ()) if t.identity() not in present]
    return [t for t in every if _listed(t, args.included_taints)]


def _listed(t: Taint, entries: Sequence[str]) -> bool:
    """`key` matches any value; `key=value` is only compared when the taint has a value (descheduler's rule)."""
    return t.key in entries or (bool(t.value) and f"{t.key}={t.value}" in entries)
