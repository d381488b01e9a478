"""What planning works out from one node's (or one owner's) pods, kept for the next cycle while those pods stay as
they were.

Why: at 65,000 nodes and 2,000,000 pods, the passes over every pod (the requests each node holds, the few pods the
deschedule strategies look at, the live pods by namespace, the replicas per zone) cost seconds of every cycle, though
between two cycles almost every node's pods are as they were. The cache (caches.py) hands each snapshot the very list
object it handed the last one for a node or owner whose pods did not change, and a new list for one whose pods did:
the list's identity is its version. Each value here is kept beside the list it was worked out from and served again
only for that very list (the entry holds the list, so its identity cannot pass to another). The values depend on the
pods alone, or on a context the caller passes and compares (the zone of each node; a strategy's arguments): no clock.

Callers never change a list they were handed, nor a value served from here: both are shared with later cycles.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from remediator.model.records import NodeRecord, PodRecord, Taint

T = TypeVar("T")

# What placing a pod reads of a node: its labels (node selection, topology domains), taints and whether it is cordoned;
# not its status, which every kubelet reports again every few minutes (a new record, equal in all of this).
Placement = tuple[dict[str, str], tuple[Taint, ...], bool]


def placement_of(nodes: Mapping[str, NodeRecord]) -> dict[str, Placement]:
    """Each node's `Placement`: a value worked out from these alone holds for nodes with equal ones."""
    return {name: (n.labels, n.taints, n.unschedulable) for name, n in nodes.items()}


class PerList(Generic[T]):
    """One value per node or owner, worked out from its pod list and kept with that list."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[list[PodRecord], T]] = {}
        self._context: object = None

    def get(self, key: str, pods: list[PodRecord], compute: Callable[[list[PodRecord]], T], *,
            alike: Callable[[T, T], bool] | None = None) -> T:
        """The value of `compute(pods)`, worked out again only when `pods` is not the list it was kept with; the kept
        value itself when `alike(kept, worked out)` says it stands for the new one (what a caller keeps by the
        value's identity then holds)."""
        kept = self._kept.get(key)
        if kept is not None and kept[0] is pods:
            return kept[1]
        value = compute(pods)
        if alike is not None and kept is not None and alike(kept[1], value):
            value = kept[1]
        self._kept[key] = (pods, value)
        return value

    def within(self, context: object) -> PerList[T]:
        """Serve values worked out under `context` only: a different one (by equality) forgets them all."""
        if context != self._context:
            self._kept.clear()
            self._context = context
        return self

    def keep_only(self, keys: Collection[str]) -> None:
        """Forget the nodes or owners no longer in the cluster (`keys` is probed once per kept entry: a set or dict)."""
        for key in [k for k in self._kept if k not in keys]:
            del self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)


class PerNodes(Generic[T]):
    """Values worked out from what placement reads of the nodes (`Placement`, and what their key names), kept while
    that stays the same, compared once per snapshot. A value no snapshot asked for since the nodes last came (by
    identity) is forgotten the next time they do, so keys that stop coming do not pile up."""

    def __init__(self) -> None:
        self._nodes: Mapping[str, NodeRecord] = {}
        self._placement: dict[str, Placement] = {}
        self._now: dict[Hashable, T] = {}
        self._last: dict[Hashable, T] = {}

    def on(self, nodes: Mapping[str, NodeRecord]) -> PerNodes[T]:
        """Serve values for `nodes` (a snapshot's): those kept for nodes equal in placement, or none."""
        if nodes is not self._nodes:
            placement = placement_of(nodes)
            if placement == self._placement:
                self._last, self._now = self._now, {}
            else:
                self._last, self._now, self._placement = {}, {}, placement
            self._nodes = nodes
        return self

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        if key in self._now:
            return self._now[key]
        value = self._last[key] if key in self._last else compute()
        self._now[key] = value
        return value

    def __len__(self) -> int:
        return len(self._now)


@dataclass(frozen=True)
class NodeNotable:
    """The pods of one node that the deschedule strategies look at (Snapshot.notable)."""

    statuses: list[PodRecord]
    node_affinity: list[PodRecord]
    anti_affinity: list[PodRecord]
    spreading: list[PodRecord]


@dataclass
class Derived:
    """The tables kept across cycles: by node, except `zone_exposure` (by owner and workload), `spread_domains` (by
    the nodes alone) and the strategies' own."""

    requests: PerList[dict[str, int]] = field(default_factory=PerList)  # what the node's pods request
    notable: PerList[NodeNotable] = field(default_factory=PerList)
    # Each node's live pods, in its order: a tuple a node, the least memory (LivePods indexes them by namespace)
    live: PerList[tuple[PodRecord, ...]] = field(default_factory=PerList)
    # Zone exposure's owners, workloads and their exposures (planning/zone_exposure_kept.py; typed there)
    zone_exposure: object = None
    # Node fit's topology spread: per constraint shape, each eligible node's domain and the domains
    # (scheduling/topologyspread.py)
    spread_domains: PerNodes[tuple[dict[str, str], frozenset[str]]] = field(default_factory=PerNodes)
    # The last snapshot's LivePods (state/snapshot.py; typed there): served again while no node's pods changed
    live_pods: object = None
    # strategy name -> what it keeps for its next run, of its own type (its folder's kept.py): a strategy's values may
    # also depend on its arguments, the nodes and the pods it compares there
    strategies: dict[str, object] = field(default_factory=dict)

    def kept_by(self, strategy: str, kind: type[T]) -> T:
        """The strategy's kept values, new when it has none (or of another kind: a strategy renamed its type)."""
        kept = self.strategies.get(strategy)
        if not isinstance(kept, kind):
            kept = self.strategies[strategy] = kind()
        return kept

    def keep_only(self, nodes: Collection[str]) -> None:
        self.requests.keep_only(nodes)
        self.notable.keep_only(nodes)
        self.live.keep_only(nodes)
