"""What RemovePodsViolatingInterPodAntiAffinity keeps from one run for the next (in the snapshot's `derived`,
state/derived.py): per node, its anti-affinity holders that need a look, with the pod list they were found from.

Why: a settled cluster of 20,000 nodes has 55,000 pods holding required anti-affinity, almost all of them with a
hostname term that no pod on their node violates; checking each again every cycle cost about 0.8 s of a steady cycle
(`make bench-steady`). A holder whose every term's domain is its own node alone reads only that node's pods: found
clear of violators (none counted as gone), it is clear again while the node's pod list is the very same list, the
Ready nodes are the same in placement (which nodes share a domain: state/derived.py, `Placement`) and the scope is
the same. A holder with a larger domain (a zone), or a violated one, is looked at every run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from remediator.model.records import NodeRecord, PodRecord
from remediator.state.derived import Placement, placement_of
from remediator.strategies.pod_scope import PodScope


@dataclass
class KeptAntiAffinity:
    placement: dict[str, Placement] = field(default_factory=dict)  # of the Ready nodes the answers were found on
    scope: PodScope | None = None
    # node -> (the pod list its holders were found from, those that need a look, in eviction order)
    _kept: dict[str, tuple[list[PodRecord], tuple[PodRecord, ...]]] = field(default_factory=dict)

    def run_on(self, nodes: Sequence[NodeRecord], scope: PodScope) -> KeptAntiAffinity:
        """Start a run: what was kept serves again only on nodes equal in placement, under the same scope. (A node
        gone or no longer Ready changes the placement: nothing kept outlives the nodes it was found on.)"""
        placement = placement_of({n.name: n for n in nodes})
        if placement != self.placement or scope != self.scope:
            self._kept.clear()
            self.placement, self.scope = placement, scope
        return self

    def needing_a_look(self, node: str, pods: list[PodRecord],
                       find: Callable[[], tuple[PodRecord, ...]]) -> tuple[PodRecord, ...]:
        """`find()`, the node's holders that need a look, worked out again only for another pod list."""
        kept = self._kept.get(node)
        if kept is not None and kept[0] is pods:
            return kept[1]
        found = find()
        self._kept[node] = (pods, found)
        return found
