"""Required inter-pod affinity and anti-affinity for nodeFit, as kube-scheduler's InterPodAffinity filter reads them.

Anti-affinity: would a pod on this node share a topology domain (the node, its zone, ...) with a pod that it, or
that other pod, refuses to share one with? Both directions are checked. Affinity: does the node's domain hold a
pod each of the pod's terms asks for (or, as the scheduler allows, is the pod the first of its group)? Pods the
plan already sends somewhere this cycle count as if they were there.

A pod evicted towards a node where these forbid it would sit Pending: nodeFit exists to prevent that.
A `namespaceSelector` counts as every namespace for anti-affinity (stricter) and as none beyond the listed ones
for affinity (stricter too): the records carry no namespace labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence, Set
from functools import partial
from typing import Any

from remediator.model.records import HOSTNAME_LABEL, TERMINAL_PHASES, NodeRecord, PodAffinityTerm, PodRecord
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot

Holding = tuple[str, str, str | None]  # (topology key, value, namespace or None): see PodAffinityIndex._holders
_NO_HOLDERS: list[tuple[PodRecord, PodAffinityTerm]] = []  # never written: holders() of an empty domain


def _matches(term: PodAffinityTerm, other: PodRecord) -> bool:
    if term.selector is None or not (term.any_namespace or other.namespace in term.namespaces):
        return False
    return matches_labels(term.selector, other.labels)


class PodAffinityIndex:
    """Built once per planning cycle; `add` records a planned arrival (and `remove` takes one back).

    The snapshot's pods are read where they are (no copy of 150,000 pods per cycle); only the planned arrivals,
    the anti-affinity holders and the domains a term actually asks about are kept."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._nodes = snapshot.nodes
        self._by_node = snapshot.pods_by_node
        self._arrivals: list[tuple[PodRecord, str]] = []  # planned this cycle
        # topology key -> value -> the pods of that domain, each built when first asked for: a term asks about the
        # domains of the nodes searched (for a hostname term, a few nodes out of thousands), never all of them
        self._domains: dict[str, dict[str, list[PodRecord]]] = {}
        self._nodes_by_value: dict[str, dict[str, list[str]]] = {}  # topology key -> value -> its nodes, in order
        # (topology key, the holder's value of it, a namespace the term selects pods of; None: any) -> (pod, term) for
        # every pod that keeps others away: a node is checked against the holders of its own domains that could
        # select the pod's namespace only, not against every holder in the cluster
        self._holders: dict[Holding, list[tuple[PodRecord, PodAffinityTerm]]] = {}
        self._holder_keys: set[str] = set()  # the topology keys of those terms (a few: hostname, zone)
        self._added_holders: dict[tuple[int, str], list[list[Holding]]] = {}
        # The snapshot's pods with required anti-affinity, node by node as the nodes' pods are (Snapshot.notable, kept
        # across cycles per node): not a pass over every pod of the cluster each cycle.
        for node, pods in snapshot.notable().anti_affinity.items():
            for p in pods:
                if p.phase not in TERMINAL_PHASES:
                    self._hold(p, node)

    def _pods(self) -> Iterator[tuple[PodRecord, str]]:
        for node, pods in self._by_node.items():
            for p in pods:
                if p.phase not in TERMINAL_PHASES:
                    yield p, node
        yield from self._arrivals

    def _value(self, node: str, key: str) -> str | None:
        record = self._nodes.get(node)
        return record.labels.get(key) if record is not None else None

    def _hold(self, pod: PodRecord, node: str) -> list[Holding]:
        """Index the pod's anti-affinity terms; where it was added. A term without a selector keeps no pod away."""
        held = []
        for term in pod.required_anti_affinity:
            value = self._value(node, term.topology_key)
            if value is None or term.selector is None:
                continue
            self._holder_keys.add(term.topology_key)
            for namespace in (None,) if term.any_namespace else term.namespaces:
                holding = (term.topology_key, value, namespace)
                self._holders.setdefault(holding, []).append((pod, term))
                held.append(holding)
        return held

    def _domain(self, key: str, value: str) -> list[PodRecord]:
        by_value = self._domains.setdefault(key, {})
        found = by_value.get(value)
        if found is None:
            by_node = self._by_node
            found = by_value[value] = [p for node in self._nodes_with(key).get(value, ()) for p in by_node[node]
                                       if p.phase not in TERMINAL_PHASES]
            found.extend(p for p, node in self._arrivals if self._value(node, key) == value)
        return found

    def _nodes_with(self, key: str) -> dict[str, list[str]]:
        """value of `key` -> the nodes holding pods that carry it (a node's pods share its value: looked up once per
        node, once per key)."""
        found = self._nodes_by_value.get(key)
        if found is None:
            found = self._nodes_by_value[key] = {}
            for node in self._by_node:
                v = self._value(node, key)
                if v is not None:
                    found.setdefault(v, []).append(node)
        return found

    def add(self, pod: PodRecord, node: str) -> None:
        """`pod` will run on `node` after this cycle."""
        self._arrivals.append((pod, node))
        for key, by_value in self._domains.items():  # a domain built later counts the arrival from `_arrivals`
            value = self._value(node, key)
            if value is not None and value in by_value:
                by_value[value].append(pod)
        self._added_holders.setdefault((id(pod), node), []).append(self._hold(pod, node))

    def remove(self, pod: PodRecord, node: str) -> None:
        """Undo `add(pod, node)` (a trial placement that was given up)."""
        for i in range(len(self._arrivals) - 1, -1, -1):
            if self._arrivals[i][0] is pod and self._arrivals[i][1] == node:
                del self._arrivals[i]
                break
        for key, by_value in self._domains.items():
            value = self._value(node, key)
            if value is not None and value in by_value:
                _drop_last(by_value[value], pod)
        added = self._added_holders.get((id(pod), node))
        for domain in added.pop() if added else ():
            _drop_last(self._holders[domain], pod)

    def conflict(self, pod: PodRecord, node: NodeRecord) -> str | None:
        """Why `pod` may not go to `node` (the first conflict found), or None."""
        return _PodConflicts(self, pod)(node)

    def conflict_for(self, pod: PodRecord) -> Callable[[NodeRecord], str | None]:
        """`conflict` for one pod, for a search that asks it of many nodes while nothing moves (a search reserves
        nothing)."""
        return _PodConflicts(self, pod)

    def repels(self, pod: PodRecord, term: PodAffinityTerm, value: str) -> bool:
        """A pod of the domain `value` of the term's key matches the pod's anti-affinity `term`."""
        return any(other.uid != pod.uid and _matches(term, other) for other in self._domain(term.topology_key, value))

    def holders(self, key: str, value: str, namespace: str | None) -> list[tuple[PodRecord, PodAffinityTerm]]:
        """The (pod, anti-affinity term) pairs of the domain `value` of `key` whose term selects pods of `namespace`
        (None: those of any namespace): who could keep a pod of it away from the domain."""
        return self._holders.get((key, value, namespace), _NO_HOLDERS)

    @property
    def holder_keys(self) -> Set[str]:
        """The topology keys of the anti-affinity terms of the pods in the index (a few: hostname, zone)."""
        return self._holder_keys

    def affine_in(self, pod: PodRecord, term: PodAffinityTerm, value: str) -> bool:
        """The domain `value` of the term's key holds a pod the pod's affinity `term` asks for."""
        affine = _affine(term)
        return any(o.uid != pod.uid and _matches(affine, o) for o in self._domain(term.topology_key, value))

    def first_of_group(self, pod: PodRecord, term: PodAffinityTerm) -> bool:
        """The first pod of a group may go anywhere its term would match itself, if no pod matches it yet (as the
        scheduler allows): wherever it goes, whatever the node."""
        affine = _affine(term)
        return _matches(affine, pod) and not any(o.uid != pod.uid and _matches(affine, o) for o, _ in self._pods())


