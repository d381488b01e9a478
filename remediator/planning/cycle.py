"""One planning cycle's books, and the gate every eviction of every strategy goes through.

Deschedule strategies hand the planner candidates (`admit`); balance strategies move pods one at a time
(`move`), because what they try next depends on what the gate let through. In order the gate applies the safety
rails, the DefaultEvictor, the loop guard and PDB budgets (balance moves only), the limits and the owner
cool-down, and node fit. It keeps the cycle's books so that every strategy sees the moves of the ones before it:
room promised on destinations, requests leaving their sources, nodes that must not receive pods, pods already
decided. Pure: it reads the snapshot and writes only into the Plan it was given.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.model import (
    TERMINAL_PHASES,
    NodeRecord,
    PdbRecord,
    Plan,
    PlannedEviction,
    PodRecord,
    Protected,
    Snapshot,
    Taint,
)
from remediator.planning.defaultevictor import protection
from remediator.planning.leaving import Leaving, still_leaving
from remediator.planning.limits import LimitState
from remediator.planning.new_node import who_adds
from remediator.planning.taints import AUTOSCALER_TAINTS, safety_hold
from remediator.policy.model import Policy
from remediator.scheduling.nodefit import CPU, PODS, find_destination, new_node_reason, pod_request_summary
from remediator.scheduling.offering import Offering
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.selectors import matches_labels
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.scheduling.zonespread import ZoneSpread

NODE, CYCLE = "node", "cycle"  # how far a refusal reaches: the rest of this source node, or the rest of the cycle
# A balance strategy does not move a pod off a node when the pod replaced one of its owner's pods that a balance
# strategy moved off that same node this recently: it came back, so it would again (descheduler's eviction
# loops, #994, #1695).
LOOP_GUARD = dt.timedelta(hours=1)

Room = dict[str, int]
Accept = Callable[[PodRecord, NodeRecord, Mapping[str, int]], str | None]


@dataclass
class PlannerMemory:
    """What the planner remembers between cycles; the controller owns it and records evictions in it."""

    clear_since: dict[tuple[str, str], dt.datetime] = field(default_factory=dict)
    owner_last_eviction: dict[str, dt.datetime] = field(default_factory=dict)
    # (owner uid, node) -> when a balance strategy last moved one of the owner's pods off the node
    moved_off: dict[tuple[str, str], dt.datetime] = field(default_factory=dict)
    # node -> when a consolidation gave up on it (not picked again for the strategy's timeout)
    consolidation_released: dict[str, dt.datetime] = field(default_factory=dict)
    # pending pod uid -> when a plan made room for it (not made again while its evictions play out)
    made_room_for: dict[str, dt.datetime] = field(default_factory=dict)
    # pod uid -> an eviction started whose pod the caches may still show: booked as moved by every cycle until the
    # snapshot no longer holds the pod (planning/leaving.py)
    leaving: dict[str, Leaving] = field(default_factory=dict)

    def record_eviction(self, pod: PodRecord, *, balance: bool, now: dt.datetime,
                        destination: str | None = None) -> None:
        self.leaving[pod.uid] = Leaving(pod, destination, now)
        owner = pod.controller
        if owner is None:
            return
        self.owner_last_eviction[owner.uid] = now
        if balance:
            self.moved_off[(owner.uid, pod.node_name)] = now

    def forget_eviction(self, uid: str) -> None:
        """The eviction was not made (refused, failed, aborted), or is old news: the pod counts where it is again."""
        self.leaving.pop(uid, None)

    def forget_left(self, snapshot: Snapshot) -> list[tuple[PodRecord, str | None]]:
        """Forget the evictions whose pods the snapshot no longer holds; the others, to book as moved."""
        staying = still_leaving(snapshot, self.leaving)
        held = {pod.uid for pod, _ in staying}
        for uid in [u for u in self.leaving if u not in held]:
            del self.leaving[uid]
        return staying

    def forget_before(self, horizon: dt.datetime) -> None:
        for key in [k for k, t in self.moved_off.items() if t < horizon]:
            del self.moved_off[key]
        for uid in [k for k, t in self.made_room_for.items() if t < horizon]:
            del self.made_room_for[uid]


@dataclass(frozen=True)
class Outcome:
    evicted: bool
    stop: str | None = None  # NODE or CYCLE when trying further pods there is pointless
    destination: str | None = None  # the node the move counted on, when evicted


class Cycle:
    def __init__(self, snapshot: Snapshot, policy: Policy, plan: Plan, memory: PlannerMemory, *,
                 exclude: set[str], planned_taints: dict[str, list[Taint]],
                 consolidating: Mapping[str, float], leaving: Sequence[tuple[PodRecord, str | None]] = ()) -> None:
        self.snapshot, self.policy, self.plan, self.memory = snapshot, policy, plan, memory
        self.limits = LimitState(policy.limits, snapshot.now, dict(memory.owner_last_eviction))
        self.exclude = exclude  # never a destination: nodes tainted, being tainted, drained or held back
        self.planned_taints = planned_taints
        self.consolidating = consolidating  # nodes carrying nodemedic's consolidation taint -> its age in seconds
        self.decided: set[str] = set()  # pod keys already evicted, protected or deferred this cycle
        self._evicting: set[str] = set()  # pod keys planned for eviction this cycle
        self.reserved: dict[str, Room] = {}  # node -> requests (and "pods") promised to pods moving there
        self.released: dict[str, Room] = {}  # node -> requests of the pods planned to leave it
        # source node -> room promised on the new node like it that the autoscaler adds (autoscaler.addsNodes)
        self.new_nodes: dict[str, Room] = {}
        # pod uid -> the node its planned eviction counted on (None: not asked, nodeFit off), for every eviction
        # planned this cycle: a later strategy counts the pod there, not where it is
        self.moved_to: dict[str, str | None] = {}
        self._requested: dict[str, Room] | None = None
        self._affinity: PodAffinityIndex | None = None
        self._spread: SpreadIndex | None = None
        self._zones: ZoneSpread | None = None
        # Reservations only grow within a cycle, so a pod shape that fitted nowhere fits nowhere later either.
        self._no_fit: dict[tuple[object, ...], str] = {}
        self._pdb_used: Counter[tuple[str, str]] = Counter()
        self._pdbs: dict[str, list[PdbRecord]] | None = None  # by namespace
        self._pdb_match: dict[str, list[PdbRecord]] = {}  # pod uid -> the PDBs selecting it
        self._room_rank: dict[str, int] | None = None
        self._all_by_room: tuple[str, ...] | None = None
        self._offering: Offering | None = None
        # Evictions of earlier cycles the snapshot does not show yet (planning/leaving.py): booked as this cycle's own.
        self.leaving = tuple(leaving)
        for pod, destination in self.leaving:
            self._book_leaving(pod, destination)

    # --- the cycle's view of the nodes ---------------------------------------------------------------------
    @property
    def requested(self) -> dict[str, Room]:
        """Requests of each node's non-terminal pods, summed once per cycle."""
        if self._requested is None:
            self._requested = {name: pod_request_summary(self.snapshot.pods(name)) for name in self.snapshot.nodes}
        return self._requested

    def usage(self, node: str) -> dict[str, int]:
        """What the node's pods request once this cycle's planned moves are done."""
        used = dict(self.requested.get(node) or {PODS: 0})
        for resource, quantity in self.reserved.get(node, {}).items():
            used[resource] = used.get(resource, 0) + quantity
        for resource, quantity in self.released.get(node, {}).items():
            used[resource] = used.get(resource, 0) - quantity
        return used

    def by_room(self, names: Iterable[str]) -> tuple[str, ...]:
        """`names` roomiest first (most unrequested cpu at the start of the cycle, then by name): the order in which
        node fit tries destinations, taking the first that fits."""
        if self._room_rank is None:
            def free(n: str) -> int:
                return self.snapshot.nodes[n].allocatable.get(CPU, 0) - self.requested.get(n, {}).get(CPU, 0)
            self._all_by_room = tuple(sorted(self.snapshot.nodes, key=lambda n: (-free(n), n)))
            self._room_rank = {n: i for i, n in enumerate(self._all_by_room)}
        rank = self._room_rank
        return tuple(sorted((n for n in names if n in rank), key=rank.__getitem__))

    def exhausted(self) -> bool:
        """The cycle's total eviction limit is used up: no strategy can add an eviction (so none need look)."""
        total = self.policy.limits.max_pods_to_evict_total
        return total is not None and self.limits.taken >= total

    def receiving(self, node: str) -> bool:
        """Some pod planned to move this cycle counts on room on `node`."""
        return self.reserved.get(node, {}).get(PODS, 0) > 0

    def hold(self, node: str) -> str | None:
        """Why a safety rail keeps evictions off `node`, or None."""
        record = self.snapshot.nodes.get(node)
        hold = safety_hold(record, self.policy.safety) if record is not None else None
        return hold.why if hold is not None else None

    # --- deschedule strategies: candidates -----------------------------------------------------------------
    def fits(self, pod: PodRecord, accept: Accept | None = None) -> str | None:
        """A node the pod could go to now (`accept`ed, when given), or None; reserves nothing. For a deschedule
        strategy whose rule is itself about a better node (node affinity), with the cycle's indexes and books."""
        affinity, spread, _ = self._indexes()
        return find_destination(pod, self.snapshot, exclude=self.exclude, planned_taints=self.planned_taints,
                                reserved=self.reserved, requested=self.requested, pod_affinity=affinity, spread=spread,
                                nodes=self._every_by_room(), accept=accept, first_fit=True,
                                offering=self._offer()).node

    def evicting(self, pod_key: str) -> bool:
        """Is the pod planned for eviction this cycle (by any strategy so far)?"""
        return pod_key in self._evicting

    def admit(self, c: PlannedEviction, *, terminal: bool = False) -> None:
        """Safety rails, DefaultEvictor, limits, then node fit anywhere outside `exclude` (when nodeFit is on).
        `terminal`: the strategy may evict Succeeded/Failed pods; such a pod needs no destination (it holds no
        resources and nothing replaces it because of the eviction), so node fit is not asked (DS-TERM-1)."""
        if c.pod.key in self.decided:
            return  # the first strategy to claim a pod decides it
        self.decided.add(c.pod.key)
        why = self.hold(c.pod.node_name) or protection(c.pod, self.snapshot, self.policy.evictor, terminal=terminal)
        if why is not None:
            self.plan.protected.append(Protected(c.pod, why))
            return
        # Limits before node fit: a deferred pod neither pays for a node search nor holds room elsewhere,
        # and a pod with nowhere to go does not use up a limit.
        why = self.limits.refusal(c)
        if why is not None:
            self.plan.deferred.append(Protected(c.pod, why))
            return
        if self.policy.evictor.node_fit and c.pod.phase not in TERMINAL_PHASES:
            destination, why = self._place(c.pod, None, None, cache=True)
            if destination is None:
                destination, c, why = self._on_new_node(c, why)
            if destination is None:
                self.plan.protected.append(Protected(c.pod, "no other node fits: " + why))
                return
            self.moved_to[c.pod.uid] = destination
        else:
            self.moved_to[c.pod.uid] = None
        self._commit(c)

    def _on_new_node(self, c: PlannedEviction, why: str) -> tuple[str | None, PlannedEviction, str]:
        """A candidate that fits no node there is: (its own node, `c` saying which new node it counts on, "") when a
        node autoscaler adds a node like its own that takes it (autoscaler.addsNodes); else (None, `c`, why not)."""
        source = self.snapshot.nodes.get(c.pod.node_name)
        if source is None:
            return None, c, f"{why}; its node is gone"
        adder, nobody = who_adds(source, self.policy.autoscaler.adds_nodes, self.snapshot.autoscalers)
        if adder is None:
            return None, c, f"{why}; {nobody}" if nobody else why
        new_node_why = self._place_on_new_node(c.pod, source)
        if new_node_why is not None:
            return None, c, f"{why}; {new_node_why}"
        return source.name, PlannedEviction(c.pod, c.strategy, f"{c.reason}; no node has room now: to a new node "
                                                               f"like {source.name} from {adder}"), ""

    def _place_on_new_node(self, pod: PodRecord, source: NodeRecord) -> str | None:
        """Reserve room for `pod` on the new node like `source` that the autoscaler adds, or say why it would not
        fit."""
        drop = {r.taint.key for r in self.policy.rules} | {t.key for t in self.planned_taints.get(source.name, ())}
        room = self.new_nodes.setdefault(source.name, {})
        why = new_node_reason(pod, source, self.snapshot, drop_taints=drop | set(AUTOSCALER_TAINTS), held=room)
        if why is None:
            room[PODS] = room.get(PODS, 0) + 1
            for resource, quantity in pod.requests.items():
                room[resource] = room.get(resource, 0) + quantity
        return why

    # --- balance strategies: one pod at a time ------------------------------------------------------------
    def refusal(self, c: PlannedEviction) -> str | None:
        """Why `move` would refuse to let `c.pod` go, before any node fit; decides nothing (a strategy planning
        several moves at once asks first, so that it does not start what the gate would stop halfway)."""
        pod, lim = c.pod, self.policy.limits
        if pod.key in self.decided:
            return "already decided this cycle"
        if lim.max_pods_to_evict_total is not None and self.limits.taken >= lim.max_pods_to_evict_total:
            return "maxNoOfPodsToEvictTotal reached"
        if (lim.max_pods_to_evict_per_node is not None
                and self.limits.per_node[pod.node_name] >= lim.max_pods_to_evict_per_node):
            return "maxNoOfPodsToEvictPerNode reached"
        return (self.hold(pod.node_name) or protection(pod, self.snapshot, self.policy.evictor)
                or self.loop_guard(pod) or self._pdb_refusal(pod) or self.limits.refusal(c))

    def pdb_headroom(self, pod: PodRecord) -> dict[str, int]:
        """PDB ("namespace/name") -> disruptions it still allows this cycle, for each PDB selecting `pod`."""
        return {f"{b.namespace}/{b.name}": b.disruptions_allowed - self._pdb_used[(b.namespace, b.name)]
                for b in self._pdbs_matching(pod)}

    def promise(self, pod: PodRecord, node: str) -> None:
        """Hold room on `node` for a pending pod the plan makes room for, so no later move of the cycle takes it."""
        room = self.reserved.setdefault(node, {})
        room[PODS] = room.get(PODS, 0) + 1
        for resource, quantity in pod.requests.items():
            room[resource] = room.get(resource, 0) + quantity

    def move(self, c: PlannedEviction, destinations: Sequence[str], *, accept: Accept | None = None,
             count_leaving: bool = False) -> Outcome:
        """Evict `c.pod` if it may go and fits one of `destinations` (always checked, whatever nodeFit says:
        a balance move is only worth making towards a node that takes the pod). `destinations` in the order to
        try them: `by_room(...)` gives the roomiest first. `count_leaving`: room on a destination that pods
        planned to leave it this cycle free counts (a chain of moves, made in order, each after the ones before
        it have left); otherwise only room free now counts."""
        pod = c.pod
        if pod.key in self.decided:
            return Outcome(False)
        lim = self.policy.limits
        if lim.max_pods_to_evict_total is not None and self.limits.taken >= lim.max_pods_to_evict_total:
            return Outcome(False, stop=CYCLE)
        if (lim.max_pods_to_evict_per_node is not None
                and self.limits.per_node[pod.node_name] >= lim.max_pods_to_evict_per_node):
            return Outcome(False, stop=NODE)
        why = self.hold(pod.node_name) or protection(pod, self.snapshot, self.policy.evictor)
        if why is not None:
            self._decide(Protected(pod, why), protected=True)
            return Outcome(False)
        why = self.loop_guard(pod) or self._pdb_refusal(pod) or self.limits.refusal(c)
        if why is not None:
            self._decide(Protected(pod, why), protected=False)
            return Outcome(False)
        destination, why = self._place(pod, destinations, accept, cache=False, count_leaving=count_leaving)
        if destination is None:
            self._decide(Protected(pod, "no destination fits: " + why), protected=True)
            return Outcome(False)
        self.moved_to[pod.uid] = destination
        self._commit(PlannedEviction(pod, c.strategy, f"{c.reason}; to {destination} or alike"))
        return Outcome(True, destination=destination)

    def exchange(self, a: PlannedEviction, b: PlannedEviction) -> bool:
        """Swap two pods of different nodes, `a.pod` to `b.pod`'s node and `b.pod` to `a.pod`'s, each counting the
        room the other leaves (a balance move where neither pod fits alone): both are evicted, or neither. Each
        must pass the gate alone and after the other (limits and PDB budgets counted for two), then fit with the
        cycle's books, zone and soft spread. A refusal decides nothing: the pods stay free for other moves."""
        pa, pb = a.pod, b.pod
        if pa.node_name == pb.node_name or self.refusal(a) is not None or self.refusal(b) is not None:
            return False
        if self.limits.refusal_together(a, b) is not None:
            return False
        in_both = {(x.namespace, x.name) for x in self._pdbs_matching(pa)}
        for x in self._pdbs_matching(pb):
            if (x.namespace, x.name) in in_both and self._pdb_used[(x.namespace, x.name)] + 2 > x.disruptions_allowed:
                return False
        to_b, _ = self._place(pa, [pb.node_name], None, cache=False, count_leaving=True, leaving=pb)
        if to_b is None:
            return False
        to_a, _ = self._place(pb, [pa.node_name], None, cache=False, count_leaving=True, leaving=pa)
        if to_a is None:
            self._unplace(pa, to_b)
            return False
        for c, destination in ((a, to_b), (b, to_a)):
            self.moved_to[c.pod.uid] = destination
            self._commit(PlannedEviction(c.pod, c.strategy, f"{c.reason}; to {destination} or alike"))
        return True

    def fits_all(self, pods: Sequence[PodRecord], destinations: Sequence[str]) -> tuple[bool, str]:
        """Would every pod find a destination together (each counting the room the others take)? Leaves no trace."""
        placed: list[tuple[PodRecord, str]] = []
        verdict = (True, "")
        for pod in pods:
            destination, why = self._place(pod, destinations, None, cache=False)
            if destination is None:
                verdict = (False, f"{pod.key}: {why}")
                break
            placed.append((pod, destination))
        for pod, destination in reversed(placed):
            self._unplace(pod, destination)
        return verdict

    def loop_guard(self, pod: PodRecord) -> str | None:
        owner = pod.controller
        if owner is None:
            return None
        last = self.memory.moved_off.get((owner.uid, pod.node_name))
        if last is None or self.snapshot.now - last >= LOOP_GUARD:
            return None
        # Only a pod created after that move is a replacement that came back (creationTimestamp has whole
        # seconds); the owner's other original pods on the node may still move.
        if pod.created is not None and pod.created >= last.replace(microsecond=0):
            return (f"loop guard: a pod of {owner.kind}/{owner.name} was moved off {pod.node_name} "
                    f"{format_duration(whole_seconds(self.snapshot.now - last))} ago and its replacement came back")
        return None

    def protect(self, pod: PodRecord, why: str) -> None:
        self._decide(Protected(pod, why), protected=True)

    # --- the books -------------------------------------------------------------------------------------------
    def _book_leaving(self, pod: PodRecord, destination: str | None) -> None:
        """An earlier cycle's eviction: the pod is decided, gone from its node and arriving at `destination`, as the
        cycle that planned it booked it (but not against this cycle's limits: it was counted in its own)."""
        self.decided.add(pod.key)
        self._evicting.add(pod.key)
        self.moved_to[pod.uid] = destination
        if pod.phase in TERMINAL_PHASES:
            return  # it holds nothing where it is (nodefit.pod_request_summary)
        _add_room(self.released.setdefault(pod.node_name, {}), pod)
        if destination is not None and destination != pod.node_name and destination in self.snapshot.nodes:
            _add_room(self.reserved.setdefault(destination, {}), pod)

    def _decide(self, p: Protected, *, protected: bool) -> None:
        if p.pod.key in self.decided:
            return
        self.decided.add(p.pod.key)
        (self.plan.protected if protected else self.plan.deferred).append(p)

    def _commit(self, c: PlannedEviction) -> None:
        c = replace(c, destination=self.moved_to.get(c.pod.uid))
        self.decided.add(c.pod.key)
        self._evicting.add(c.pod.key)
        self.limits.take(c)
        for key in self._pdbs_of(c.pod):
            self._pdb_used[key] += 1
        room = self.released.setdefault(c.pod.node_name, {})
        room[PODS] = room.get(PODS, 0) + 1
        for resource, quantity in c.pod.requests.items():
            room[resource] = room.get(resource, 0) + quantity
        self.plan.evictions.append(c)

    def _pdbs_matching(self, pod: PodRecord) -> list[PdbRecord]:
        found = self._pdb_match.get(pod.uid)
        if found is None:
            if self._pdbs is None:
                self._pdbs = {}
                for b in self.snapshot.pdbs:
                    self._pdbs.setdefault(b.namespace, []).append(b)
            found = self._pdb_match[pod.uid] = [b for b in self._pdbs.get(pod.namespace, ())
                                                if b.selector is not None and matches_labels(b.selector, pod.labels)]
        return found

    def _pdbs_of(self, pod: PodRecord) -> list[tuple[str, str]]:
        return [(b.namespace, b.name) for b in self._pdbs_matching(pod)]

    def _pdb_refusal(self, pod: PodRecord) -> str | None:
        """A balance move is optional: never plan more of them than a PDB allows now (the taint strategy's
        evictions are not optional; the evictor retries those through the PDB's 429s)."""
        for b in self._pdbs_matching(pod):
            if self._pdb_used[(b.namespace, b.name)] >= b.disruptions_allowed:
                return f"PodDisruptionBudget {b.namespace}/{b.name} allows {b.disruptions_allowed} disruption(s) now"
        return None

    def _indexes(self) -> tuple[PodAffinityIndex, SpreadIndex, ZoneSpread]:
        if self._affinity is None or self._spread is None or self._zones is None:
            self._affinity, self._spread = PodAffinityIndex(self.snapshot), SpreadIndex(self.snapshot)
            self._zones = ZoneSpread(self.snapshot)
            for pod, destination in self.leaving:  # earlier cycles' moves count where they go, as this cycle's do
                if destination is not None and destination != pod.node_name and destination in self.snapshot.nodes:
                    self._affinity.add(pod, destination)
                    self._spread.add(pod, destination)
                    self._zones.add(pod, destination)
        return self._affinity, self._spread, self._zones

    def _place(self, pod: PodRecord, destinations: Collection[str] | None, accept: Accept | None, *,
               cache: bool, count_leaving: bool = False, leaving: PodRecord | None = None) -> tuple[str | None, str]:
        """Reserve room for `pod` on a destination: (node, "") or (None, why there is none). `leaving`: a pod
        about to be planned off its node as well (the other half of an exchange), whose room counts there."""
        shape: tuple[object, ...] = ()
        if cache:
            # Pod (anti-)affinity and spread make the pod's namespace and labels part of its shape. A later move
            # could satisfy an affinity term or a skew that failed earlier; the cached refusal errs towards not
            # evicting.
            shape = (pod.node_name, pod.tolerations, tuple(sorted(pod.node_selector.items())),
                     pod.required_node_affinity, tuple(sorted(pod.requests.items())), pod.namespace,
                     tuple(sorted(pod.labels.items())), pod.required_anti_affinity, pod.required_affinity,
                     pod.hard_spread)
            if shape in self._no_fit:
                return None, self._no_fit[shape]
        affinity, spread, zones = self._indexes()
        check = accept
        if destinations is not None:  # (a balance move; the deschedule path passes None)
            # A balance move must not make its workload's zone spread worse.
            def check(p: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
                return (zones.worse(p, node) or (spread.soft_worse(p, node) if p.soft_spread else None)
                        or (accept(p, node, after) if accept is not None else None))
        if destinations is None:
            destinations = self._every_by_room()
        reserved: Mapping[str, Room] = self.reserved
        if count_leaving:
            reserved = self._net_reserved(destinations, leaving)
        result = find_destination(pod, self.snapshot, exclude=self.exclude, planned_taints=self.planned_taints,
                                  reserved=reserved, requested=self.requested, pod_affinity=affinity,
                                  spread=spread, nodes=destinations, accept=check, first_fit=True,
                                  offering=self._offer())
        if result.node is None:
            if cache:
                self._no_fit[shape] = result.reason
            return None, result.reason
        affinity.add(pod, result.node)
        spread.add(pod, result.node)
        zones.add(pod, result.node)
        room = self.reserved.setdefault(result.node, {})
        room[PODS] = room.get(PODS, 0) + 1
        for resource, quantity in pod.requests.items():
            room[resource] = room.get(resource, 0) + quantity
        return result.node, ""

    def _every_by_room(self) -> tuple[str, ...]:
        """Every node, roomiest first (`by_room`): where a deschedule strategy's pods may go."""
        if self._all_by_room is None:
            self.by_room(())
        assert self._all_by_room is not None
        return self._all_by_room

    def _offer(self) -> Offering:
        if self._offering is None:
            self._offering = Offering(self.snapshot.nodes)
        return self._offering

    def _net_reserved(self, nodes: Collection[str], leaving: PodRecord | None) -> dict[str, Room]:
        """Per node, the room promised there less the room pods planned to leave it free (and `leaving`)."""
        out: dict[str, Room] = {}
        for node in nodes:
            net = out[node] = dict(self.reserved.get(node, {}))
            gone = [self.released.get(node, {})]
            if leaving is not None and leaving.node_name == node:
                gone.append({PODS: 1, **leaving.requests})
            for room in gone:
                for resource, quantity in room.items():
                    net[resource] = net.get(resource, 0) - quantity
        return out

    def _unplace(self, pod: PodRecord, node: str) -> None:
        affinity, spread, zones = self._indexes()
        affinity.remove(pod, node)
        spread.remove(pod)
        zones.remove(pod, node)
        room = self.reserved[node]
        room[PODS] -= 1
        for resource, quantity in pod.requests.items():
            room[resource] -= quantity


def _add_room(room: Room, pod: PodRecord) -> None:
    room[PODS] = room.get(PODS, 0) + 1
    for resource, quantity in pod.requests.items():
        room[resource] = room.get(resource, 0) + quantity
