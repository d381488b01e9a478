"""Hard topology spread for nodeFit: kube-scheduler's PodTopologySpread filter for `whenUnsatisfiable:
DoNotSchedule` constraints. A pod may go to a node only if, for each such constraint,

    matching pods in the node's domain (+1 if the pod matches itself) - the fewest in any domain <= maxSkew

where domains are the values of `topologyKey` on the eligible nodes (nodes carrying every key the pod's
constraints use; with `nodeAffinityPolicy: Honor`, the default, only nodes the pod's node selection accepts;
with `nodeTaintsPolicy: Honor` only nodes whose taints it tolerates), matching pods are the non-terminating pods
of the pod's namespace the selector matches, and with fewer domains than `minDomains` the fewest counts as 0.

A pod declaring no constraint gets its scheduler's default constraints (default_spread.py) when the index is
given the policy's scheduler settings: the scheduler filters and scores it with those.

The moving pod is not counted (it is being evicted), and pods planned to move this cycle count at their
destination, not where they are: that lowers their old domain, which can only make the check stricter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from remediator.model.records import DefaultsOf, Effect, LabelSelector, NodeRecord, PodRecord, SpreadConstraint
from remediator.scheduling.default_spread import default_spread, filter_skew
from remediator.scheduling.selectors import matches_labels, pod_fits_node_selection
from remediator.scheduling.tolerations import untolerated
from remediator.state.snapshot import Snapshot

_BLOCKING = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)


def _eligible(pod: PodRecord, node: NodeRecord, keys: set[str], c: SpreadConstraint) -> bool:
    if not keys <= node.labels.keys():
        return False
    if c.honor_node_affinity and not pod_fits_node_selection(pod, node):
        return False
    return not c.honor_node_taints or not untolerated(pod.tolerations, node.taints, _BLOCKING)


@dataclass
class _Tally:
    """Pods matching one selector in one namespace, per domain of one set of eligible nodes (the mover too), and
    how many domains hold each count: skews are then read from a few distinct counts instead of every domain
    (a hostname constraint has as many domains as nodes). Sparse: a domain holding no matching pod need not be in
    `counts`, so building one costs the workload's pods, not the cluster's nodes."""

    namespace: str
    selector: LabelSelector
    domain_of: dict[str, str]  # eligible node -> its domain
    domains: frozenset[str]  # every eligible domain
    counts: dict[str, int]  # domain -> matching pods; absent: 0
    hist: Counter[int]  # count -> domains holding it

    @classmethod
    def of(cls, namespace: str, selector: LabelSelector, domain_of: dict[str, str], domains: frozenset[str],
           counts: dict[str, int]) -> _Tally:
        hist = Counter(counts.values())
        hist[0] += len(domains) - len(counts)
        return cls(namespace, selector, domain_of, domains, counts, hist)

    def move(self, old: str | None, new: str | None) -> None:
        for domain, step in ((old, -1), (new, 1)):
            if domain is not None:
                n = self.counts.get(domain, 0)
                self.hist[n] -= 1
                self.hist[n + step] += 1
                self.counts[domain] = n + step

    def extremes(self, minus: str | None = None, plus: str | None = None) -> tuple[int, int]:
        """(most, fewest) pods in a domain, as if one pod left `minus` and one arrived in `plus`."""
        # Apply the (at most two) virtual changes to the histogram of distinct counts.
        virtual = {k: v for k, v in self.hist.items() if v > 0}
        adjusted: dict[str, int] = {}
        for domain, step in ((minus, -1), (plus, 1)):
            if domain is None:
                continue
            n = adjusted.get(domain, self.counts.get(domain, 0))
            virtual[n] = virtual.get(n, 0) - 1
            virtual[n + step] = virtual.get(n + step, 0) + 1
            adjusted[domain] = n + step
        present = [k for k, v in virtual.items() if v > 0]
        return (max(present), min(present)) if present else (0, 0)


class SpreadIndex:
    """Built once per planning cycle; `add` records a planned move (and `remove` takes one back).

    Tallies are kept per (namespace, selector, eligible nodes) — what the replicas of one workload share — and
    moved incrementally as the plan moves pods, so a cycle planning thousands of moves counts each workload once."""

    def __init__(self, snapshot: Snapshot, defaults_of: DefaultsOf | None = None) -> None:
        self._snapshot, self._nodes = snapshot, snapshot.nodes
        self._defaults_of = defaults_of  # schedulerName -> its default constraints; None: declared ones only
        self._defaults: dict[str, tuple[tuple[SpreadConstraint, ...], tuple[SpreadConstraint, ...]]] = {}  # by uid
        self._moved: dict[str, str] = {}  # pod uid -> destination
        self._arrivals: dict[str, PodRecord] = {}  # moved pods that are not live (their replacements will be)
        self._tallies: dict[tuple[object, ...], _Tally] = {}
        self._by_namespace: dict[str, list[_Tally]] = {}
        # per shape: eligible node -> domain, and the domains
        self._domains = snapshot.derived.spread_domains.on(self._nodes)  # kept across cycles on the same nodes

    def add(self, pod: PodRecord, node: str) -> None:
        self._shift(pod, self._counted_on(pod), node)
        self._moved[pod.uid] = node
        if not pod.live:
            self._arrivals[pod.uid] = pod

    def remove(self, pod: PodRecord) -> None:
        """Undo `add` (a trial placement that was given up)."""
        node = self._moved.pop(pod.uid, None)
        self._arrivals.pop(pod.uid, None)
        if node is not None:
            self._shift(pod, node, self._counted_on(pod))

    def _counted_on(self, pod: PodRecord) -> str | None:
        """The node the pod counts on: where the plan sends it, else where it runs. A Failed, Succeeded or
        terminating pod counts nowhere (the scheduler counts live pods only) until the plan places its replacement."""
        return self._moved.get(pod.uid, pod.node_name if pod.live else None)

    def _shift(self, pod: PodRecord, old: str | None, new: str | None) -> None:
        for t in self._by_namespace.get(pod.namespace, ()):
            if matches_labels(t.selector, pod.labels):
                t.move(_domain(t.domain_of, old), _domain(t.domain_of, new))

    def _tally(self, pod: PodRecord, c: SpreadConstraint, constraints: tuple[SpreadConstraint, ...],
               selector: LabelSelector) -> _Tally:
        """Matching pods per eligible domain (the pod itself counted where it is, or where it is planned to go).
        Eligible nodes carry every topology key of `constraints` (the pod's hard ones, or its soft ones, as the
        scheduler's filter and its score each count them)."""
        shape, domain_of, domains = self._eligible_domains(pod, c, constraints)
        tally = self._tallies.get((pod.namespace, selector, shape))
        if tally is None:
            counts: dict[str, int] = {}
            arrivals = [p for p in self._arrivals.values() if p.namespace == pod.namespace]
            for p in [*self._selectable(pod.namespace, selector), *arrivals]:
                if matches_labels(selector, p.labels):
                    value = _domain(domain_of, self._counted_on(p))
                    if value is not None:
                        counts[value] = counts.get(value, 0) + 1
            tally = self._tallies[(pod.namespace, selector, shape)] = _Tally.of(pod.namespace, selector, domain_of,
                                                                                domains, counts)
            self._by_namespace.setdefault(pod.namespace, []).append(tally)
        return tally

    def _selectable(self, namespace: str, selector: LabelSelector) -> list[PodRecord]:
        """The live pods of `namespace` (a constraint only ever counts pods of its own) that carry the selector's
        first matchLabels pair, if it has one: a namespace holds many workloads, a selector picks one."""
        live = self._snapshot.live()
        if not selector.match_labels:
            return live.in_namespace(namespace)
        key, value = selector.match_labels[0]
        return live.labelled(namespace, key, value)

    def _here(self, pod: PodRecord, tally: _Tally) -> str | None:
        """The domain the pod counts in now (where it is, or where the plan sends it), if it counts at all."""
        if not matches_labels(tally.selector, pod.labels):
            return None
        return _domain(tally.domain_of, self._counted_on(pod))

    def _spread_of(self, pod: PodRecord) -> tuple[tuple[SpreadConstraint, ...], tuple[SpreadConstraint, ...]]:
        """(hard, soft): the pod's own constraints, else its scheduler's defaults."""
        if pod.hard_spread or pod.soft_spread or self._defaults_of is None:
            return pod.hard_spread, pod.soft_spread
        found = self._defaults.get(pod.uid)
        if found is None:
            found = self._defaults[pod.uid] = default_spread(pod, self._defaults_of)
        return found

    def hard(self, pod: PodRecord) -> tuple[SpreadConstraint, ...]:
        """The DoNotSchedule constraints the scheduler's filter checks for `pod` (its own or its defaults)."""
        return self._spread_of(pod)[0]

    def violation(self, pod: PodRecord, node: NodeRecord) -> str | None:
        """Why `pod` may not go to `node` under its hard spread constraints, or None."""
        return self.filter_for(pod)(node)

    def filter_for(self, pod: PodRecord) -> Callable[[NodeRecord], str | None]:
        """`violation` for one pod, what does not depend on the node worked out once: node fit asks it of every node
        it tries, and nothing moves between those asks (a search reserves nothing)."""
        hard = self._spread_of(pod)[0]
        # Per constraint: its key, and (counts per domain, fewest, the domain the pod counts in, whether it matches)
        checks: list[tuple[str, tuple[dict[str, int], int, str | None, bool] | None]] = []
        for c in hard:
            if c.selector is None:
                checks.append((c.topology_key, None))  # matches no pod: every domain holds 0, the pod does not count
                continue
            tally = self._tally(pod, c, hard, c.selector)
            here = self._here(pod, tally)
            # The scheduler's arithmetic, with the moving pod taken out of where it counts now.
            _, fewest = tally.extremes(minus=here)
            if len(tally.domains) < c.min_domains:
                fewest = 0
            checks.append((c.topology_key, (tally.counts, fewest, here, matches_labels(c.selector, pod.labels))))
        limits = [c.max_skew for c in hard]

        def violation(node: NodeRecord) -> str | None:
            for (key, counted), max_skew in zip(checks, limits, strict=True):
                value = node.labels.get(key)
                if value is None:
                    return "topology spread (node lacks the topology key)"
                if counted is None:
                    continue
                counts, fewest, here, matches_itself = counted
                in_value = counts.get(value, 0) - (1 if here == value else 0)
                if filter_skew(in_value, fewest, matches_itself=matches_itself) > max_skew:
                    return "topology spread"
            return None
        return violation

    def soft_worse(self, pod: PodRecord, node: NodeRecord) -> str | None:
        """For a balance move: would it make one of the pod's `ScheduleAnyway` constraints worse? Worse is a skew
        (most minus fewest matching pods over the eligible domains) above both the current one and maxSkew: the
        scheduler only prefers to honour these, so a move that keeps them within maxSkew, or improves them, is
        fine."""
        soft = self._spread_of(pod)[1]
        for c in soft:
            dst = node.labels.get(c.topology_key)
            if dst is None:
                return "topology spread (node lacks the topology key)"
            if c.selector is None or not matches_labels(c.selector, pod.labels):
                continue  # the pod does not count towards it: moving it changes nothing
            tally = self._tally(pod, c, soft, c.selector)
            src = self._here(pod, tally)
            if src == dst:
                continue
            before = _skew(tally.extremes(), len(tally.domains), c)
            after = _skew(tally.extremes(minus=src, plus=dst if dst in tally.domains else None), len(tally.domains), c)
            if after > max(before, c.max_skew):
                return "topology spread (ScheduleAnyway) made worse"
        return None

    def _eligible_domains(self, pod: PodRecord, c: SpreadConstraint, constraints: tuple[SpreadConstraint, ...],
                          ) -> tuple[tuple[object, ...], dict[str, str], frozenset[str]]:
        """(shape, eligible node -> domain, the domains). Which nodes are eligible depends only on the constraint and
        the pod's node selection and tolerations, which the replicas of one workload share: computed once per
        shape."""
        keys = {k.topology_key for k in constraints}
        shape = (c.topology_key, c.honor_node_affinity, c.honor_node_taints, frozenset(keys),
                 tuple(sorted(pod.node_selector.items())), pod.required_node_affinity, pod.tolerations)

        def eligible() -> tuple[dict[str, str], frozenset[str]]:
            domain_of = {name: n.labels[c.topology_key] for name, n in self._nodes.items()
                         if _eligible(pod, n, keys, c)}
            return domain_of, frozenset(domain_of.values())
        return shape, *self._domains.get(shape, eligible)


def _skew(extremes: tuple[int, int], domains: int, c: SpreadConstraint) -> int:
    most, fewest = extremes
    return most - (fewest if domains >= c.min_domains else 0)


def _domain(domain_of: dict[str, str], node: str | None) -> str | None:
    return domain_of.get(node) if node is not None else None
