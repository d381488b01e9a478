"""Required inter-pod anti-affinity for nodeFit: would a pod on this node share a topology domain (the node, its
zone, ...) with a pod that it, or that other pod, refuses to share one with? The scheduler checks both directions,
so this does too; pods the plan already sends somewhere this cycle count as if they were there.

A pod evicted towards a node where anti-affinity forbids it would sit Pending: nodeFit exists to prevent that.
A `namespaceSelector` counts as every namespace (the records carry no namespace labels): stricter, never looser.
"""

from __future__ import annotations

from remediator.defaultevictor import TERMINAL_PHASES
from remediator.model import NodeRecord, PodAffinityTerm, PodRecord, Snapshot
from remediator.selectors import matches_labels


def _matches(term: PodAffinityTerm, other: PodRecord) -> bool:
    if term.selector is None or not (term.any_namespace or other.namespace in term.namespaces):
        return False
    return matches_labels(term.selector, other.labels)


class AntiAffinityIndex:
    """Built once per planning cycle; `add` records a planned arrival."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._nodes = snapshot.nodes
        self._pods: list[tuple[PodRecord, str]] = [
            (p, node) for node, pods in snapshot.pods_by_node.items() for p in pods if p.phase not in TERMINAL_PHASES]
        self._domains: dict[str, dict[str, list[PodRecord]]] = {}  # topology key -> value -> pods, built lazily
        # (pod, term, the pod's topology value) for every pod that keeps others away
        self._holders: list[tuple[PodRecord, PodAffinityTerm, str]] = []
        for p, node in self._pods:
            self._hold(p, node)

    def _value(self, node: str, key: str) -> str | None:
        record = self._nodes.get(node)
        return record.labels.get(key) if record is not None else None

    def _hold(self, pod: PodRecord, node: str) -> None:
        for term in pod.required_anti_affinity:
            value = self._value(node, term.topology_key)
            if value is not None:
                self._holders.append((pod, term, value))

    def _domain(self, key: str, value: str) -> list[PodRecord]:
        if key not in self._domains:
            by_value: dict[str, list[PodRecord]] = {}
            for p, node in self._pods:
                v = self._value(node, key)
                if v is not None:
                    by_value.setdefault(v, []).append(p)
            self._domains[key] = by_value
        return self._domains[key].get(value, [])

    def add(self, pod: PodRecord, node: str) -> None:
        """`pod` will run on `node` after this cycle."""
        self._pods.append((pod, node))
        for key, by_value in self._domains.items():
            value = self._value(node, key)
            if value is not None:
                by_value.setdefault(value, []).append(pod)
        self._hold(pod, node)

    def conflict(self, pod: PodRecord, node: NodeRecord) -> str | None:
        """Why `pod` may not go to `node` (the first conflict found), or None."""
        for term in pod.required_anti_affinity:
            value = node.labels.get(term.topology_key)
            if value is None:
                continue  # a node outside every domain of this key cannot break the term
            for other in self._domain(term.topology_key, value):
                if other.uid != pod.uid and _matches(term, other):
                    return "pod anti-affinity"
        for holder, term, value in self._holders:
            if holder.uid != pod.uid and node.labels.get(term.topology_key) == value and _matches(term, pod):
                return "existing pods' anti-affinity"
        return None
