"""What RemovePodsViolatingNodeAffinity keeps from one run for the next (in the snapshot's `derived`,
state/derived.py): per node, its pods whose node affinity needs a look, with the pod list and the node labels they
were found from.

Why: a settled cluster of 20,000 nodes has 55,000 pods with node affinity, almost all on a node that matches their
required terms and scores their preferred ones in full; checking each of them again every cycle cost 0.6 s of a
steady cycle (`make bench-steady`). Whether a pod needs a look reads only the pod and its node's name and labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from remediator.model.records import TERMINAL_PHASES, NodeRecord, PodRecord
from remediator.scheduling.selectors import node_matches_terms, pod_fits_node_selection


def preferred_weight(pod: PodRecord, node: NodeRecord) -> int:
    """The summed weight of the pod's preferred node-affinity terms that `node` matches."""
    return sum(p.weight for p in pod.preferred_node_affinity if node_matches_terms((p.term,), node))


@dataclass(frozen=True)
class NodeAffinityPods:
    """One node's live pods whose node affinity needs a look, in the node's order."""

    violating: tuple[PodRecord, ...]  # required terms the node no longer matches
    preferring: tuple[tuple[PodRecord, int], ...]  # preferred terms it does not score in full, and what it scores


NO_PODS = NodeAffinityPods((), ())


def needing_a_look(node: NodeRecord, pods: list[PodRecord]) -> NodeAffinityPods:
    violating, preferring = [], []
    for pod in pods:
        if pod.phase in TERMINAL_PHASES:
            continue
        if pod.required_node_affinity and not pod_fits_node_selection(pod, node):
            violating.append(pod)
        if pod.preferred_node_affinity:
            own = preferred_weight(pod, node)
            if own < sum(p.weight for p in pod.preferred_node_affinity):
                preferring.append((pod, own))
    return NodeAffinityPods(tuple(violating), tuple(preferring)) if violating or preferring else NO_PODS


@dataclass
class KeptNodeAffinity:
    # node -> (the pods with node affinity it was worked out from, the node's labels, what needs a look)
    _kept: dict[str, tuple[list[PodRecord], dict[str, str], NodeAffinityPods]] = field(default_factory=dict)

    def of(self, node: NodeRecord, pods: list[PodRecord]) -> NodeAffinityPods:
        """`needing_a_look(node, pods)`, worked out again only for another pod list or other labels."""
        kept = self._kept.get(node.name)
        if kept is not None and kept[0] is pods and (kept[1] is node.labels or kept[1] == node.labels):
            return kept[2]
        found = needing_a_look(node, pods)
        self._kept[node.name] = (pods, node.labels, found)
        return found

    def keep_only(self, looked_at: list[tuple[NodeRecord, NodeAffinityPods]]) -> None:
        """Forget the nodes not looked at this run (gone, no longer Ready, or without such pods): every node looked at
        has its entry, so there are others only when there are more entries."""
        if len(self._kept) > len(looked_at):
            names = {node.name for node, _ in looked_at}
            for name in [n for n in self._kept if n not in names]:
                del self._kept[name]
