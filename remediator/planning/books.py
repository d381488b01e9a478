"""One plan's books: what every strategy of the plan sees of the moves the ones before it made.

Room promised on destinations, requests leaving their sources, nodes that must not receive pods, pods already
decided, PDB disruptions and eviction limits used, and the placement indexes kept current with every planned move.
The gate (gate.py) is the only writer; strategies read the books through its view (view.py). Pure: reads the
snapshot, writes only into the Plan it was given.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence, Set
from dataclasses import replace

from remediator.model.plan import Plan, PlannedEviction, Protected
from remediator.model.records import TERMINAL_PHASES, NodeRecord, PdbRecord, PodRecord, Taint
from remediator.planning.alike_searches import AlikeSearches
from remediator.planning.eviction_counts import LimitState
from remediator.planning.memory import PlannerMemory
from remediator.planning.rails import AUTOSCALER_TAINTS
from remediator.planning.room import Room, add, add_pod
from remediator.policy.model import Policy
from remediator.scheduling.fit_screen import ScreenSlot
from remediator.scheduling.nodefit import (
    CPU,
    PODS,
    FitResult,
    find_destination,
    new_node_reason,
    pod_request_summary,
    screen_nodes,
)
from remediator.scheduling.offering import Offering
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.selectors import matches_labels
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.scheduling.zonespread import ZoneSpread
from remediator.state.snapshot import Snapshot

# A search through fewer nodes is walked whole: a screen of them would save less than it costs to keep.
SCREEN_LEAST = 64

# node fit's last word on a destination: None, or why not (a strategy's own rule about where a pod may go)
Accept = Callable[[PodRecord, NodeRecord, Mapping[str, int]], str | None]


class Books:
    def __init__(self, snapshot: Snapshot, policy: Policy, plan: Plan, memory: PlannerMemory, *,
                 exclude: set[str], planned_taints: dict[str, list[Taint]],
                 carrying: Mapping[str, Mapping[str, float]],
                 leaving: Sequence[tuple[PodRecord, str | None]] = ()) -> None:
        self.snapshot, self.policy, self.plan, self.memory = snapshot, policy, plan, memory
        self.limits = LimitState(policy.limits, snapshot.now, dict(memory.owner_last_eviction))
        self.exclude = exclude  # never a destination: nodes tainted, being tainted, drained or held back
        self.planned_taints = planned_taints
        # strategy -> the nodes carrying the taint it owns -> the taint's age in seconds (strategy.py's `taint`)
        self.carrying = carrying
        self.decided: set[str] = set()  # pod keys already evicted, protected or deferred this plan
        self.evicting: set[str] = set()  # pod keys planned for eviction this plan
        self.reserved: dict[str, Room] = {}  # node -> requests (and "pods") promised to pods moving there
        self.released: dict[str, Room] = {}  # node -> requests of the pods planned to leave it
        # source node -> room promised on the new node like it that the autoscaler adds (autoscaler.addsNodes)
        self.new_nodes: dict[str, Room] = {}
        # pod uid -> the node its planned eviction counted on (None: not asked, nodeFit off), for every eviction
        # planned this plan: a later strategy counts the pod there, not where it is
        self.moved_to: dict[str, str | None] = {}
        self._requested: dict[str, Room] | None = None
        self._affinity: PodAffinityIndex | None = None
        self._spread: SpreadIndex | None = None
        self._zones: ZoneSpread | None = None
        # (tolerations, node selector, required node affinity) -> node -> node fit's answer from the checks that read
        # only those and the node (nodefit.find_destination's `node_reasons`): nodes and planned taints stay as they
        # are for the whole plan, and a workload's replicas search the same nodes again and again.
        self._node_reasons: dict[tuple[object, ...], dict[str, str | None]] = {}
        # a pod's requests -> node -> node fit's room check on a node no room is promised on (`room_reasons`): the
        # nodes' requests stay as they are for the whole plan, and replicas ask the same of the same nodes.
        self._room_reasons: dict[tuple[tuple[str, int], ...], dict[str, str | None]] = {}
        # Counts every change to what a search reads (promised room, evictions, excluded nodes): a failed search is
        # answered again for an alike pod while it stays the same (alike_searches.py).
        self.version = 0
        self._alike = AlikeSearches()
        # (id of a tuple of nodes, (placement, requests)) -> its searches' screen (fit_screen.py), and whether any
        # pod promised room this plan asks for less than nothing of a resource (a snapshot's "-1"): none holds then
        self._screens: dict[tuple[int, Hashable], ScreenSlot] = {}
        self._negative_promise = False
        # Reservations only grow within a plan, so a pod shape that fitted nowhere fits nowhere later either.
        self._no_fit: dict[tuple[object, ...], str] = {}
        self.pdb_used: Counter[tuple[str, str]] = Counter()
        self._pdbs: dict[str, list[PdbRecord]] | None = None  # by namespace
        # (namespace, id of a labels dict) -> that dict and the PDBs selecting pods carrying it: a workload's replicas
        # share one (state/sharing.py), and the entry holds it, so its id names no other
        self._pdb_match: dict[tuple[str, int], tuple[dict[str, str], list[PdbRecord]]] = {}
        self._room_rank: dict[str, int] | None = None
        self._all_by_room: tuple[str, ...] | None = None
        self._offering: Offering | None = None
        self._known_schedulers = policy.scheduler.known()
        # Evictions of earlier cycles the snapshot does not show yet (planning/leaving.py): booked as this plan's own.
        self.leaving = tuple(leaving)
        for pod, destination in self.leaving:
            self._book_leaving(pod, destination)

    # --- the plan's view of the nodes -------------------------------------------------------------------------
    @property
    def requested(self) -> dict[str, Room]:
        """Requests of each node's non-terminal pods, summed once per plan (and kept across plans while the node's pods
        stay the same: state/derived.py)."""
        if self._requested is None:
            kept, pods = self.snapshot.derived.requests, self.snapshot.pods
            self._requested = {name: kept.get(name, pods(name), pod_request_summary) for name in self.snapshot.nodes}
        return self._requested

    def usage(self, node: str) -> dict[str, int]:
        """What the node's pods request once this plan's moves are done."""
        used = dict(self.requested.get(node) or {PODS: 0})
        reserved, released = self.reserved.get(node), self.released.get(node)
        if reserved:  # most nodes have neither: this runs for every node, several times a plan
            add(used, reserved)
        if released:
            add(used, released, -1)
        return used

    def by_room(self, names: Iterable[str]) -> tuple[str, ...]:
        """`names` roomiest first (most unrequested cpu at the start of the plan, then by name): the order in which
        node fit tries destinations, taking the first that fits."""
        if self._room_rank is None:
            def free(n: str) -> int:
                return self.snapshot.nodes[n].allocatable.get(CPU, 0) - self.requested.get(n, {}).get(CPU, 0)
            self._all_by_room = tuple(sorted(self.snapshot.nodes, key=lambda n: (-free(n), n)))
            self._room_rank = {n: i for i, n in enumerate(self._all_by_room)}
        rank = self._room_rank
        if isinstance(names, Mapping | Set) and len(names) * 8 > len(rank):
            # Most of the nodes (a hostname constraint's domains: every node): the whole order, filtered, where
            # sorting them again cost 8 ms a call at 20,000 nodes. Both hold each name once, in rank order.
            return tuple(n for n in self.every_by_room() if n in names)
        return tuple(sorted((n for n in names if n in rank), key=rank.__getitem__))

    def every_by_room(self) -> tuple[str, ...]:
        """Every node, roomiest first (`by_room`): where a deschedule strategy's pods may go."""
        if self._all_by_room is None:
            self.by_room(())
        assert self._all_by_room is not None
        return self._all_by_room

    def receiving(self, node: str) -> bool:
        """Some pod planned to move this plan counts on room on `node`."""
        return self.reserved.get(node, {}).get(PODS, 0) > 0

    # --- PodDisruptionBudgets ---------------------------------------------------------------------------------
    def pdbs_matching(self, pod: PodRecord) -> list[PdbRecord]:
        labels = pod.labels
        key = (pod.namespace, id(labels))
        kept = self._pdb_match.get(key)
        if kept is not None:
            return kept[1]
        if self._pdbs is None:
            self._pdbs = {}
            for b in self.snapshot.pdbs:
                self._pdbs.setdefault(b.namespace, []).append(b)
        found = [b for b in self._pdbs.get(pod.namespace, ())
                 if b.selector is not None and matches_labels(b.selector, labels)]
        self._pdb_match[key] = (labels, found)
        return found

    def pdb_headroom(self, pod: PodRecord) -> dict[str, int]:
        """PDB ("namespace/name") -> disruptions it still allows this plan, for each PDB selecting `pod`."""
        return {f"{b.namespace}/{b.name}": b.disruptions_allowed - self.pdb_used[(b.namespace, b.name)]
                for b in self.pdbs_matching(pod)}

    # --- recording decisions ----------------------------------------------------------------------------------
    def decide(self, p: Protected, *, protected: bool) -> None:
        if p.pod.key in self.decided:
            return
        self.decided.add(p.pod.key)
        (self.plan.protected if protected else self.plan.deferred).append(p)

    def commit(self, c: PlannedEviction, destination: str | None) -> None:
        self.version += 1
        self.moved_to[c.pod.uid] = destination
        c = replace(c, destination=destination)
        self.decided.add(c.pod.key)
        self.evicting.add(c.pod.key)
        self.limits.take(c.pod)
        for b in self.pdbs_matching(c.pod):
            self.pdb_used[(b.namespace, b.name)] += 1
        add_pod(self.released.setdefault(c.pod.node_name, {}), c.pod)
        self.plan.evictions.append(c)

    def promise(self, pod: PodRecord, node: str) -> None:
        """Hold room on `node` for `pod`, so no later move of the plan takes it."""
        self.version += 1
        if not self._negative_promise and any(q < 0 for q in pod.requests.values()):
            self._negative_promise = True  # promised room can shrink a node's requests: no screen holds (_search)
        add_pod(self.reserved.setdefault(node, {}), pod)

    def exclude_node(self, node: str) -> None:
        """`node` receives no pod from now on."""
        self.version += 1
        self.exclude.add(node)

    def _book_leaving(self, pod: PodRecord, destination: str | None) -> None:
        """An earlier cycle's eviction: the pod is decided, gone from its node and arriving at `destination`, as the
        cycle that planned it booked it (but not against this plan's limits: it was counted in its own)."""
        self.decided.add(pod.key)
        self.evicting.add(pod.key)
        self.moved_to[pod.uid] = destination
        if pod.phase in TERMINAL_PHASES:
            return  # it holds nothing where it is (nodefit.pod_request_summary)
        add_pod(self.released.setdefault(pod.node_name, {}), pod)
        if destination is not None and destination != pod.node_name and destination in self.snapshot.nodes:
            self.promise(pod, destination)

    # --- placement ------------------------------------------------------------------------------------------
    def indexes(self) -> tuple[PodAffinityIndex, SpreadIndex, ZoneSpread]:
        if self._affinity is None or self._spread is None or self._zones is None:
            self._affinity, self._spread = PodAffinityIndex(self.snapshot), SpreadIndex(self.snapshot,
                                                                                            self.policy.scheduler.constraints_for)
            self._zones = ZoneSpread(self.snapshot)
            for pod, destination in self.leaving:  # earlier cycles' moves count where they go, as this plan's do
                if destination is not None and destination != pod.node_name and destination in self.snapshot.nodes:
                    self._affinity.add(pod, destination)
                    self._spread.add(pod, destination)
                    self._zones.add(pod, destination)
        return self._affinity, self._spread, self._zones

    def offering(self) -> Offering:
        if self._offering is None:
            self._offering = Offering(self.snapshot.nodes)
        return self._offering

    def find(self, pod: PodRecord, destinations: Collection[str], accept: Accept | None,
             reserved: Mapping[str, Room]) -> tuple[str | None, str]:
        """The first of `destinations` that takes `pod` with the plan's books: (node, "") or (None, why none);
        reserves nothing."""
        if (unknown := self.unknown_scheduler(pod)) is not None:
            return None, unknown
        result = self._search(pod, destinations, accept, reserved)
        return result.node, result.reason

    def _search(self, pod: PodRecord, destinations: Collection[str], accept: Accept | None,
                reserved: Mapping[str, Room]) -> FitResult:
        affinity, spread, _ = self.indexes()
        placement = (pod.tolerations, tuple(sorted(pod.node_selector.items())), pod.required_node_affinity)
        requests = tuple(pod.requests.items())
        node_reasons = self._node_reasons.setdefault(placement, {})
        room_reasons = self._room_reasons.setdefault(requests, {})
        slot = self._screen_slot(destinations, (placement, requests), reserved)
        if slot is not None and slot.due():
            slot.screen = screen_nodes(pod, self.snapshot, slot.nodes, offering=self.offering(),
                                       planned_taints=self.planned_taints, node_reasons=node_reasons,
                                       requested=self.requested, room_reasons=room_reasons)
        result = find_destination(pod, self.snapshot, exclude=self.exclude, planned_taints=self.planned_taints,
                                  reserved=reserved, requested=self.requested, pod_affinity=affinity,
                                  spread=spread, nodes=destinations, accept=accept, first_fit=True,
                                  offering=self.offering(), node_reasons=node_reasons, room_reasons=room_reasons,
                                  screen=None if slot is None else slot.screen)
        if slot is not None and result.node is None:
            slot.failed = True
        return result

    def _screen_slot(self, nodes: Collection[str], alike: Hashable, reserved: Mapping[str, Room]) -> ScreenSlot | None:
        """The slot of the searches through `nodes` by pods `alike` in placement and requests (fit_screen.py); None
        where no screen holds or pays: nodes that are not a tuple (they could change) or a short one, room counted
        with what pods leaving free (it can shrink), a pod with a negative request promised room this plan."""
        if (not isinstance(nodes, tuple) or len(nodes) < SCREEN_LEAST or reserved is not self.reserved
                or self._negative_promise):
            return None
        key = (id(nodes), alike)
        slot = self._screens.get(key)
        if slot is None:
            slot = self._screens[key] = ScreenSlot(nodes)
        return slot

    def find_alike(self, pod: PodRecord, destinations: Sequence[str], accept: Accept | None, check: Accept | None,
                   alike: Hashable) -> tuple[str | None, str]:
        """`find` with `check` (`accept`, or what a balance move wraps around it) for a strategy that states what its
        `accept` reads of the pod (`alike`): a search a pod alike failed with these books is worked out from that
        one (alike_searches.py)."""
        if (unknown := self.unknown_scheduler(pod)) is not None:
            return None, unknown
        _, spread, _ = self.indexes()
        key = self._alike.key(pod, self.snapshot.nodes.get(pod.node_name), destinations=destinations, rule=accept,
                              alike=alike, spreads=(*spread.hard(pod), *pod.soft_spread))
        if key is None:
            return self.find(pod, destinations, check, self.reserved)

        def search(p: PodRecord, nodes: Sequence[str]) -> FitResult:
            return self._search(p, nodes, check, self.reserved)
        result = self._alike.answer(key, self.version, pod, destinations, search)
        if result is None:
            result = search(pod, destinations)
            self._alike.remember(key, self.version, pod, result)
        return result.node, result.reason

    def place(self, pod: PodRecord, destinations: Collection[str] | None, accept: Accept | None, *,
              cache: bool, count_leaving: bool = False, leaving: PodRecord | None = None,
              alike: Hashable | None = None) -> tuple[str | None, str]:
        """Reserve room for `pod` on a destination: (node, "") or (None, why there is none). `destinations` None:
        any node (a deschedule candidate); otherwise a balance move, which must not make its workload's zone
        spread worse. `leaving`: a pod about to be planned off its node as well (the other half of an exchange),
        whose room counts there. `alike`: what `accept` reads of the pod (Gate.move), for a search answered from an
        alike pod's."""
        shape: tuple[object, ...] = ()
        if cache:
            # Pod (anti-)affinity and spread make the pod's namespace and labels part of its shape. A later move
            # could satisfy an affinity term or a skew that failed earlier; the cached refusal errs towards not
            # evicting.
            shape = (pod.node_name, pod.tolerations, tuple(sorted(pod.node_selector.items())),
                     pod.required_node_affinity, tuple(sorted(pod.requests.items())), pod.namespace,
                     tuple(sorted(pod.labels.items())), pod.required_anti_affinity, pod.required_affinity,
                     pod.hard_spread, pod.scheduler_name)
            if shape in self._no_fit:
                return None, self._no_fit[shape]
        affinity, spread, zones = self.indexes()
        check = accept
        if destinations is not None:
            def check(p: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
                return (zones.worse(p, node) or (spread.soft_worse(p, node) if p.soft_spread else None)
                        or (accept(p, node, after) if accept is not None else None))
        if destinations is None:
            destinations = self.every_by_room()
        reserved: Mapping[str, Room] = self.reserved
        if count_leaving:
            reserved = self._net_reserved(destinations, leaving)
        if alike is not None and not count_leaving and isinstance(destinations, Sequence):
            node, why = self.find_alike(pod, destinations, accept, check, alike)
        else:
            node, why = self.find(pod, destinations, check, reserved)
        if node is None:
            if cache:
                self._no_fit[shape] = why
            return None, why
        affinity.add(pod, node)
        spread.add(pod, node)
        zones.add(pod, node)
        self.promise(pod, node)
        return node, ""

    def unplace(self, pod: PodRecord, node: str) -> None:
        self.version += 1
        affinity, spread, zones = self.indexes()
        affinity.remove(pod, node)
        spread.remove(pod)
        zones.remove(pod, node)
        add_pod(self.reserved[node], pod, -1)

    def unknown_scheduler(self, pod: PodRecord) -> str | None:
        """Why nodemedic cannot say where the pod's scheduler would put it, or None: node fit predicts kube-scheduler
        with the profiles the policy names (policy/scheduler.py), not a scheduler it does not know."""
        if pod.scheduler_name in self._known_schedulers:
            return None
        return (f"schedulerName {pod.scheduler_name!r} is not a scheduler nodemedic knows (scheduler.profile, "
                f"packingProfile, otherSchedulers): where it would place the pod cannot be predicted")

    def place_on_new_node(self, pod: PodRecord, source: NodeRecord) -> str | None:
        """Reserve room for `pod` on the new node like `source` that the autoscaler adds, or say why it would not
        fit."""
        if (unknown := self.unknown_scheduler(pod)) is not None:
            return unknown
        drop = {r.taint.key for r in self.policy.rules} | {t.key for t in self.planned_taints.get(source.name, ())}
        room = self.new_nodes.setdefault(source.name, {})
        why = new_node_reason(pod, source, self.snapshot, drop_taints=drop | set(AUTOSCALER_TAINTS), held=room)
        if why is None:
            add_pod(room, pod)
        return why

    def _net_reserved(self, nodes: Collection[str], leaving: PodRecord | None) -> dict[str, Room]:
        """Per node, the room promised there less the room pods planned to leave it free (and `leaving`)."""
        out: dict[str, Room] = {}
        for node in nodes:
            room = out[node] = dict(self.reserved.get(node, {}))
            add(room, self.released.get(node, {}), -1)
            if leaving is not None and leaving.node_name == node:
                add_pod(room, leaving, -1)
        return out
