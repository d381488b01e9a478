"""Failed searches a plan does not run again for a pod alike: node fit's answer for it worked out from the last one.

A balance strategy tries the replicas of a workload one after another, and in a settled cluster the move it wants is
often one no node takes (RemovePodsViolatingTopologySpreadConstraint counts the pods of Ready nodes, as descheduler
does, where the scheduler's spread filter also counts those of a NotReady node: it asks to move a replica of a zone
the filter will not let it leave). Each try scanned every node for the same answer: at 20,000 nodes most of a steady
cycle. Every try still gets its own answer, the one a search of its own would give, node by node and count by count.

Pod Q's search gets it from pod P's failed one when nothing a search reads differs between them but their names and
nodes:
- the books are as they were (nothing promised, committed, taken back or excluded since: `Books.version`);
- the same destinations and the same strategy rule (`accept`, the same object), whose own reading of the pod the
  strategy states as `alike` (equal for both; a rule whose reading it does not state is never asked again);
- the pods are alike in what node fit reads of a pod: namespace, labels, owners, phase, tolerations, node selection,
  requests, scheduler, pod (anti-)affinity terms and spread constraints, and neither is planned to move;
- their nodes are in the same domain of every key a search reads of the pod's own node (its zone, for the
  workload's zone spread; the keys of its spread constraints and pod (anti-)affinity terms), and no spread constraint
  node fit counts for the pod is per hostname (the counts it takes the pod out of would differ).
Then every other node answers both alike: each domain read holds both pods or neither, and what either pod's terms
say of the other the other's say of it. Only their own nodes answer apart: P's node was "current node" for P and is a
destination for Q, Q's node the other way round (a hostname term's domain among them). Those two are asked again, so
Q's answer is the one a full search of Q gives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from remediator.model.records import HOSTNAME_LABEL, NodeRecord, PodRecord, SpreadConstraint
from remediator.scheduling.fit_screen import CURRENT_NODE
from remediator.scheduling.nodefit import FitResult, no_fit
from remediator.scheduling.zonespread import ZONE

# a search of `pod` over `nodes`, with the books as they are: what Books.place would find
Search = Callable[[PodRecord, Sequence[str]], FitResult]


@dataclass(frozen=True)
class _Failed:
    version: int  # the books' version it was searched with
    pod: PodRecord
    answer: FitResult


class AlikeSearches:
    """One plan's failed searches, by what makes another pod's search answer alike."""

    def __init__(self) -> None:
        self._failed: dict[Hashable, _Failed] = {}
        # id of a destinations sequence or a rule -> it, kept so that no other object takes its id during the plan;
        # with the destinations as a set, asked whether a pod's node is one
        self._destinations: dict[int, tuple[Sequence[str], frozenset[str]]] = {}
        self._rules: dict[int, object] = {}

    def key(self, pod: PodRecord, node: NodeRecord | None, *, destinations: Sequence[str], rule: object,
            alike: Hashable, spreads: Sequence[SpreadConstraint]) -> Hashable | None:
        """What a search of `pod` must share with another's to answer alike; None when none may (see the module).
        `spreads`: every spread constraint node fit counts for the pod (its own, its scheduler's defaults)."""
        if node is None or any(c.topology_key == HOSTNAME_LABEL for c in spreads):
            return None
        if id(destinations) not in self._destinations:
            self._destinations[id(destinations)] = destinations, frozenset(destinations)
        self._rules.setdefault(id(rule), rule)
        # The domains of the pod's node that a search reads: its zone (a balance move's zone spread), and the keys of
        # its spread constraints and pod (anti-)affinity terms (a hostname term's domain is its node: asked again).
        keys = {ZONE, *(c.topology_key for c in spreads),
                *(t.topology_key for t in (*pod.required_anti_affinity, *pod.required_affinity))} - {HOSTNAME_LABEL}
        domains = tuple((k, node.labels.get(k)) for k in sorted(keys))
        shape = (pod.namespace, tuple(sorted(pod.labels.items())), pod.owners, pod.phase, pod.live, pod.tolerations,
                 tuple(sorted(pod.node_selector.items())), pod.required_node_affinity,
                 tuple(sorted(pod.requests.items())), pod.scheduler_name, pod.required_anti_affinity,
                 pod.required_affinity, pod.hard_spread, pod.soft_spread)
        return id(destinations), id(rule), alike, domains, shape

    def answer(self, key: Hashable, version: int, pod: PodRecord, destinations: Sequence[str],
               search: Search) -> FitResult | None:
        """`pod`'s answer from an alike failed search at this `version`, or None when there is none to work from."""
        failed = self._failed.get(key)
        if failed is None or failed.version != version:
            return None
        members = self._destinations[id(destinations)][1]
        mine, theirs = pod.node_name, failed.pod.node_name
        if mine == theirs:
            return failed.answer
        counts = Counter(failed.answer.rejections)
        if theirs in members:  # the other pod's own node: a destination for this one
            here = search(pod, (theirs,))
            if here.node is not None:
                return here  # every other node refuses it as it refused the other pod: the one that takes it
            counts[CURRENT_NODE] -= 1
            counts.update(here.rejections)
        if mine in members:  # this pod's own node, a destination the other pod was refused
            there = search(failed.pod, (mine,))
            if there.node is not None:
                return None  # not the answer it was given: search in full
            counts.subtract(there.rejections)
            counts[CURRENT_NODE] += 1
        if any(n < 0 for n in counts.values()):
            return None  # a node answered apart from what the other pod's search counted: search in full
        return no_fit(failed.answer.total, {why: n for why, n in counts.items() if n > 0})

    def remember(self, key: Hashable, version: int, pod: PodRecord, answer: FitResult) -> None:
        if answer.node is None and answer.rejections:
            self._failed[key] = _Failed(version, pod, answer)
