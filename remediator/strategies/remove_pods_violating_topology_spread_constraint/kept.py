"""What the spread strategy keeps from one run for the next (in the snapshot's `derived`, state/derived.py): the
constraints it found within maxSkew, each with the pods it counted, each workload's default constraints, with the
pod list they were found from, and the domains of each constraint shape.

Why: a settled cluster of 20,000 nodes has 41,000 constraints with more matching pods than maxSkew, almost all within
it; matching their pods to domains again every cycle cost 0.9 s of a 11 s steady cycle, finding every workload's
defaults 0.5 s, every shape's domains 0.4 s (`make bench-steady`). They read only what is compared here: which nodes
are Ready and their labels and taints (their domains and which ones a constraint includes: state/derived.py,
`Placement`; not the node's status, which its kubelet reports again every few minutes), the pods (the very
records, or newer ones of the same pods on the same nodes with the same labels: a status report changes a pod's
record, not what is counted), the strategy's arguments and the scheduler's defaults. A constraint counted over the
same pods on the same nodes, none of them moved by this plan, is within maxSkew again.

The constraints the pods declare are found again only when some node's pods declaring one are not the very list of the
last run (a quiet cycle finds none: 0.3 s of it at 20,000 nodes), then only in the namespaces whose declaring pods are
not alike in what constraints are found from (a restart changes a pod's record, not its spread), and a constraint found
again is the object found before for it, so that what is kept of it is looked up by that object, not by hashing its
spread and shape (40,000 lookups a cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from remediator.model.records import NodeRecord, PodRecord, SpreadConstraint
from remediator.state.derived import PerList, Placement, placement_of
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint

OwnerDefaults = tuple[str, tuple[Constraint, ...]]  # a workload's namespace and default constraints
# (what tells a declared constraint apart, its spread, whenUnsatisfiable, the pod declaring it) -> its object
Intern = Callable[[Hashable, SpreadConstraint, str, PodRecord], Constraint]


@dataclass(frozen=True)
class Declared:
    """One namespace's declaring pods (node by node), the constraints found from them, each one's object by what
    tells it apart."""

    pods: list[PodRecord]
    constraints: list[Constraint]
    objects: dict[Hashable, Constraint]


@dataclass(frozen=True)
class Domains:
    """The nodes of one constraint shape (Constraint.shape): each one's domain, and the domains sorted."""

    of: dict[str, str]  # included node -> its domain
    names: list[str]


