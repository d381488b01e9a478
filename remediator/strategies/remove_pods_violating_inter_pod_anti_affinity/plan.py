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

from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from functools import partial

from remediator.model.plan import PlannedEviction
from remediator.model.records import TERMINAL_PHASES, NodeRecord, PodAffinityTerm, PodRecord
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_scope import PodScope, ready_nodes
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.args import (
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.kept import KeptAntiAffinity

NAME = "RemovePodsViolatingInterPodAntiAffinity"
KIND = "deschedule"
SMALL_DOMAIN = 8  # nodes; a domain this small is read node by node (a hostname), a larger one through an index
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
_NONE_GONE: frozenset[str] = frozenset()


def eviction_order(pod: PodRecord) -> tuple[bool, int, int, str, str]:
    """descheduler's SortPodsBasedOnPriorityLowToHigh (name order last, for a stable plan)."""
    return (pod.priority is not None, pod.priority or 0, _QOS_RANK.get(pod.qos, 0), pod.namespace, pod.name)


class _Domains:
    """The listed pods (non-terminal, in scope, on Ready nodes) by topology domain and namespace, built lazily: a
    node's own pods grouped by namespace on first use; a domain of a few nodes (a hostname) read from those, a large
    one (a zone) from a per-key index built once."""

    def __init__(self, snapshot: Snapshot, nodes: list[NodeRecord], scope: PodScope) -> None:
        self.snapshot, self.nodes, self.scope = snapshot, nodes, scope
        self._on_node: dict[str, dict[str, list[PodRecord]]] = {}
        self._of: dict[tuple[str, str], list[PodRecord]] = {}
        self._nodes_by_key: dict[str, dict[str, list[str]]] = {}
        self._pods_by_key: dict[str, dict[tuple[str, str], list[PodRecord]]] = {}
        self._namespaces: list[str] | None = None

    def on_node(self, node: str) -> dict[str, list[PodRecord]]:
        grouped = self._on_node.get(node)
        if grouped is None:
            grouped = self._on_node[node] = {}
            for p in self.scope.select(self.snapshot.pods(node)):
                if p.phase not in TERMINAL_PHASES:
                    grouped.setdefault(p.namespace, []).append(p)
        return grouped

    def of(self, node: str, namespace: str) -> list[PodRecord]:
        """The listed pods of one namespace on one node (what a hostname term reads): the node's pods filtered by
        namespace first, the scope asked only of those (most nodes are read for a namespace or two, not grouped)."""
        grouped = self._on_node.get(node)
        if grouped is not None:
            return grouped.get(namespace, [])
        found = self._of.get((node, namespace))
        if found is None:
            scope = self.scope
            found = self._of[(node, namespace)] = [p for p in self.snapshot.pods(node) if p.namespace == namespace
                                                   and p.phase not in TERMINAL_PHASES and scope.selects(p)]
        return found

    def namespaces(self) -> list[str]:
        """Every namespace of a listed pod: what a term with a namespaceSelector looks at (DS-ANTI-1)."""
        if self._namespaces is None:
            self._namespaces = sorted({ns for n in self.nodes for ns in self.on_node(n.name)})
        return self._namespaces

    def _by_value(self, key: str) -> dict[str, list[str]]:
        by_value = self._nodes_by_key.get(key)
        if by_value is None:
            by_value = self._nodes_by_key[key] = {}
            for n in self.nodes:
                if (v := n.labels.get(key)) is not None:
                    by_value.setdefault(v, []).append(n.name)
        return by_value

    def alone(self, node: NodeRecord, key: str) -> bool:
        """Whether the node's domain of `key` is the node alone (a hostname; a node without the key counts its own
        pods only)."""
        value = node.labels.get(key)
        return value is None or self._by_value(key).get(value) == [node.name]

    def pods(self, key: str, namespace: str, value: str) -> list[PodRecord]:
        by_value = self._by_value(key)
        names = by_value.get(value, [])
        if len(names) <= SMALL_DOMAIN:
            return [p for name in names for p in self.of(name, namespace)]
        index = self._pods_by_key.get(key)
        if index is None:
            index = self._pods_by_key[key] = {}
            for v, members in by_value.items():
                for name in members:
                    for ns, pods in self.on_node(name).items():
                        index.setdefault((ns, v), []).extend(pods)
        return index.get((namespace, value), [])


def plan(snapshot: Snapshot, args: RemovePodsViolatingInterPodAntiAffinityArgs, gate: Gate) -> Wants:
    nodes = ready_nodes(snapshot)
    domains = _Domains(snapshot, nodes, args.scope)
    notable = snapshot.notable().anti_affinity
    kept = snapshot.derived.kept_by(NAME, KeptAntiAffinity).run_on(nodes, args.scope)
    gone: set[str] = set()
    for node in nodes:
        holders = partial(_needing_a_look, node, notable.get(node.name, ()), domains, args.scope)
        for pod in kept.needing_a_look(node.name, snapshot.pods(node.name), holders):
            found = _violated_by(pod, node, domains=domains, gone=gone)
            if found is None:
                continue
            other, term = found
            where = f"node {node.name}" if other.node_name == node.name else \
                f"{term.topology_key}={node.labels.get(term.topology_key)}"
            reason = f"required anti-affinity violated by {other.key} on the same {where}"
            gate.admit(PlannedEviction(pod, NAME, reason))
            if pod.key in gate.view.evicting:
                gone.add(pod.key)
    return NOTHING


def _needing_a_look(node: NodeRecord, holding: Sequence[PodRecord], domains: _Domains,
                    scope: PodScope) -> tuple[PodRecord, ...]:
    """The node's listed holders in eviction order, but for those clear of violators (none counted as gone) whose
    every term's domain is the node alone: they read only the node's own pods (kept.py)."""
    holders = sorted((p for p in holding if p.phase not in TERMINAL_PHASES and scope.selects(p)), key=eviction_order)
    return tuple(p for p in holders if not all(domains.alone(node, t.topology_key) for t in p.required_anti_affinity)
                 or _violated_by(p, node, domains=domains, gone=_NONE_GONE) is not None)


def _violated_by(pod: PodRecord, node: NodeRecord, *, domains: _Domains,
                 gone: AbstractSet[str]) -> tuple[PodRecord, PodAffinityTerm] | None:
    for term in pod.required_anti_affinity:
        value = node.labels.get(term.topology_key)
        for namespace in (domains.namespaces() if term.any_namespace else term.namespaces):
            others = (domains.pods(term.topology_key, namespace, value) if value is not None
                      else domains.of(node.name, namespace))
            for other in others:
                if other.key != pod.key and other.key not in gone and _selects(term, other):
                    return other, term
    return None


def _selects(term: PodAffinityTerm, other: PodRecord) -> bool:
    return term.selector is not None and matches_labels(term.selector, other.labels)

