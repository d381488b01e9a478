"""RemovePodsViolatingTopologySpreadConstraint: move pods out of the domains their spread constraints overfill.

descheduler's algorithm (docs/balance-strategies.md lists each difference and why):
1. per namespace, the distinct spread constraints of the pods in scope whose `whenUnsatisfiable` is listed in
   `constraints` (matchLabelKeys folded into the selector; node inclusion policies with the declaring pod's node
   selection and tolerations);
2. per constraint, the domains are the values of `topologyKey` on the Ready nodes it includes; balanced when the
   fullest and the emptiest domain differ by at most maxSkew;
3. otherwise, domains sorted by matching pods, two cursors (emptiest i, fullest j above the ideal average): move
   `min(ceil(count_j - avg), ceil(avg - count_i), ceil((skew - maxSkew) / 2))` pods out of j, as if to i, until
   every remaining pair is within maxSkew; the pods moved first have no node selection.
A pod that declares no constraint gets its scheduler's default constraints (scheduling/default_spread.py: the
policy's `scheduler.defaultConstraints` for the profile that runs nodemedic's configuration, kube-scheduler's
system defaults for an unconfigured one), as kube-scheduler gives them: one constraint set per workload (its
ReplicaSet, StatefulSet or ReplicationController), filtered by `constraints` like a declared one. descheduler reads
declared constraints only, so a plain Deployment is never rebalanced there (its #609, #1502).
nodemedic's changes: then the lowest priority first (descheduler's sort pops the highest: `tsc-order`); the pods
counted are every live matching pod, as kube-scheduler counts them, not only the evictable ones in scope
(`tsc-count`); a pod is evicted only when a node of a domain below the ideal average takes it (node fit with the
scheduler's own spread filter) and that domain ends with fewer matching pods than the one it leaves, whatever
topologyBalanceNodeFit says (`tsc-place`): no eviction the scheduler would answer by putting the pod back. The
cycle gate adds PDBs, the loop guard, zone spread and the limits.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from functools import partial

from remediator.model.plan import PlannedEviction
from remediator.model.records import NodeRecord, PodRecord, SpreadConstraint
from remediator.planning.gate import CYCLE, Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.policy.scheduler import SchedulerSettings
from remediator.scheduling.default_spread import default_spread
from remediator.scheduling.selectors import matches_labels
from remediator.state.live_pods import LivePods
from remediator.state.snapshot import Snapshot
from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import (
    DO_NOT_SCHEDULE,
    SCHEDULE_ANYWAY,
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint
from remediator.strategies.remove_pods_violating_topology_spread_constraint.kept import (
    Domains,
    Intern,
    KeptSpreads,
    OwnerDefaults,
)

NAME = "RemovePodsViolatingTopologySpreadConstraint"
KIND = "balance"

BALANCED = "balanced"  # _balance: the constraint was within maxSkew, nothing to move


def plan(snapshot: Snapshot, args: RemovePodsViolatingTopologySpreadConstraintArgs, gate: Gate) -> Wants:
    if gate.view.exhausted():
        return NOTHING
    nodes = {n: rec for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting}
    kept = snapshot.derived.kept_by(NAME, KeptSpreads).run_on(nodes)
    spreading = snapshot.notable().spreading
    declared = kept.declared(spreading, args, partial(_declared, nodes, spreading, args, kept))
    constraints = {namespace: list(found) for namespace, found in declared.items()}
    for namespace, found in _defaulted(snapshot, kept, args, gate.view.scheduler).items():
        constraints.setdefault(namespace, []).extend(found)
    _balance_each(gate, kept, snapshot.live(), constraints, args)
    return NOTHING


def _balance_each(gate: Gate, kept: KeptSpreads, live: LivePods, constraints: dict[str, list[Constraint]],
                  args: RemovePodsViolatingTopologySpreadConstraintArgs) -> None:
    """Each constraint balanced in turn, until the cycle's limits stop the plan; one found within maxSkew on the same
    pods and nodes as in the last run, none of its pods moved since, is so again (kept.py)."""
    nodes = kept.nodes
    rooms: dict[Hashable, tuple[str, ...]] = {}  # shape -> its nodes roomiest first, this plan
    moved_to = gate.view.moved_to  # grows with this strategy's own moves
    moved = _MovedNamespaces(gate)
    for namespace, found in constraints.items():
        for c in found:
            pods = _selectable(live, namespace, c.spread)  # the pods the scheduler counts
            if len(pods) <= c.spread.max_skew:
                continue  # no domain can hold more than maxSkew above another: most workloads under the defaults
            unmoved = namespace not in moved or moved_to.keys().isdisjoint(p.uid for p in pods)
            if unmoved and kept.balanced(c, pods):
                continue
            shape = c.shape()
            domains = _domains(kept, c, shape)
            outcome = _balance(gate, domains, pods, c, args, ready=nodes,
                               by_room=partial(_by_room, gate, rooms, shape, domains))
            if outcome == CYCLE:
                return
            if outcome == BALANCED and unmoved:
                kept.remember_balanced(c, pods)


class _MovedNamespaces:
    """The namespaces of the pods moved so far, this plan's and those under way (the pods `moved_to` names): a
    constraint's pods are of its namespace, so one of a namespace without a moved pod has none of its pods moved,
    answered without walking their uids (at 20,000 nodes, 40,000 constraints a cycle)."""

    def __init__(self, gate: Gate) -> None:
        self._view = gate.view
        self._names = {p.namespace for p, _ in self._view.leaving}
        self._planned = 0  # the planned evictions already counted (the list only grows while strategies plan)

    def __contains__(self, namespace: str) -> bool:
        planned = self._view.planned
        if len(planned) > self._planned:
            self._names.update(e.pod.namespace for e in planned[self._planned:])
            self._planned = len(planned)
        return namespace in self._names


def _selectable(live: LivePods, namespace: str, s: SpreadConstraint) -> list[PodRecord]:
    """The live pods the constraint's selector could match: those of the namespace carrying its first matchLabels
    pair (a namespace holds many workloads, a constraint selects one), or all of the namespace's."""
    if s.selector is None or not s.selector.match_labels:
        return live.in_namespace(namespace)
    key, value = s.selector.match_labels[0]
    return live.labelled(namespace, key, value)