@dataclass
class KeptSpreads:
    nodes: Mapping[str, NodeRecord] = field(default_factory=dict)  # the Ready nodes of this run
    # what placement reads of the Ready nodes all of this was found on (one object while it stays equal)
    placement: dict[str, Placement] = field(default_factory=dict)
    # id of a constraint -> it and the pods it counted when they were within maxSkew; `_now` holds those used by the
    # current run, `_last` those of the run before (an entry no run uses is forgotten after one more)
    _now: dict[int, tuple[Constraint, list[PodRecord]]] = field(default_factory=dict)
    _last: dict[int, tuple[Constraint, list[PodRecord]]] = field(default_factory=dict)
    domains: dict[Hashable, Domains] = field(default_factory=dict)  # shape -> its domains on those nodes
    # owner uid -> its namespace and default constraints (None: not in scope), found from its pod list under one
    # context (the nodes' placement, arguments, defaults)
    defaults: PerList[OwnerDefaults | None] = field(default_factory=PerList)
    # namespace -> its declaring pods, the constraints found from them and each one's object by what tells it apart:
    # of this find (`_declaring_now`) and of the last one
    _declaring_now: dict[str, Declared] = field(default_factory=dict)
    _declaring_last: dict[str, Declared] = field(default_factory=dict)
    # the pods declaring a constraint per node, and the arguments, the declared constraints were last found from
    _declared_from: tuple[Mapping[str, list[PodRecord]], object] | None = None
    _declared: dict[str, list[Constraint]] = field(default_factory=dict)  # namespace -> them, in the order found

    def run_on(self, nodes: Mapping[str, NodeRecord]) -> KeptSpreads:
        """Start a run on `nodes`: what was kept serves again only when they are the same nodes, equal in what
        placement reads of them (a node's status report alone changes none of it)."""
        placement = placement_of(nodes)
        if placement != self.placement:
            self._now.clear()
            self._last.clear()
            self.domains.clear()
            self._declared_from = None
            self.placement = placement
        self.nodes = nodes
        self._last, self._now = self._now, {}
        return self

    def declared(self, spreading: Mapping[str, list[PodRecord]], args: object,
                 find: Callable[[], dict[str, list[Constraint]]]) -> dict[str, list[Constraint]]:
        """namespace -> the constraints its pods declare: `find()` again unless every node's pods declaring one
        (`spreading`, Snapshot.notable) are the very lists they were found from, under equal `args`. Not to be
        changed: it is served again."""
        last = self._declared_from
        if last is None or last[1] != args or not _same_lists(last[0], spreading):
            if last is None or last[1] != args:
                self._declaring_now = {}
            self._declaring_last, self._declaring_now = self._declaring_now, {}
            self._declared = find()
            self._declared_from = (spreading, args)
        return self._declared

    def declared_in(self, namespace: str, pods: list[PodRecord],
                    find: Callable[[Intern], list[Constraint]]) -> list[Constraint]:
        """Within `declared`'s find: the constraints a namespace's declaring `pods` declare, those of the last find
        when its pods are alike in all constraints are found from, else `find(intern)`, where `intern` gives each
        constraint the object the last find gave it."""
        last = self._declaring_last.get(namespace)
        if last is not None and _declare_alike(last.pods, pods):
            self._declaring_now[namespace] = last
            return last.constraints
        before = last.objects if last is not None else {}
        objects: dict[Hashable, Constraint] = {}

        def intern(identity: Hashable, spread: SpreadConstraint, when: str, pod: PodRecord) -> Constraint:
            found = objects.get(identity)
            if found is None:
                found = objects[identity] = before.get(identity) or Constraint(spread, when, pod)
            return found
        constraints = find(intern)
        self._declaring_now[namespace] = Declared(pods, constraints, objects)
        return constraints

    def balanced(self, constraint: Constraint, pods: list[PodRecord]) -> bool:
        """The constraint was within maxSkew on these pods, as balancing reads them (the caller checks none of them
        moved since)."""
        kept = self._now.get(id(constraint)) or self._last.get(id(constraint))
        if kept is None or kept[0] is not constraint:
            return False
        if kept[1] is not pods:
            if not _counted_alike(kept[1], pods):
                return False
            # Kept with these pods: the next run compares with them, not with a list further behind every cycle
            # (which costs more to compare each cycle as more of its records are replaced).
            kept = (constraint, pods)
        self._now[id(constraint)] = kept
        return True

    def remember_balanced(self, constraint: Constraint, pods: list[PodRecord]) -> None:
        self._now[id(constraint)] = (constraint, pods)


def _counted_alike(kept: list[PodRecord], pods: list[PodRecord]) -> bool:
    """The same pods where balancing reads them: each the very record, or a newer one of the same pod (its uid) on
    the same node with equal labels, in any order. A pod's status (restarts, conditions) is most of what changes a
    record, and the counts read none of it. A new record takes its old one's place in the live pods' lists
    (state/live_pods.py): compared position by position first."""
    if len(kept) != len(pods):
        return False
    if all(a is b or (a.uid == b.uid and a.node_name == b.node_name and a.labels == b.labels)
           for a, b in zip(kept, pods, strict=True)):
        return True
    were = {p.uid: p for p in kept}
    return all((q := were.get(p.uid)) is not None and (q is p or (q.node_name == p.node_name and q.labels == p.labels))
               for p in pods)


def _declare_alike(kept: list[PodRecord], pods: list[PodRecord]) -> bool:
    """The same pods in the same order where finding constraints reads them: each the very record, or one holding
    the very spread, node selection, toleration and label objects (replicas share them: state/sharing.py; a new
    status of a pod keeps them)."""
    return len(kept) == len(pods) and all(
        a is b or (a.hard_spread is b.hard_spread and a.soft_spread is b.soft_spread and a.labels is b.labels
                   and a.node_selector is b.node_selector and a.required_node_affinity is b.required_node_affinity
                   and a.tolerations is b.tolerations)
        for a, b in zip(kept, pods, strict=True))


def _same_lists(kept: Mapping[str, list[PodRecord]], now: Mapping[str, list[PodRecord]]) -> bool:
    return len(kept) == len(now) and all(now.get(key) is pods for key, pods in kept.items())
