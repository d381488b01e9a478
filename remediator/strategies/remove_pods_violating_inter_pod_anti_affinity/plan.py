"""RemovePodsViolatingInterPodAntiAffinity: evict a pod whose required anti-affinity another pod now violates.

descheduler's algorithm (`removepodsviolatinginterpodantiaffinity/pod_antiaffinity.go` and
`utils.CheckPodsWithAntiAffinityExist`): over the non-terminal pods in scope on Ready nodes, node by node, lowest
priority first (no priority before any, then BestEffort, Burstable, Guaranteed), a pod is a candidate when one of
its required anti-affinity terms matches another listed pod (the term's namespaces, else the pod's own) on a node
with the same value of the term's topology key (the same node always counts). Once a pod is evicted it no longer
counts against the others, so of two pods that repel each other only the first goes; whether it was evicted is the
gate's answer (`evicting`). Only the pods in scope count as the "other" pod, as in descheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from remediator.model import TERMINAL_PHASES, NodeRecord, PlannedEviction, PodAffinityTerm, PodRecord, Snapshot
from remediator.scheduling.selectors import matches_labels
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.args import (
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from remediator.strategies.scope import PodScope, ready_nodes

NAME = "RemovePodsViolatingInterPodAntiAffinity"
KIND = "deschedule"
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}


def eviction_order(pod: PodRecord) -> tuple[bool, int, int, str, str]:
    """descheduler's SortPodsBasedOnPriorityLowToHigh (name order last, for a stable plan)."""
    return (pod.priority is not None, pod.priority or 0, _QOS_RANK.get(pod.qos, 0), pod.namespace, pod.name)


class _Domains:
    """In-scope pods by (topology key -> (namespace, value) -> pods), built per key on first use."""

    def __init__(self, nodes: list[NodeRecord], listed: dict[str, list[PodRecord]]) -> None:
        self.nodes, self.listed = nodes, listed
        self._by_key: dict[str, dict[tuple[str, str], list[PodRecord]]] = {}

    def pods(self, key: str, namespace: str, value: str) -> list[PodRecord]:
        index = self._by_key.get(key)
        if index is None:
            index = self._by_key[key] = {}
            for node in self.nodes:
                v = node.labels.get(key)
                if v is not None:
                    for p in self.listed.get(node.name, ()):
                        index.setdefault((p.namespace, v), []).append(p)
        return index.get((namespace, value), [])


def plan(snapshot: Snapshot, args: RemovePodsViolatingInterPodAntiAffinityArgs, *,
         evicting: Callable[[str], bool], **_: object) -> Iterator[PlannedEviction]:
    nodes = ready_nodes(snapshot)
    listed = {n.name: _listed(snapshot, n.name, args.scope) for n in nodes}
    namespaces = sorted({p.namespace for pods in listed.values() for p in pods})
    domains = _Domains(nodes, listed)
    gone: set[str] = set()
    for node in nodes:
        for pod in sorted(listed[node.name], key=eviction_order):
            if not pod.required_anti_affinity:
                continue
            found = _violated_by(pod, node, domains=domains, listed=listed, namespaces=namespaces, gone=gone)
            if found is None:
                continue
            other, term = found
            where = f"node {node.name}" if other.node_name == node.name else \
                f"{term.topology_key}={node.labels.get(term.topology_key)}"
            yield PlannedEviction(pod, NAME, f"required anti-affinity violated by {other.key} on the same {where}")
            if evicting(pod.key):
                gone.add(pod.key)


def _listed(snapshot: Snapshot, node: str, scope: PodScope) -> list[PodRecord]:
    return [p for p in snapshot.pods(node) if p.phase not in TERMINAL_PHASES and scope.selects(p)]


def _violated_by(pod: PodRecord, node: NodeRecord, *, domains: _Domains, listed: dict[str, list[PodRecord]],
                 namespaces: list[str], gone: set[str]) -> tuple[PodRecord, PodAffinityTerm] | None:
    for term in pod.required_anti_affinity:
        value = node.labels.get(term.topology_key)
        for namespace in (namespaces if term.any_namespace else term.namespaces):
            others = (domains.pods(term.topology_key, namespace, value) if value is not None
                      else [p for p in listed[node.name] if p.namespace == namespace])
            for other in others:
                if other.key != pod.key and other.key not in gone and _selects(term, other):
                    return other, term
    return None


def _selects(term: PodAffinityTerm, other: PodRecord) -> bool:
    return term.selector is not None and matches_labels(term.selector, other.labels)

