"""MakeRoomForPendingPods (the placement engine): evict the fewest pods that free one node for a pod pending
because the cluster's free room is split across nodes, so the pod runs without the autoscaler buying a node.

Per cycle: find the pods pending for fragmentation (detect.py), highest priority and oldest first; for each, search
the smallest set of moves (search.py) over its pool and the roomiest other nodes, each evicted pod with a
destination of its own (chains up to `chainDepth`, swaps onto the freed node allowed), never evicting a pod of
higher priority than the pending one; then make the moves through the gate (DefaultEvictor, PDB budgets,
limits, loop guard, node fit counting this cycle's moves) in chain order, and hold the freed room for the pending
pod in the cycle's books. Everything the strategy does in a cycle shares one time budget.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial

from remediator.model.plan import PlannedEviction
from remediator.model.records import NodeRecord, PodRecord
from remediator.planning.gate import Gate
from remediator.planning.memory import Remembered
from remediator.planning.wants import Wants
from remediator.scheduling.nodefit import placement_reason
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.scheduling.zonespread import ZoneSpread
from remediator.state.snapshot import Snapshot
from remediator.strategies.make_room_for_pending_pods.args import MakeRoomForPendingPodsArgs
from remediator.strategies.make_room_for_pending_pods.detect import Stuck, free_vector, stuck_pods, vector
from remediator.strategies.make_room_for_pending_pods.report import Fragmentation, MadeRoom
from remediator.strategies.make_room_for_pending_pods.room import Room
from remediator.strategies.make_room_for_pending_pods.search import Found, Limits, Mover, find_plan

NAME = "MakeRoomForPendingPods"
KIND = "balance"
TARGETS = 32  # pool nodes tried as the one to free, smallest deficit first
ROOMY = 64  # other nodes the evicted pods may go to, roomiest first (at scale the search never looks further)
# A pod made room for is forgotten after this long (whatever retryAfter says), so the memory stays bounded.
FORGET_HELPED = dt.timedelta(hours=1)
# A mover's cost: its priority first, then its owner (evicting a pod of a StatefulSet or a Job costs more than one a
# ReplicaSet replaces at once), then a PDB with no spare disruption.
_PRIORITY_COST = 100.0
_OWNER_COST = {"ReplicaSet": 0, "ReplicationController": 0, "StatefulSet": 2, "Job": 3}


def plan(snapshot: Snapshot, args: MakeRoomForPendingPodsArgs, gate: Gate) -> Wants:
    # The budget bounds all the strategy does, its books and the detection included, not only the search: at
    # 5,000 nodes those two took a quarter of a second before any search began.
    deadline = time.monotonic() + args.time_budget.total_seconds()
    books = _Books(snapshot, gate, args)
    stuck, stranded = stuck_pods(snapshot, books.usage, exclude=gate.view.excluded,
                                 planned_taints=gate.view.planned_taints)
    made: list[MadeRoom] = []
    # pod uid -> when a plan made room for it: not made again while its evictions play out (retryAfter)
    helped = {uid: t for uid, t in gate.view.remembered.items() if snapshot.now - t <= FORGET_HELPED}
    waiting = [s for s in stuck if not _recently_helped(helped, s.pod, snapshot, args)]
    for s in waiting[:args.max_pending_pods]:
        if time.monotonic() > deadline:
            break
        found = _search(books, args, s, deadline)
        if found is not None and _commit(snapshot, gate, s, found):
            made.append(MadeRoom(s.pod, found.target, tuple(m.pod.key for m in found.moves)))
            helped[s.pod.uid] = snapshot.now
        if found is not None:
            books.refresh({found.target} | {m.pod.node for m in found.moves} | {m.destination for m in found.moves})
    return Wants(report=Fragmentation(tuple(s.pod for s in stuck), stranded, tuple(made)), remember=helped)


def _recently_helped(helped: Remembered, pod: PodRecord, snapshot: Snapshot, args: MakeRoomForPendingPodsArgs) -> bool:
    since = helped.get(pod.uid)
    return since is not None and snapshot.now - since < args.retry_after


class _Books:
    """What every search of the cycle shares: each node's requests after the cycle's moves, the nodes that may
    receive pods, free room per set of resources, what a node's pods ask for at most, and the affinity indexes;
    refreshed where a plan moved pods."""

    def __init__(self, snapshot: Snapshot, gate: Gate, args: MakeRoomForPendingPodsArgs) -> None:
        self.snapshot, self.gate, self.args = snapshot, gate, args
        self.usage = {n: gate.view.usage(n) for n in snapshot.nodes}
        self.eligible = [n for n, rec in snapshot.nodes.items()
                         if rec.ready and not rec.unschedulable and not rec.deleting and n not in gate.view.excluded
                         and gate.view.hold(n) is None]
        self.indexes = _Indexes(snapshot)
        self._free: dict[tuple[str, ...], Room] = {}
        self._reach: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}
        self._lowest: dict[str, int] = {}

    def free(self, resources: tuple[str, ...]) -> Room:
        found = self._free.get(resources)
        if found is None:
            nodes = self.snapshot.nodes
            found = self._free[resources] = Room(
                ((n, free_vector(nodes[n], self.usage[n], resources)) for n in self.eligible), len(resources))
        return found

    def reach(self, node: str, resources: tuple[str, ...]) -> tuple[int, ...]:
        """The most any one pod on `node` that might move asks for, resource by resource (a pod's own requests
        stay as they are all cycle, so this is worked out once per node)."""
        key = (node, resources)
        found = self._reach.get(key)
        if found is None:
            vectors = [vector(p.requests, resources) for p in self.snapshot.pods(node) if _might_move(p, self.args)]
            found = self._reach[key] = tuple(map(max, zip(*vectors, strict=True))) if vectors else (0,) * len(resources)
        return found

    def lowest_priority(self, node: str) -> int:
        """The lowest priority of a pod on `node`: no mover there costs less than its share of a mover's cost (the
        other terms are never negative), which bounds the cost of any plan."""
        found = self._lowest.get(node)
        if found is None:
            found = self._lowest[node] = min(((p.priority or 0) for p in self.snapshot.pods(node)), default=0)
        return found

    def refresh(self, names: set[str]) -> None:
        for n in names:
            self.usage[n] = self.gate.view.usage(n)
            for resources, free in self._free.items():
                if n in free:
                    free.update(n, free_vector(self.snapshot.nodes[n], self.usage[n], resources))


def _search(books: _Books, args: MakeRoomForPendingPodsArgs, s: Stuck, deadline: float) -> Found | None:
    snapshot, gate, indexes, resources = books.snapshot, books.gate, books.indexes, s.resources
    free, need = books.free(resources), s.need
    # Smallest deficit first (ties by name), until enough the pending pod's own constraints accept: only the first
    # few of a pool of thousands are ever looked at, and only those are worked out (Room.by_shortfall).
    targets: list[str] = []
    conflict = indexes.affinity().conflict_for(s.pod)  # asked of node after node: a zone's answer is kept
    for n in free.by_shortfall(s.pool, need):
        if _pod_may_land(snapshot, s.pod, n, indexes, conflict):
            targets.append(n)
            if len(targets) == TARGETS:
                break
    if not targets:
        return None
    chosen = set(targets)
    # The roomiest others, in units of the pod's requests (so cpu and bytes weigh alike).
    roomy = free.roomiest(need, ROOMY, chosen)
    nodes = {n: free[n] for n in (*targets, *roomy)}
    movers = _Movers(snapshot, args, gate, pending=s.pod, resources=resources, nodes=chosen | set(roomy))
    records: dict[str, PodRecord] = movers.records
    fits: dict[tuple[str, str], bool] = {}

    def can_go(m: Mover, node: str) -> bool:
        key = (m.key, node)
        if key not in fits:
            pod = records[m.key]
            fits[key] = placement_reason(pod, snapshot.nodes[node], exclude=gate.view.excluded,
                                         planned=gate.view.planned_taints.get(node, ())) is None and _pod_may_land(
                snapshot, pod, node, indexes) and not indexes.zones().worse(pod, snapshot.nodes[node])
        return fits[key]

    limits = Limits(max_evictions=args.max_evictions_per_pod, depth=args.chain_depth, deadline=deadline,
                    cheapest=min((books.lowest_priority(n) for n in movers), default=0) * _PRIORITY_COST)
    return find_plan(s.need, targets, nodes, movers, can_go, may_move=movers.may_move,
                     reach=partial(books.reach, resources=resources), headroom=movers.headroom, limits=limits)


class _Indexes:
    """The snapshot's pod (anti-)affinity and spread indexes, built when a pod with such constraints first asks."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._affinity: PodAffinityIndex | None = None
        self._spread: SpreadIndex | None = None
        self._zones: ZoneSpread | None = None

    def affinity(self) -> PodAffinityIndex:
        if self._affinity is None:
            self._affinity = PodAffinityIndex(self.snapshot)
        return self._affinity

    def spread(self) -> SpreadIndex:
        if self._spread is None:
            self._spread = SpreadIndex(self.snapshot)
        return self._spread

    def zones(self) -> ZoneSpread:
        if self._zones is None:
            self._zones = ZoneSpread(self.snapshot)
        return self._zones


