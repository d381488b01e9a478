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
from remediator.model.records import NodeRecord, PodRecord
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_scope import ready_nodes
from remediator.strategies.remove_pods_violating_node_affinity.args import (
    REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)
from remediator.strategies.remove_pods_violating_node_affinity.kept import KeptNodeAffinity, preferred_weight

NAME = "RemovePodsViolatingNodeAffinity"
KIND = "deschedule"


Fits = Callable[..., str | None]  # Gate.fits: (pod, accept=None) -> a node the pod could go to, or None


def plan(snapshot: Snapshot, args: RemovePodsViolatingNodeAffinityArgs, gate: Gate) -> Wants:
    fits = gate.fits
    # The few pods whose node affinity needs a look (kept.py), then each type runs over them in descheduler's order.
    kept = snapshot.derived.kept_by(NAME, KeptNodeAffinity)
    notable = snapshot.notable().node_affinity
    nodes = ready_nodes(snapshot)
    looks = [(node, kept.of(node, found)) for node in nodes if (found := notable.get(node.name))]
    kept.keep_only(looks)
    for affinity_type in args.node_affinity_type:
        for node, look in looks:
            if affinity_type == REQUIRED:
                for pod in look.violating:
                    if args.scope.selects(pod) and (reason := _required(pod, node, fits)) is not None:
                        gate.admit(PlannedEviction(pod, NAME, reason))
            else:
                for pod, own in look.preferring:
                    if args.scope.selects(pod) and (reason := _preferred(pod, node, own, snapshot, fits)) is not None:
                        gate.admit(PlannedEviction(pod, NAME, reason))
    return NOTHING


def _required(pod: PodRecord, node: NodeRecord, fits: Fits) -> str | None:
    """For a pod whose node no longer matches its required terms: a node it fits, named."""
    elsewhere = fits(pod, alike=())  # no rule of its own: a replica's failed search answers the next
    if elsewhere is None:
        return None
    return f"node {node.name} no longer matches its required node affinity; {elsewhere} does"


def _preferred(pod: PodRecord, node: NodeRecord, own: int, snapshot: Snapshot, fits: Fits) -> str | None:
    """For a pod scoring `own` of its preferred weight on its node: a node it fits that scores higher, named."""
    def scores_higher(p: PodRecord, there: NodeRecord, _: Mapping[str, int]) -> str | None:
        return None if preferred_weight(p, there) > own else "lower preference"

    better = fits(pod, scores_higher)
    if better is None:
        return None
    return (f"preferred node affinity weight {own} on {node.name}; {better} fits with weight "
            f"{preferred_weight(pod, snapshot.nodes[better])}")
