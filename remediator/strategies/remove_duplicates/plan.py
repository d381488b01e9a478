"""RemoveDuplicates: a node holding several replicas of one owner gives some up to nodes that can take them.

descheduler's algorithm (docs/balance-strategies.md lists each difference and why):
1. duplicates are the pods in scope with the same namespace, owners and container images, on one Ready node;
   pods with no owner or an owner of an `excludeOwnerKinds` kind are ignored;
2. per set of duplicates, the target nodes are the nodes whose taints (NoSchedule, NoExecute) the replicas
   tolerate and whose labels their node selection accepts; fewer than two: nothing to do;
3. `upper = ceil(replicas / target nodes)`: a node holding more than `upper` of them gives up the rest.
nodemedic's changes: every live replica counts towards `upper`, not only the evictable ones, and only evictable
ones move (`dup-count`); cordoned nodes and nodes the cycle keeps free are no targets (`dup-targets`); each replica
moves only to a target that fits it and ends with fewer of its replicas than the node it leaves, and at most
`upper` (`dup-dest`); the cycle gate refuses a move that makes the workload's zone spread worse (`dup-zones`),
and applies PDBs, the loop guard and the limits.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from functools import partial

from remediator.model.plan import PlannedEviction
from remediator.model.records import Effect, NodeRecord, PodRecord
from remediator.planning.gate import CYCLE, NODE, Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.scheduling.selectors import pod_fits_node_selection
from remediator.scheduling.tolerations import untolerated
from remediator.scheduling.usage import eviction_order
from remediator.state.snapshot import Snapshot
from remediator.strategies.remove_duplicates.args import RemoveDuplicatesArgs
from remediator.strategies.remove_duplicates.kept import KeptTargets

NAME = "RemoveDuplicates"
KIND = "balance"

_BLOCKING = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)
# namespace, owners (kind, name), images: what makes two pods duplicates of each other
DuplicateKey = tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]
# tolerations, node selector, required node affinity: what decides which nodes take a replica
Shape = tuple[object, ...]


def plan(snapshot: Snapshot, args: RemoveDuplicatesArgs, gate: Gate) -> Wants:
    if gate.view.exhausted():
        return NOTHING
    kept = snapshot.derived.kept_by(NAME, KeptTargets).run_on(
        {n: rec for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting})
    # Replicas of most workloads share a few shapes (tolerations, node selection): their targets, and the order in
    # which node fit tries them, are computed once per set of shapes.
    shape_fit: dict[Shape, list[str]] = {}
    by_shapes: dict[frozenset[Shape], tuple[list[str], tuple[str, ...]]] = {}
    for key, on_node in sorted(_duplicates(kept.stacked(snapshot.pods_by_owner), args, kept.nodes,
                                           gate.view.moved_to).items()):
        shapes = frozenset(_shape(p) for pods in on_node.values() for p in pods)
        if shapes not in by_shapes:
            targets = _target_nodes(kept, on_node, gate.view.excluded, shape_fit)
            by_shapes[shapes] = targets, gate.view.by_room(t for t in targets if t not in gate.view.excluded)
        targets, destinations = by_shapes[shapes]
        if len(targets) < 2:
            continue
        upper = math.ceil(sum(len(pods) for pods in on_node.values()) / len(targets))
        count = Counter({n: len(pods) for n, pods in on_node.items()})
        for source in sorted(on_node, key=lambda n: (-count[n], n)):
            if count[source] <= upper:
                continue
            if _relieve(gate, key, source, on_node[source], count=count, upper=upper,
                        destinations=destinations, targets=len(targets)) == CYCLE:
                return NOTHING
    return NOTHING


def _duplicates(stacked: list[list[PodRecord]], args: RemoveDuplicatesArgs, ready: Mapping[str, NodeRecord],
                moved_to: Mapping[str, str | None]) -> dict[DuplicateKey, dict[str, list[PodRecord]]]:
    """Duplicate key -> Ready node -> its live replicas there, for the keys with two or more on one node. Owner by
    owner: only the pods of an owner with two pods on one node (`stacked`, KeptTargets.stacked) are looked at
    closely (a 150,000-pod cluster has few)."""
    found: dict[DuplicateKey, dict[str, list[PodRecord]]] = {}
    for group in stacked:
        for pod in group:
            node = moved_to.get(pod.uid, pod.node_name)  # where an earlier strategy moves it; None: gone
            if node is None or node not in ready or not pod.live:
                continue
            key = _duplicate_key(pod, args)
            if key is None:
                continue
            on_node = found.setdefault(key, {})
            pods = on_node.setdefault(node, [])
            if len(pod.owners) == 1 or all(p is not pod for p in pods):  # a pod of two owners is in both groups
                pods.append(pod)
    return {key: on_node for key, on_node in found.items() if any(len(pods) > 1 for pods in on_node.values())}


def _relieve(gate: Gate, key: DuplicateKey, source: str, pods: list[PodRecord], *, count: Counter[str],
             upper: int, destinations: tuple[str, ...], targets: int) -> str | None:
    """Move replicas off `source` until it holds `upper`; CYCLE when the cycle's limits are used up. (Node fit
    never sends a pod to its own node.)"""

    def fewer_there(pod: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
        there = count[node.name] + 1
        if there > upper or there >= count[source]:
            return f"would hold {there} replicas there"
        return None

    owners = ", ".join(f"{kind}/{name}" for kind, name in key[1])
    if gate.view.hold(source) is not None:
        return None
    # Every live replica counts (the scheduler sees them all); only the evictable ones are tried (dup-count).
    for pod in eviction_order(p for p in pods if gate.view.protection(p) is None):
        if count[source] <= upper:
            break
        reason = (f"{count[source]} replicas of {owners} on {source}, more than {upper} "
                  f"(per node over the {targets} nodes that can take them)")
        # fewer_there reads nothing of the pod, and its counts change only with a planned move
        outcome = gate.move(PlannedEviction(pod, NAME, reason), destinations, accept=fewer_there, alike=())
        if outcome.evicted and outcome.destination is not None:
            count[source] -= 1
            count[outcome.destination] += 1
        elif outcome.stop in (CYCLE, NODE):
            return outcome.stop
    return None


def _duplicate_key(pod: PodRecord, args: RemoveDuplicatesArgs) -> DuplicateKey | None:
    owners = pod.owners
    if len(owners) == 1:  # nearly always: skip the sort
        if owners[0].kind in args.exclude_owner_kinds:
            return None
        refs: tuple[tuple[str, str], ...] = ((owners[0].kind, owners[0].name),)
    else:
        if any(o.kind in args.exclude_owner_kinds for o in owners):
            return None
        refs = tuple(sorted((o.kind, o.name) for o in owners))
    if not args.scope.selects(pod):
        return None
    return pod.namespace, refs, pod.images


def _shape(pod: PodRecord) -> Shape:
    return pod.tolerations, tuple(sorted(pod.node_selector.items())), pod.required_node_affinity


def _target_nodes(kept: KeptTargets, on_node: Mapping[str, list[PodRecord]], exclude: AbstractSet[str],
                  shape_fit: dict[Shape, list[str]]) -> list[str]:
    """The nodes that can take some replica: one check per distinct (tolerations, node selection) of the replicas,
    a shape only counting when more than one node takes it (descheduler's getTargetNodes)."""
    shapes = {_shape(p): p for pods in on_node.values() for p in pods}
    targets: set[str] = set()
    for shape, pod in shapes.items():
        if shape not in shape_fit:
            taking = kept.taking(shape, partial(_takes, pod=pod))
            shape_fit[shape] = [n for n in taking if n not in exclude] if exclude else taking
        if len(shape_fit[shape]) > 1:
            targets.update(shape_fit[shape])
    return sorted(targets)


def _takes(node: NodeRecord, *, pod: PodRecord) -> bool:
    return (not node.unschedulable and not untolerated(pod.tolerations, node.taints, _BLOCKING)
            and pod_fits_node_selection(pod, node))
