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

from collections.abc import Callable, Mapping

from remediator.model.plan import PlannedEviction
from remediator.model.records import TERMINAL_PHASES, NodeRecord, PodRecord
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.scheduling.selectors import node_matches_terms, pod_fits_node_selection
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_scope import ready_nodes
from remediator.strategies.remove_pods_violating_node_affinity.args import (
    REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)

NAME = "RemovePodsViolatingNodeAffinity"
KIND = "deschedule"


def preferred_weight(pod: PodRecord, node: NodeRecord) -> int:
    """The summed weight of the pod's preferred node-affinity terms that `node` matches."""
    return sum(p.weight for p in pod.preferred_node_affinity if node_matches_terms((p.term,), node))


Fits = Callable[..., str | None]  # Gate.fits: (pod, accept=None) -> a node the pod could go to, or None


def plan(snapshot: Snapshot, args: RemovePodsViolatingNodeAffinityArgs, gate: Gate) -> Wants:
    fits = gate.fits
    # The pods with node affinity (few), then each type runs over them in descheduler's order.
    having: list[tuple[NodeRecord, PodRecord]] = []
    notable = snapshot.notable().node_affinity
    for node in ready_nodes(snapshot):
        having.extend((node, p) for p in notable.get(node.name, ()) if p.phase not in TERMINAL_PHASES)
    for affinity_type in args.node_affinity_type:
        required = affinity_type == REQUIRED
        for node, pod in having:
            if not (pod.required_node_affinity if required else pod.preferred_node_affinity):
                continue
            if not args.scope.selects(pod):
                continue
            reason = _required(pod, node, fits) if required else _preferred(pod, node, snapshot, fits)
            if reason is not None:
                gate.admit(PlannedEviction(pod, NAME, reason))
    return NOTHING


def _required(pod: PodRecord, node: NodeRecord, fits: Fits) -> str | None:
    if pod_fits_node_selection(pod, node):
        return None
    elsewhere = fits(pod, alike=())  # no rule of its own: a replica's failed search answers the next
    if elsewhere is None:
        return None
    return f"node {node.name} no longer matches its required node affinity; {elsewhere} does"


def _preferred(pod: PodRecord, node: NodeRecord, snapshot: Snapshot, fits: Fits) -> str | None:
    own = preferred_weight(pod, node)
    if own >= sum(p.weight for p in pod.preferred_node_affinity):
        return None  # nothing can score higher

    def scores_higher(p: PodRecord, there: NodeRecord, _: Mapping[str, int]) -> str | None:
        return None if preferred_weight(p, there) > own else "lower preference"

    better = fits(pod, scores_higher)
    if better is None:
        return None
    return (f"preferred node affinity weight {own} on {node.name}; {better} fits with weight "
            f"{preferred_weight(pod, snapshot.nodes[better])}")