def _pod_may_land(snapshot: Snapshot, pod: PodRecord, node: str, indexes: _Indexes,
                  conflict: Callable[[NodeRecord], str | None] | None = None) -> bool:
    """`pod`'s inter-pod (anti-)affinity, the anti-affinity of the pods there, and its hard spread accept `node`
    (room aside). The gate checks again, counting this cycle's moves. `conflict`: the affinity index's answers
    for `pod` kept across the nodes of one search (`PodAffinityIndex.conflict_for`)."""
    record = snapshot.nodes[node]
    if (conflict or indexes.affinity().conflict_for(pod))(record):
        return False
    return not (pod.hard_spread and indexes.spread().violation(pod, record))


class _Movers(Mapping[str, Sequence[Mover]]):
    """node -> the pods that may move for this pending pod (`may_move`: if the gate lets them), worked out when the
    search first asks."""

    def __init__(self, snapshot: Snapshot, args: MakeRoomForPendingPodsArgs, gate: Gate, *, pending: PodRecord,
                 resources: Sequence[str], nodes: set[str]) -> None:
        self.snapshot, self.args, self.gate, self.pending = snapshot, args, gate, pending
        self.resources, self.nodes = resources, nodes
        self.records: dict[str, PodRecord] = {}
        self.headroom: dict[str, int] = {}
        self._cache: dict[str, list[Mover]] = {}
        self._may_move: dict[str, bool] = {}

    def __getitem__(self, node: str) -> Sequence[Mover]:
        if node not in self.nodes:
            raise KeyError(node)
        found = self._cache.get(node)
        if found is None:
            found = self._cache[node] = [m for p in self.snapshot.pods(node) if (m := self._mover(p)) is not None]
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def may_move(self, mover: Mover) -> bool:
        """The gate would let the pod go (asked when a set of pods first needs it: the gate's checks are most of a
        mover's cost, and the search looks at few of the pods it lists)."""
        found = self._may_move.get(mover.key)
        if found is None:
            found = self._may_move[mover.key] = self.gate.refusal(
                PlannedEviction(self.records[mover.key], NAME, "")) is None
        return found


    def _mover(self, pod: PodRecord) -> Mover | None:
        if not _might_move(pod, self.args):
            return None
        if (pod.priority or 0) > (self.pending.priority or 0):
            return None  # never displace a pod that matters more than the one waiting
        headroom = self.gate.view.pdb_headroom(pod)
        self.headroom.update(headroom)
        owner = pod.controller
        tight = 1 if any(h <= 1 for h in headroom.values()) else 0
        # Every term but the priority's is never negative: the search's lower bound on a plan's cost counts on it.
        cost = (pod.priority or 0) * _PRIORITY_COST + _OWNER_COST.get(owner.kind if owner else "", 1) * 10 + tight
        self.records[pod.key] = pod
        return Mover(pod.key, pod.node_name, vector(pod.requests, self.resources), cost, tuple(sorted(headroom)))


def _might_move(pod: PodRecord, args: MakeRoomForPendingPodsArgs) -> bool:
    """What of being a mover the pod alone decides, whichever pod is pending and whatever the plan holds."""
    return pod.live and pod.namespace not in args.evictable_namespaces_exclude


def _commit(snapshot: Snapshot, gate: Gate, s: Stuck, found: Found) -> bool:
    """Make the moves in order through the gate; hold the freed room for the pending pod when all went."""
    pods = {p.key: p for n in {m.pod.node for m in found.moves} for p in snapshot.pods(n)}
    reason = f"makes room on {found.target} for pending {s.pod.key} ({len(found.moves)} move(s))"
    # The pending pod's room first, so that node fit keeps it when a pod moves onto the target (a swap). If the
    # gate stops a later move, the room stays held for the rest of the cycle: erring towards fewer moves.
    gate.promise(s.pod, found.target)
    for move in found.moves:
        outcome = gate.move(PlannedEviction(pods[move.pod.key], NAME, reason), [move.destination],
                             count_leaving=True)
        if not outcome.evicted:
            return False
    return True