def _declared(nodes: Mapping[str, NodeRecord], spreading: Mapping[str, list[PodRecord]],
              args: RemovePodsViolatingTopologySpreadConstraintArgs, kept: KeptSpreads) -> dict[str, list[Constraint]]:
    """namespace -> the constraints declared by its live pods on `nodes` (node by node in name order), namespaces in
    name order."""
    declaring: dict[str, list[PodRecord]] = {}
    for node in sorted(nodes):
        for p in spreading.get(node, ()):
            if p.live:
                declaring.setdefault(p.namespace, []).append(p)
    return {ns: kept.declared_in(ns, pods, partial(_constraints, pods, args)) for ns, pods in sorted(declaring.items())}


def _constraints(pods: list[PodRecord], args: RemovePodsViolatingTopologySpreadConstraintArgs,
                 intern: Intern) -> list[Constraint]:
    """The distinct constraints the namespace's pods in scope declare, in the order first seen (each the object
    `intern` gives it, kept.py)."""
    found: dict[tuple[object, ...], Constraint] = {}
    # The very objects a pod's constraints are found from (replicas share them: state/sharing.py): a pod holding the
    # same ones as a pod before it finds only constraints already found.
    templates: set[tuple[int, ...]] = set()
    for pod in pods:
        if not (pod.hard_spread or pod.soft_spread) or not args.scope.selects(pod):
            continue
        template = (id(pod.hard_spread), id(pod.soft_spread), id(pod.node_selector), id(pod.required_node_affinity),
                    id(pod.tolerations))
        if template in templates:
            continue
        templates.add(template)
        for when, spreads in ((DO_NOT_SCHEDULE, pod.hard_spread), (SCHEDULE_ANYWAY, pod.soft_spread)):
            if when not in args.constraints:
                continue
            for s in spreads:
                if s.selector is None:
                    continue  # matches no pod: every domain holds 0
                identity = (s, when,
                            (tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)
                            if s.honor_node_affinity else None,
                            pod.tolerations if s.honor_node_taints else None)
                if identity not in found:
                    found[identity] = intern(identity, s, when, pod)
    return list(found.values())


