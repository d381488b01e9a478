"""What the spread strategy keeps from one run for the next (in the snapshot's `derived`, state/derived.py): the
constraints it found within maxSkew, each with the pods it counted, each workload's default constraints, with the
pod list they were found from, and the domains of each constraint shape.

Why: a settled cluster of 20,000 nodes has 41,000 constraints with more matching pods than maxSkew, almost all within
it; matching their pods to domains again every cycle cost 0.9 s of a 11 s steady cycle, finding every workload's
defaults 0.5 s, every shape's domains 0.4 s (`make bench-steady`). They read only what is compared here: which nodes
are Ready and their labels and taints (their domains and which ones a constraint includes: state/derived.py,
`Placement`; not the node's status, which its kubelet reports again every few minutes), the pods (the very
records, or equal ones), the strategy's arguments and the scheduler's defaults. A constraint counted over the same
pods on the same nodes, none of them moved by this plan, is within maxSkew again.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

from remediator.model.records import NodeRecord, PodRecord
from remediator.state.derived import PerList, Placement, placement_of
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint

OwnerDefaults = tuple[str, tuple[Constraint, ...]]  # a workload's namespace and default constraints


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
    # constraint -> the pods it counted when they were within maxSkew; `_now` holds those used by the current run,
    # `_last` those of the run before (an entry no run uses is forgotten after one more)
    _now: dict[Hashable, tuple[PodRecord, ...]] = field(default_factory=dict)
    _last: dict[Hashable, tuple[PodRecord, ...]] = field(default_factory=dict)
    domains: dict[Hashable, Domains] = field(default_factory=dict)  # shape -> its domains on those nodes
    # owner uid -> its namespace and default constraints (None: not in scope), found from its pod list under one
    # context (the nodes' placement, arguments, defaults)
    defaults: PerList[OwnerDefaults | None] = field(default_factory=PerList)

    def run_on(self, nodes: Mapping[str, NodeRecord]) -> KeptSpreads:
        """Start a run on `nodes`: what was kept serves again only when they are the same nodes, equal in what
        placement reads of them (a node's status report alone changes none of it)."""
        placement = placement_of(nodes)
        if placement != self.placement:
            self._now.clear()
            self._last.clear()
            self.domains.clear()
            self.placement = placement
        self.nodes = nodes
        self._last, self._now = self._now, {}
        return self

    def balanced(self, constraint: Hashable, pods: tuple[PodRecord, ...]) -> bool:
        """The constraint was within maxSkew on exactly these pods (the caller checks none of them moved since)."""
        kept = self._now.get(constraint)
        if kept is None and (kept := self._last.get(constraint)) is not None:
            self._now[constraint] = kept
        return kept == pods

    def remember_balanced(self, constraint: Hashable, pods: tuple[PodRecord, ...]) -> None:
        self._now[constraint] = pods
