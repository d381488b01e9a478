"""What RemoveDuplicates keeps from one run for the next (in the snapshot's `derived`, state/derived.py): for each
replica shape (tolerations, node selection), the Ready nodes that take it, with the nodes they were found on.

Why: at 20,000 nodes the dozen shapes of a settled cluster's duplicates cost 0.5 s of a steady cycle to check against
every node again (`make bench-steady`); whether a node takes a shape reads only the shape and the node's labels,
taints and cordon (state/derived.py, `Placement`), which a node's status reports leave as they were.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from remediator.model.records import NodeRecord, PodRecord
from remediator.state.derived import PerList, Placement, placement_of


@dataclass
class KeptTargets:
    nodes: Mapping[str, NodeRecord] = field(default_factory=dict)  # the Ready nodes of this run
    placement: dict[str, Placement] = field(default_factory=dict)  # what placement reads of those the answers came from
    _takes: dict[Hashable, list[str]] = field(default_factory=dict)  # shape -> the nodes taking it, in name order
    # owner -> whether two of its pods share a node (few do: the others are not looked at), kept with its pod list
    _stacked: PerList[bool] = field(default_factory=PerList)

    def run_on(self, nodes: Mapping[str, NodeRecord]) -> KeptTargets:
        """Start a run on `nodes`: what was kept serves again only when they are the same nodes, equal in what
        placement reads of them (a node's status report alone changes none of it)."""
        placement = placement_of(nodes)
        if placement != self.placement:
            self._takes.clear()
            self.placement = placement
        self.nodes = nodes
        return self

    def taking(self, shape: Hashable, takes: Callable[[NodeRecord], bool]) -> list[str]:
        """The nodes, in name order, for which `takes` (the shape's check) holds."""
        found = self._takes.get(shape)
        if found is None:
            found = self._takes[shape] = sorted(n for n, rec in self.nodes.items() if takes(rec))
        return found

    def stacked(self, owners: Mapping[str, list[PodRecord]]) -> list[list[PodRecord]]:
        """The pod lists of the `owners` (a snapshot's, by owner) with two pods on one node, wherever their pods
        are moved this plan: the 38,000 owners of a 20,000-node cluster were each looked through every cycle."""
        if len(self._stacked) > len(owners):
            self._stacked.keep_only(owners)
        return [group for owner, group in owners.items()
                if len(group) > 1 and self._stacked.get(owner, group, _shares_a_node)]


def _shares_a_node(pods: list[PodRecord]) -> bool:
    return len({p.node_name for p in pods}) < len(pods)
