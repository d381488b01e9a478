"""RemovePodsViolatingNodeAffinity: evict pods whose node no longer satisfies their node affinity.

descheduler's algorithm (`removepodsviolatingnodeaffinity/node_affinity.go`), per listed `nodeAffinityType`, over
Ready nodes and their non-terminal pods in scope:
* requiredDuringSchedulingIgnoredDuringExecution: the pod has required node affinity, its node no longer matches
  its nodeSelector + required terms, and it fits some other Ready node (always checked, whatever nodeFit says).
* preferredDuringSchedulingIgnoredDuringExecution: the pod has preferred terms and some Ready node scores a higher
  summed weight than its own. descheduler takes that best weight over every Ready node, fitting or not, and asks
  only that the pod fits *some* node (its own counts); here the node with the higher weight must be one the pod
  fits (DS-AFF-1), so a pod is never evicted towards a preference it cannot reach.
Plans only: the DefaultEvictor, limits, nodeFit and PDBs are applied by the planner's gate.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from remediator.model import NodeRecord, PlannedEviction, PodRecord, Snapshot
from remediator.scheduling.nodefit import find_destination, pod_request_summary
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.selectors import node_matches_terms, pod_fits_node_selection
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.strategies.remove_pods_violating_node_affinity.args import (
    REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)
from remediator.strategies.scope import ready_nodes

NAME = "RemovePodsViolatingNodeAffinity"
KIND = "deschedule"


def preferred_weight(pod: PodRecord, node: NodeRecord) -> int:
    """The summed weight of the pod's preferred node-affinity terms that `node` matches."""
    return sum(p.weight for p in pod.preferred_node_affinity if node_matches_terms((p.term,), node))


class _Fit:
    """Where the strategy's pods could go; node requests are summed once, on the first question."""

    def __init__(self, snapshot: Snapshot, nodes: list[NodeRecord]) -> None:
        self.snapshot, self.names = snapshot, [n.name for n in nodes]
        self._requested: Mapping[str, Mapping[str, int]] | None = None
        self._affinity: PodAffinityIndex | None = None
        self._spread: SpreadIndex | None = None

    def somewhere(self, pod: PodRecord, *, weight_over: int | None = None) -> str | None:
        """A Ready node other than its own that takes the pod (scoring more than `weight_over`, when given)."""
        if self._requested is None or self._affinity is None or self._spread is None:
            self._requested = {n: pod_request_summary(self.snapshot.pods(n)) for n in self.names}
            self._affinity, self._spread = PodAffinityIndex(self.snapshot), SpreadIndex(self.snapshot)

        def better(p: PodRecord, node: NodeRecord, _: Mapping[str, int]) -> str | None:
            return None if weight_over is None or preferred_weight(p, node) > weight_over else "lower preference"

        return find_destination(pod, self.snapshot, exclude=(), requested=self._requested, nodes=self.names,
                                pod_affinity=self._affinity, spread=self._spread, first_fit=True, accept=better).node


def plan(snapshot: Snapshot, args: RemovePodsViolatingNodeAffinityArgs, **_: object) -> Iterator[PlannedEviction]:
    nodes = ready_nodes(snapshot)
    fit = _Fit(snapshot, nodes)
    for affinity_type in args.node_affinity_type:
        for node in nodes:
            for pod in snapshot.pods(node.name):
                if pod.phase in ("Succeeded", "Failed") or not args.scope.selects(pod):
                    continue
                reason = _required(pod, node, fit) if affinity_type == REQUIRED else _preferred(pod, node, fit)
                if reason is not None:
                    yield PlannedEviction(pod, NAME, reason)


def _required(pod: PodRecord, node: NodeRecord, fit: _Fit) -> str | None:
    if not pod.required_node_affinity or pod_fits_node_selection(pod, node):
        return None
    elsewhere = fit.somewhere(pod)
    if elsewhere is None:
        return None
    return f"node {node.name} no longer matches its required node affinity; {elsewhere} does"


def _preferred(pod: PodRecord, node: NodeRecord, fit: _Fit) -> str | None:
    if not pod.preferred_node_affinity:
        return None
    own = preferred_weight(pod, node)
    if own >= sum(p.weight for p in pod.preferred_node_affinity):
        return None  # nothing can score higher
    better = fit.somewhere(pod, weight_over=own)
    if better is None:
        return None
    return (f"preferred node affinity weight {own} on {node.name}; {better} fits with weight "
            f"{preferred_weight(pod, fit.snapshot.nodes[better])}")