class _PodConflicts:
    """`PodAffinityIndex.conflict` for one pod over one search: an answer about a domain many nodes share (a zone) is
    worked out once, where `conflict` alone scans the domain's pods again for every node in it. Answers about a
    node's own domain (its hostname) are not kept: no other node asks for them."""

    def __init__(self, index: PodAffinityIndex, pod: PodRecord) -> None:
        self.index, self.pod = index, pod
        self.known: dict[tuple[int, str, str], bool] = {}  # (which check, topology key, value) -> its answer
        self.first: dict[int, bool] = {}  # affinity term -> the pod is the first of its group
        # id of a holder's anti-affinity term -> it selects the pod: a workload's replicas share one term object
        # (state/sharing.py), asked of node after node; the terms live as long as the snapshot, so their ids do
        self.selects: dict[int, bool] = {}

    def __call__(self, node: NodeRecord) -> str | None:
        pod, index, labels = self.pod, self.index, node.labels
        for i, term in enumerate(pod.required_anti_affinity):
            value = labels.get(term.topology_key)
            if value is not None and self._answer(i, term.topology_key, value, partial(index.repels, pod, term)):
                return "pod anti-affinity"
        for key in index.holder_keys:
            value = labels.get(key)
            if value is None:
                continue
            held, anywhere = index.holders(key, value, pod.namespace), index.holders(key, value, None)
            if (held or anywhere) and self._held_off(key, value, (*held, *anywhere) if anywhere else held):
                return "existing pods' anti-affinity"
        for i, term in enumerate(pod.required_affinity):
            value = labels.get(term.topology_key)  # None: a node in no domain of the key
            in_domain = value is not None and self._answer(-2 - i, term.topology_key, value,
                                                           partial(index.affine_in, pod, term))
            if not in_domain and not self._first_of_group(i, term):
                return "pod affinity"
        return None

    def _held_off(self, key: str, value: str, held: Sequence[tuple[PodRecord, PodAffinityTerm]]) -> bool:
        """A pod of `held` (the domain `value` of `key`) keeps the pod away by its own anti-affinity. Each distinct
        term is matched against the pod once a search; a zone's answer is kept as `_answer` keeps it."""
        if key != HOSTNAME_LABEL and (found := self.known.get((-1, key, value))) is not None:
            return found
        pod, selects = self.pod, self.selects
        found = False
        for holder, term in held:
            if holder.uid == pod.uid:
                continue
            matched = selects.get(id(term))
            if matched is None:
                matched = selects[id(term)] = _matches(term, pod)
            if matched:
                found = True
                break
        if key != HOSTNAME_LABEL:
            self.known[(-1, key, value)] = found
        return found

    def _first_of_group(self, i: int, term: PodAffinityTerm) -> bool:
        """`first_of_group` for the pod's `i`th affinity term, asked once a search: it scans every pod, and its answer
        does not depend on the node."""
        found = self.first.get(i)
        if found is None:
            found = self.first[i] = self.index.first_of_group(self.pod, term)
        return found

    def _answer(self, check: int, key: str, value: str, work: Callable[[str], bool]) -> bool:
        if key == HOSTNAME_LABEL:
            return work(value)
        found = self.known.get((check, key, value))
        if found is None:
            found = self.known[(check, key, value)] = work(value)
        return found


def _drop_last(items: list[Any], pod: PodRecord) -> None:
    """Remove the last entry that is `pod` (or a tuple starting with it)."""
    for i in range(len(items) - 1, -1, -1):
        item = items[i]
        if item is pod or (isinstance(item, tuple) and item[0] is pod):
            del items[i]
            return


def _affine(term: PodAffinityTerm) -> PodAffinityTerm:
    """For affinity a namespaceSelector counts as no extra namespace: demanding more, never less."""
    return term if not term.any_namespace else PodAffinityTerm(term.selector, term.namespaces, False,
                                                               term.topology_key)
