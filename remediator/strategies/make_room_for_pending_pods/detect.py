"""Which pending pods are pending because free room is split across nodes, not because it is missing.

A pod qualifies when the scheduler gave up on it for resources (PodScheduled=False/Unschedulable with an
"Insufficient <resource>" or "Too many pods" in its message), no node of its pool has room for it now, and the
free room of its pool adds up to its requests. Its pool is the nodes it could go to whatever their room:
Ready, schedulable, not being drained, its taints tolerated, its node selector and required node affinity
matched — so a pod that can only go to one node pool is judged against that pool alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from remediator.model.records import NodeRecord, PodRecord, Taint
from remediator.scheduling.nodefit import PODS, placement_reason
from remediator.state.snapshot import Snapshot

RESOURCE_SHORTAGE = ("Insufficient ", "Too many pods")  # kube-scheduler's NodeResourcesFit reasons


@dataclass(frozen=True)
class Stuck:
    pod: PodRecord
    resources: tuple[str, ...]  # the dimensions that matter for it, "pods" last
    need: tuple[int, ...]  # its requests in that order (one pod slot)
    pool: tuple[str, ...]  # the nodes it could go to, whatever their room


def dimensions(pod: PodRecord) -> tuple[str, ...]:
    return (*sorted({"cpu", "memory"} | {r for r, q in pod.requests.items() if q > 0 and r != PODS}), PODS)


def vector(requests: Mapping[str, int], resources: Sequence[str]) -> tuple[int, ...]:
    return tuple(1 if r == PODS else requests.get(r, 0) for r in resources)


def free_vector(node: NodeRecord, used: Mapping[str, int], resources: Sequence[str]) -> tuple[int, ...]:
    return tuple(node.allocatable.get(r, 0) - used.get(r, 0) for r in resources)


def refused_for_resources(pod: PodRecord) -> bool:
    return not pod.terminating and any(reason in pod.unschedulable for reason in RESOURCE_SHORTAGE)


def pool(pod: PodRecord, nodes: Iterable[NodeRecord], *, exclude: AbstractSet[str],
         planned_taints: Mapping[str, Sequence[Taint]]) -> tuple[str, ...]:
    return tuple(sorted(n.name for n in nodes
                        if placement_reason(pod, n, exclude=exclude, planned=planned_taints.get(n.name, ())) is None))


def stuck_pods(snapshot: Snapshot, usage: Mapping[str, Mapping[str, int]], *, exclude: AbstractSet[str],
               planned_taints: Mapping[str, Sequence[Taint]]) -> tuple[list[Stuck], dict[str, int]]:
    """The pods pending for fragmentation, highest priority and oldest first (kube-scheduler's queue order), and
    the room stranded on their pools: per resource, the free room on those nodes."""
    stuck: list[Stuck] = []
    pooled: set[str] = set()
    candidates = [p for p in snapshot.pending if refused_for_resources(p)]
    candidates.sort(key=lambda p: (-(p.priority or 0), p.created is None, p.created or snapshot.now, p.key))
    nodes = list(snapshot.nodes.values())
    pools: dict[tuple[object, ...], tuple[str, ...]] = {}  # pods of one workload share a pool: computed once
    rooms: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[list[tuple[int, ...]], list[int]]] = {}
    for pod in candidates:
        shape = (pod.tolerations, tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)
        names = pools.get(shape)
        if names is None:
            names = pools[shape] = pool(pod, nodes, exclude=exclude, planned_taints=planned_taints)
        resources = dimensions(pod)
        need = vector(pod.requests, resources)
        if (names, resources) not in rooms:
            free = [free_vector(snapshot.nodes[n], usage.get(n, {}), resources) for n in names]
            total = [sum(max(0, room[i]) for room in free) for i in range(len(resources))]
            rooms[(names, resources)] = (_frontier(free), total)
        frontier, total = rooms[(names, resources)]
        if not frontier or any(all(f >= q for f, q in zip(room, need, strict=True)) for room in frontier):
            continue  # nowhere it could go at all, or room on one node already: the scheduler's business
        if all(t >= q for t, q in zip(total, need, strict=True)) and any(
                all(snapshot.nodes[n].allocatable.get(r, 0) >= q for r, q in zip(resources, need, strict=True))
                for n in names):  # (bigger than every node, even empty: only a bigger node helps)
            stuck.append(Stuck(pod, resources, need, names))
            pooled.update(names)
    stranded: dict[str, int] = {}
    for name in pooled:
        node = snapshot.nodes[name]
        for r in ("cpu", "memory"):
            stranded[r] = stranded.get(r, 0) + max(0, node.allocatable.get(r, 0) - usage.get(name, {}).get(r, 0))
    return stuck, stranded


def _frontier(rooms: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The rooms no other room covers in every resource: a pod fits some room iff it fits one of these."""
    kept: list[tuple[int, ...]] = []
    for room in sorted(set(rooms), reverse=True):
        if not any(all(k >= r for k, r in zip(other, room, strict=True)) for other in kept):
            kept.append(room)
    return kept