def _defaulted(snapshot: Snapshot, kept: KeptSpreads, args: RemovePodsViolatingTopologySpreadConstraintArgs,
               scheduler: SchedulerSettings) -> dict[str, list[Constraint]]:
    """namespace -> the default constraints of its workloads whose pods declare none, one set per workload (its
    pods share their template: the first live one on a Ready node speaks for all). A namespace comes in the order of
    its first workload in scope, with default constraints or not: that order is the order they are balanced in."""
    nodes = kept.nodes
    whens = [w for w in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY) if w in args.constraints]

    def of_owner(pods: list[PodRecord]) -> OwnerDefaults | None:
        pod = next((p for p in pods if p.live and p.node_name in nodes), None)
        if pod is None or not args.scope.selects(pod) or not whens:
            return None
        hard, soft = default_spread(pod, scheduler.constraints_for)
        spreads = {DO_NOT_SCHEDULE: hard, SCHEDULE_ANYWAY: soft}
        return pod.namespace, tuple(Constraint(s, when, pod) for when in whens for s in spreads[when])

    found: dict[str, list[Constraint]] = {}
    per_owner = kept.defaults.within((kept.placement, args, scheduler))
    for owner, pods in snapshot.pods_by_owner.items():
        if (defaults := per_owner.get(owner, pods, of_owner, alike=_same_defaults)) is not None:
            found.setdefault(defaults[0], []).extend(defaults[1])
    if len(per_owner) > len(snapshot.pods_by_owner):  # every owner has its entry now: the others are gone
        per_owner.keep_only(snapshot.pods_by_owner)
    return found


def _same_defaults(kept: OwnerDefaults | None, found: OwnerDefaults | None) -> bool:
    """A workload's default constraints found again alike: the same spreads in the same shapes (a new status of the
    pod they were found from changes neither), so the kept objects, and what is kept by them, stand."""
    if kept is None or found is None:
        return kept is found
    return kept[0] == found[0] and len(kept[1]) == len(found[1]) and all(
        a.spread == b.spread and a.when == b.when and a.shape() == b.shape()
        for a, b in zip(kept[1], found[1], strict=True))


