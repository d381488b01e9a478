"""Hard topology spread for nodeFit: kube-scheduler's PodTopologySpread filter for `whenUnsatisfiable:
DoNotSchedule` constraints. A pod may go to a node only if, for each such constraint,

    matching pods in the node's domain (+1 if the pod matches itself) - the fewest in any domain <= maxSkew

where domains are the values of `topologyKey` on the eligible nodes (nodes carrying every key the pod's
constraints use; with `nodeAffinityPolicy: Honor`, the default, only nodes the pod's node selection accepts;
with `nodeTaintsPolicy: Honor` only nodes whose taints it tolerates), matching pods are the non-terminating pods
of the pod's namespace the selector matches, and with fewer domains than `minDomains` the fewest counts as 0.

The moving pod is not counted (it is being evicted), and pods planned to move this cycle count at their
destination, not where they are: that lowers their old domain, which can only make the check stricter.
"""

from __future__ import annotations

from dataclasses import dataclass

from remediator.defaultevictor import TERMINAL_PHASES
from remediator.model import Effect, LabelSelector, NodeRecord, PodRecord, Snapshot, SpreadConstraint
from remediator.selectors import matches_labels, pod_fits_node_selection
from remediator.tolerations import untolerated

_BLOCKING = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)


def _eligible(pod: PodRecord, node: NodeRecord, keys: set[str], c: SpreadConstraint) -> bool:
    if not keys <= node.labels.keys():
        return False
    if c.honor_node_affinity and not pod_fits_node_selection(pod, node):
        return False
    return not c.honor_node_taints or not untolerated(pod.tolerations, node.taints, _BLOCKING)


@dataclass
class _Tally:
    """Pods matching one selector in one namespace, per domain of one set of eligible nodes (the mover too)."""

    namespace: str
    selector: LabelSelector
    domain_of: dict[str, str]  # eligible node -> its domain
    counts: dict[str, int]


class SpreadIndex:
    """Built once per planning cycle; `add` records a planned move (and `remove` takes one back).

    Tallies are kept per (namespace, selector, eligible nodes) — what the replicas of one workload share — and
    moved incrementally as the plan moves pods, so a cycle planning thousands of moves counts each workload once."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot, self._nodes = snapshot, snapshot.nodes
        self._pods: dict[str, list[PodRecord]] | None = None  # by namespace, collected on the first check
        self._moved: dict[str, str] = {}  # pod uid -> destination
        self._tallies: dict[tuple[object, ...], _Tally] = {}
        self._by_namespace: dict[str, list[_Tally]] = {}
        self._domains: dict[tuple[object, ...], dict[str, str]] = {}  # eligible node -> domain, per shape

    def add(self, pod: PodRecord, node: str) -> None:
        self._shift(pod, self._moved.get(pod.uid, pod.node_name), node)
        self._moved[pod.uid] = node

    def remove(self, pod: PodRecord) -> None:
        """Undo `add` (a trial placement that was given up)."""
        node = self._moved.pop(pod.uid, None)
        if node is not None:
            self._shift(pod, node, pod.node_name)

    def _shift(self, pod: PodRecord, old: str, new: str) -> None:
        for t in self._by_namespace.get(pod.namespace, ()):
            if not matches_labels(t.selector, pod.labels):
                continue
            before, after = t.domain_of.get(old), t.domain_of.get(new)
            if before is not None:
                t.counts[before] -= 1
            if after is not None:
                t.counts[after] += 1

    def _domain_counts(self, pod: PodRecord, i: int, c: SpreadConstraint) -> dict[str, int]:
        """Matching pods per eligible domain, `pod` itself not counted."""
        keys = {k.topology_key for k in pod.hard_spread}
        # Which nodes are eligible depends only on the constraint and the pod's node selection and tolerations,
        # which the replicas of one workload share: computed once per such shape per cycle.
        shape = (c.topology_key, c.honor_node_affinity, c.honor_node_taints, frozenset(keys),
                 tuple(sorted(pod.node_selector.items())), pod.required_node_affinity, pod.tolerations)
        domain_of = self._domains.get(shape)
        if domain_of is None:
            domain_of = {name: n.labels[c.topology_key] for name, n in self._nodes.items()
                         if _eligible(pod, n, keys, c)}
            self._domains[shape] = domain_of
        if c.selector is None:
            return dict.fromkeys(domain_of.values(), 0)
        tally = self._tallies.get((pod.namespace, c.selector, shape))
        if tally is None:
            counts = dict.fromkeys(domain_of.values(), 0)
            if self._pods is None:  # by namespace: a constraint only ever counts pods of its own
                self._pods = {}
                for pods in self._snapshot.pods_by_node.values():
                    for p in pods:
                        if p.phase not in TERMINAL_PHASES and not p.terminating:
                            self._pods.setdefault(p.namespace, []).append(p)
            for p in self._pods.get(pod.namespace, ()):
                if matches_labels(c.selector, p.labels):
                    value = domain_of.get(self._moved.get(p.uid, p.node_name))
                    if value is not None:
                        counts[value] += 1
            tally = self._tallies[(pod.namespace, c.selector, shape)] = _Tally(pod.namespace, c.selector,
                                                                               domain_of, counts)
            self._by_namespace.setdefault(pod.namespace, []).append(tally)
        counts = dict(tally.counts)
        if matches_labels(c.selector, pod.labels):
            here = domain_of.get(self._moved.get(pod.uid, pod.node_name))
            if here is not None:
                counts[here] -= 1
        return counts

    def violation(self, pod: PodRecord, node: NodeRecord) -> str | None:
        """Why `pod` may not go to `node` under its hard spread constraints, or None."""
        for i, c in enumerate(pod.hard_spread):
            value = node.labels.get(c.topology_key)
            if value is None:
                return "topology spread (node lacks the topology key)"
            counts = self._domain_counts(pod, i, c)
            fewest = min(counts.values(), default=0) if len(counts) >= c.min_domains else 0
            itself = 1 if c.selector is not None and matches_labels(c.selector, pod.labels) else 0
            if counts.get(value, 0) + itself - fewest > c.max_skew:
                return "topology spread"
        return None
