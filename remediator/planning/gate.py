"""The gate: the one way a strategy plans anything, and all it sees of the plan so far.

Every strategy gets a Gate (strategies/strategy.py). A deschedule strategy hands it candidates (`admit`); a balance
strategy moves pods one at a time (`move`, `exchange`), because what it tries next depends on what the gate let
through. Every entry point walks the same checks in the same order (checks.py: ORDER) and ends with node fit; the
books (books.py) keep what each strategy planned so that the next sees it. What the gate does not decide, a
strategy returns as its Wants (wants.py), which the planner merges. The rest of the surface only reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from remediator.model import TERMINAL_PHASES, PlannedEviction, PodRecord, Protected, Taint
from remediator.planning.books import Accept, Books
from remediator.planning.checks import Refusal, Verdict, walk
from remediator.planning.memory import Remembered
from remediator.policy.scheduler import SchedulerSettings

NODE, CYCLE = "node", "cycle"  # how far a refusal reaches: the rest of this source node, or the rest of the plan


@dataclass(frozen=True)
class Outcome:
    evicted: bool
    stop: str | None = None  # NODE or CYCLE when trying further pods there is pointless
    destination: str | None = None  # the node the move counted on, when evicted


class Gate:
    """One strategy's gate; every strategy's gate of a plan shares the plan's books."""

    def __init__(self, books: Books, *, strategy: str, terminal_pods: bool,
                 evict_taints: Mapping[str, Sequence[Taint]], breaker_open: bool) -> None:
        self._books = books
        self._strategy = strategy
        self._terminal_pods = terminal_pods  # the strategy may evict Succeeded/Failed pods (strategy.py)
        self._evict_taints = evict_taints
        self._breaker_open = breaker_open

    # --- deschedule strategies: candidates -----------------------------------------------------------------
    def admit(self, c: PlannedEviction) -> None:
        """The checks, then node fit anywhere outside the excluded nodes (when nodeFit is on). A terminal pod, for a
        strategy that may evict Succeeded/Failed pods, needs no destination (it holds no resources and nothing
        replaces it because of the eviction), so node fit is not asked (DS-TERM-1)."""
        books = self._books
        if self._record(walk(books, c.pod, move=False, terminal=self._terminal_pods), c.pod) is not None:
            return
        destination: str | None = None
        if books.policy.evictor.node_fit and c.pod.phase not in TERMINAL_PHASES:
            destination, why = books.place(c.pod, None, None, cache=True)
            if destination is None:
                destination, c, why = self._on_new_node(c, why)
            if destination is None:
                books.decide(Protected(c.pod, "no other node fits: " + why), protected=True)
                return
        books.commit(c, destination)

    def fits(self, pod: PodRecord, accept: Accept | None = None) -> str | None:
        """A node the pod could go to now (`accept`ed, when given), or None; reserves nothing. For a deschedule
        strategy whose rule is itself about a better node (node affinity), with the plan's books."""
        books = self._books
        return books.find(pod, books.every_by_room(), accept, books.reserved)[0]

    def evicting(self, pod_key: str) -> bool:
        """Is the pod planned for eviction this plan (by any strategy so far)?"""
        return pod_key in self._books.evicting

    def _on_new_node(self, c: PlannedEviction, why: str) -> tuple[str | None, PlannedEviction, str]:
        """A candidate that fits no node there is: (its own node, `c` saying which new node it counts on, "") when a
        node autoscaler adds a node like its own that takes it (autoscaler.addsNodes); else (None, `c`, why not)."""
        books = self._books
        source = books.snapshot.nodes.get(c.pod.node_name)
        if source is None:
            return None, c, f"{why}; its node is gone"
        adder, nobody = books.who_adds(source)
        if adder is None:
            return None, c, f"{why}; {nobody}" if nobody else why
        new_node_why = books.place_on_new_node(c.pod, source)
        if new_node_why is not None:
            return None, c, f"{why}; {new_node_why}"
        return source.name, PlannedEviction(c.pod, c.strategy, f"{c.reason}; no node has room now: to a new node "
                                                               f"like {source.name} from {adder}"), ""

    # --- balance strategies: one pod at a time ------------------------------------------------------------
    def refusal(self, c: PlannedEviction) -> str | None:
        """Why `move` would refuse to let `c.pod` go, before any node fit; decides nothing (a strategy planning
        several moves at once asks first, so that it does not start what the gate would stop halfway)."""
        refusal = walk(self._books, c.pod, move=True)
        return None if refusal is None else refusal.why

    def move(self, c: PlannedEviction, destinations: Sequence[str], *, accept: Accept | None = None,
             count_leaving: bool = False) -> Outcome:
        """Evict `c.pod` if it may go and fits one of `destinations` (always checked, whatever nodeFit says:
        a balance move is only worth making towards a node that takes the pod). `destinations` in the order to
        try them: `by_room(...)` gives the roomiest first. `count_leaving`: room on a destination that pods
        planned to leave it this plan free counts (a chain of moves, made in order, each after the ones before
        it have left); otherwise only room free now counts."""
        books, pod = self._books, c.pod
        refused = self._record(walk(books, pod, move=True), pod)
        if refused is not None:
            return Outcome(False, stop={Verdict.STOP_NODE: NODE, Verdict.STOP_PLAN: CYCLE}.get(refused))
        destination, why = books.place(pod, destinations, accept, cache=False, count_leaving=count_leaving)
        if destination is None:
            books.decide(Protected(pod, "no destination fits: " + why), protected=True)
            return Outcome(False)
        books.commit(PlannedEviction(pod, c.strategy, f"{c.reason}; to {destination} or alike"), destination)
        return Outcome(True, destination=destination)

    def exchange(self, a: PlannedEviction, b: PlannedEviction) -> bool:
        """Swap two pods of different nodes, `a.pod` to `b.pod`'s node and `b.pod` to `a.pod`'s, each counting the
        room the other leaves (a balance move where neither pod fits alone): both are evicted, or neither. Each
        must pass the checks alone and after the other (limits and PDB budgets counted for two), then fit with the
        plan's books, zone and soft spread. A refusal decides nothing: the pods stay free for other moves."""
        books, pa, pb = self._books, a.pod, b.pod
        if pa.node_name == pb.node_name or self.refusal(a) is not None or self.refusal(b) is not None:
            return False
        if books.limits.refusal_together(pa, pb) is not None:
            return False
        in_both = {(x.namespace, x.name) for x in books.pdbs_matching(pa)}
        shared = [x for x in books.pdbs_matching(pb) if (x.namespace, x.name) in in_both]
        if any(books.pdb_used[(x.namespace, x.name)] + 2 > x.disruptions_allowed for x in shared):
            return False  # a PDB selecting both pods must allow both disruptions
        to_b, _ = books.place(pa, [pb.node_name], None, cache=False, count_leaving=True, leaving=pb)
        if to_b is None:
            return False
        to_a, _ = books.place(pb, [pa.node_name], None, cache=False, count_leaving=True, leaving=pa)
        if to_a is None:
            books.unplace(pa, to_b)
            return False
        for c, destination in ((a, to_b), (b, to_a)):
            books.commit(PlannedEviction(c.pod, c.strategy, f"{c.reason}; to {destination} or alike"), destination)
        return True

    def fits_all(self, pods: Sequence[PodRecord], destinations: Sequence[str]) -> tuple[bool, str]:
        """Would every pod find a destination together (each counting the room the others take)? Leaves no trace."""
        books = self._books
        placed: list[tuple[PodRecord, str]] = []
        verdict = (True, "")
        for pod in pods:
            destination, why = books.place(pod, destinations, None, cache=False)
            if destination is None:
                verdict = (False, f"{pod.key}: {why}")
                break
            placed.append((pod, destination))
        for pod, destination in reversed(placed):
            books.unplace(pod, destination)
        return verdict

    def promise(self, pod: PodRecord, node: str) -> None:
        """Hold room on `node` for a pending pod the plan makes room for, so no later move of the plan takes it."""
        self._books.promise(pod, node)

    def protect(self, pod: PodRecord, why: str) -> None:
        self._books.decide(Protected(pod, why), protected=True)

    def empty(self, node: str) -> None:
        """`node` is being emptied this plan: no pod may move there."""
        self._books.exclude.add(node)

    def _record(self, refusal: Refusal | None, pod: PodRecord) -> Verdict | None:
        """Record a refusal in the plan where it says so; its verdict, or None when the pod may go on to node fit."""
        if refusal is None:
            return None
        if refusal.verdict in (Verdict.PROTECTED, Verdict.DEFERRED):
            self._books.decide(Protected(pod, refusal.why), protected=refusal.verdict is Verdict.PROTECTED)
        return refusal.verdict

    # --- read-only: the plan so far ------------------------------------------------------------------------
    def usage(self, node: str) -> dict[str, int]:
        """What the node's pods request once this plan's moves are done."""
        return self._books.usage(node)

    def by_room(self, names: Iterable[str]) -> tuple[str, ...]:
        """`names` roomiest first: the order in which node fit tries destinations."""
        return self._books.by_room(names)

    def hold(self, node: str) -> str | None:
        """Why a safety rail keeps evictions off `node`, or None."""
        return self._books.hold(node)

    def protection(self, pod: PodRecord) -> str | None:
        """Why the DefaultEvictor protects `pod`, or None."""
        return self._books.protection(pod)

    def pdb_headroom(self, pod: PodRecord) -> dict[str, int]:
        """PDB ("namespace/name") -> disruptions it still allows this plan, for each PDB selecting `pod`."""
        return self._books.pdb_headroom(pod)

    def receiving(self, node: str) -> bool:
        """Some pod planned to move this plan counts on room on `node`."""
        return self._books.receiving(node)

    def exhausted(self) -> bool:
        """The total eviction limit is used up: no strategy can add an eviction (so none need look)."""
        return self._books.limits.exhausted()

    @property
    def decided(self) -> Set[str]:
        """Pod keys already evicted, protected or deferred this plan."""
        return self._books.decided

    @property
    def excluded(self) -> Set[str]:
        """Nodes no pod may move to: tainted, being tainted or emptied, or held back."""
        return self._books.exclude

    @property
    def planned_taints(self) -> Mapping[str, Sequence[Taint]]:
        """Node -> the taints this plan adds to it."""
        return self._books.planned_taints

    @property
    def evict_taints(self) -> Mapping[str, Sequence[Taint]]:
        """Node -> the taints it carries for a rule that evicts (`evict: true`)."""
        return self._evict_taints

    @property
    def moved_to(self) -> Mapping[str, str | None]:
        """Pod uid -> the node its planned eviction counted on, for every eviction of this plan and under way."""
        return self._books.moved_to

    @property
    def leaving(self) -> Sequence[tuple[PodRecord, str | None]]:
        """Evictions under way that the snapshot does not show yet, with the node each counted on."""
        return self._books.leaving

    @property
    def planned(self) -> Sequence[PlannedEviction]:
        """The evictions planned so far."""
        return self._books.plan.evictions

    @property
    def breaker_open(self) -> bool:
        """The circuit breaker holds a problem's taint back this plan."""
        return self._breaker_open

    @property
    def scheduler(self) -> SchedulerSettings:
        """The policy's `scheduler` section: the profiles that place moved pods and their default constraints."""
        return self._books.policy.scheduler

    @property
    def remembered(self) -> Remembered:
        """What the strategy returned to remember last time (Wants.remember)."""
        return self._books.memory.strategies.get(self._strategy, {})

    @property
    def carrying(self) -> Mapping[str, float]:
        """Nodes carrying the taint the strategy owns (strategy.py) -> the taint's age in seconds."""
        return self._books.carrying.get(self._strategy, {})