def _balance(gate: Gate, domains: Domains, pods: list[PodRecord], c: Constraint,
             args: RemovePodsViolatingTopologySpreadConstraintArgs, *, ready: Mapping[str, NodeRecord],
             by_room: Callable[[], tuple[str, ...]]) -> str | None:
    """Moves out of the constraint's overfilled domains, each to a node `by_room` names (its domains' nodes, roomiest
    first); BALANCED when within maxSkew, CYCLE when the plan's limits end the cycle."""
    s = c.spread
    members = _members(domains, pods, s, gate.view.moved_to, ready)
    start = {d: len(ps) for d, ps in members.items()}
    unbalanced = _unbalanced(domains, start, s.max_skew)
    if unbalanced is None:
        return BALANCED
    order, average = unbalanced
    live = Counter(start)  # matching pods per domain once this cycle's moves are done

    def better_domain(pod: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
        src, dst = domains.of.get(pod.node_name), domains.of.get(node.name)
        if src is None or dst is None or start.get(dst, 0) >= average:
            return f"not in a {s.topology_key} domain below the average"
        if live[dst] + 1 >= live[src]:
            return f"{s.topology_key}={dst} would hold as many matching pods as {src}"
        return None

    for source, target, count in descheduler_moves([(d, live[d]) for d in order], average, s.max_skew):
        moved = 0
        for pod in _eviction_candidates([p for p in members.get(source, []) if p.uid not in gate.view.moved_to], args):
            if moved == count:
                break
            reason = (f"{c.when} spread on {s.topology_key}: {source} holds {live[source]} matching pods, "
                      f"{target} {live[target]} (maxSkew {s.max_skew})")
            # better_domain reads only the pod's domain, and its counts change only with a planned move
            outcome = gate.move(PlannedEviction(pod, NAME, reason), by_room(), accept=better_domain,
                                alike=domains.of.get(pod.node_name))
            if outcome.evicted and outcome.destination is not None:
                moved += 1
                live[source] -= 1
                live[domains.of[outcome.destination]] += 1
            elif outcome.stop == CYCLE:
                return CYCLE
    return None


def _members(domains: Domains, pods: list[PodRecord], s: SpreadConstraint, moved_to: Mapping[str, str | None],
             ready: Mapping[str, NodeRecord]) -> dict[str, list[PodRecord]]:
    """domain -> the matching pods in it, those an earlier strategy moves this cycle where they are going (gone
    when that is not known); a domain without any is absent. Only pods on `ready` nodes (Ready, not being deleted)
    count."""
    members: dict[str, list[PodRecord]] = {}
    if s.selector is not None:
        # id of a labels dict -> the selector matches it: a workload's replicas share one (state/sharing.py), and
        # their pods keep it alive for the whole loop
        matched: dict[int, bool] = {}
        for pod in pods:
            if pod.node_name not in ready:
                continue
            node = moved_to.get(pod.uid, pod.node_name)  # None: moved, destination unknown
            domain = domains.of.get(node) if node is not None else None
            if domain is None:
                continue
            labels = pod.labels
            if (matches := matched.get(id(labels))) is None:
                matches = matched[id(labels)] = matches_labels(s.selector, labels)
            if matches:
                members.setdefault(domain, []).append(pod)
    return members


def _unbalanced(domains: Domains, start: dict[str, int], max_skew: int) -> tuple[list[str], float] | None:
    """None when the constraint is within maxSkew, else (domains emptiest first, ideal average)."""
    if len(domains.names) < 2:
        return None
    fewest = min(start.values()) if len(start) == len(domains.names) else 0
    if max(start.values(), default=0) - fewest <= max_skew:
        return None
    total = sum(start.values())
    # Empty domains take at most `total` pods between them: the rest never enter descheduler's arithmetic.
    empty = list(itertools.islice((d for d in domains.names if d not in start), total))
    return empty + sorted(start, key=lambda d: (start[d], d)), total / len(domains.names)


def descheduler_moves(domains: list[tuple[str, int]], average: float,
                      max_skew: int) -> Iterator[tuple[str, str, int]]:
    """descheduler's balanceDomains arithmetic: `domains` (name, matching pods) sorted emptiest first -> (from,
    to, how many) steps, each counted as done before the next (descheduler's book, not what the scheduler does:
    the caller decides each real move)."""
    names = [d for d, _ in domains]
    virtual = [n for _, n in domains]
    i, j = 0, len(domains) - 1
    while i < j:
        if virtual[j] <= average:
            j -= 1
        skew = virtual[j] - virtual[i]
        if skew <= max_skew:
            i += 1
            continue
        count = min(math.ceil(virtual[j] - average), math.ceil(average - virtual[i]),
                    math.ceil((skew - max_skew) / 2))
        if count <= 0:
            i += 1
            continue
        yield names[j], names[i], count
        virtual[j] -= count
        virtual[i] += count


def _by_room(gate: Gate, rooms: dict[Hashable, tuple[str, ...]], shape: Hashable, domains: Domains) -> tuple[str, ...]:
    """The shape's nodes roomiest first (the order node fit tries them), worked out once a plan, when first needed."""
    found = rooms.get(shape)
    if found is None:
        found = rooms[shape] = gate.view.by_room(domains.of)
    return found


def _domains(kept: KeptSpreads, c: Constraint, shape: Hashable) -> Domains:
    found = kept.domains.get(shape)
    if found is None:
        key = c.spread.topology_key
        of = {n: rec.labels[key] for n, rec in kept.nodes.items() if key in rec.labels and c.includes(rec)}
        found = kept.domains[shape] = Domains(of, sorted(set(of.values())))
    return found


def _eviction_candidates(pods: list[PodRecord],
                         args: RemovePodsViolatingTopologySpreadConstraintArgs) -> list[PodRecord]:
    """Pods without node selection first (descheduler's order), then the lowest priority (descheduler's sort, meant
    to, pops the highest first: `tsc-order`)."""
    return sorted((p for p in pods if args.scope.selects(p)),
                  key=lambda p: (bool(p.node_selector or p.required_node_affinity), p.priority is not None,
                                 p.priority or 0, p.name))
