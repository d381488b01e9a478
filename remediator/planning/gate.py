"""The gate: the one way a strategy plans anything, and all it sees of the plan so far.

Every strategy gets a Gate (strategies/strategy.py). A deschedule strategy hands it candidates (`admit`); a balance
strategy moves pods one at a time (`move`, `exchange`), because what it tries next depends on what the gate let
through. Every entry point walks the same checks in the same order (checks.py: ORDER) and ends with node fit; the
books (books.py) keep what each strategy planned so that the next sees it. What the gate does not decide, a
strategy returns as its Wants (wants.py), which the planner merges. What a strategy only reads of the plan so far
is the gate's `view` (view.py).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from remediator.model.plan import PlannedEviction, Protected
from remediator.model.records import TERMINAL_PHASES, PodRecord, Taint
from remediator.planning.books import Accept, Books
from remediator.planning.checks import Refusal, Verdict, rail_hold, walk
from remediator.planning.new_node import who_adds
from remediator.planning.pod_protection import protection
from remediator.planning.view import PlanView

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
        self._terminal_pods = terminal_pods  # the strategy may evict Succeeded/Failed pods (strategy.py)
        self.view = PlanView(
            decided=books.decided, evicting=books.evicting, excluded=books.exclude,
            planned_taints=books.planned_taints, evict_taints=evict_taints, moved_to=books.moved_to,
            leaving=books.leaving, planned=books.plan.evictions, breaker_open=breaker_open,
            scheduler=books.policy.scheduler, remembered=books.memory.strategies.get(strategy, {}),
            carrying=books.carrying.get(strategy, {}), usage=books.usage, by_room=books.by_room,
            hold=partial(rail_hold, books), protection=partial(_protection, books), pdb_headroom=books.pdb_headroom,
            receiving=books.receiving, exhausted=books.limits.exhausted)

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

    def fits(self, pod: PodRecord, accept: Accept | None = None, *, alike: Hashable | None = None) -> str | None:
        """A node the pod could go to now (`accept`ed, when given), or None; reserves nothing. For a deschedule
        strategy whose rule is itself about a better node (node affinity), with the plan's books. `alike`: as for
        `move`."""
        books = self._books
        if alike is not None:
            return books.find_alike(pod, books.every_by_room(), accept, accept, alike)[0]
        return books.find(pod, books.every_by_room(), accept, books.reserved)[0]

    def _on_new_node(self, c: PlannedEviction, why: str) -> tuple[str | None, PlannedEviction, str]:
        """A candidate that fits no node there is: (its own node, `c` saying which new node it counts on, "") when a
        node autoscaler adds a node like its own that takes it (autoscaler.addsNodes); else (None, `c`, why not)."""
        books = self._books
        source = books.snapshot.nodes.get(c.pod.node_name)
        if source is None:
            return None, c, f"{why}; its node is gone"
        adder, nobody = who_adds(source, books.policy.autoscaler.adds_nodes, books.snapshot.autoscalers)
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
             count_leaving: bool = False, alike: Hashable | None = None) -> Outcome:
        """Evict `c.pod` if it may go and fits one of `destinations` (always checked, whatever nodeFit says:
        a balance move is only worth making towards a node that takes the pod). `destinations` in the order to
        try them: `by_room(...)` gives the roomiest first. `count_leaving`: room on a destination that pods
        planned to leave it this plan free counts (a chain of moves, made in order, each after the ones before
        it have left); otherwise only room free now counts. `alike`: all that `accept` reads of the pod besides what
        node fit reads (its requests, labels, ...) and changes only when a move is planned, when the strategy can say
        it (None: it cannot); a move no node took is then answered for an alike pod without searching every node
        again (alike_searches.py)."""
        books, pod = self._books, c.pod
        refused = self._record(walk(books, pod, move=True), pod)
        if refused is not None:
            return Outcome(False, stop={Verdict.STOP_NODE: NODE, Verdict.STOP_PLAN: CYCLE}.get(refused))
        destination, why = books.place(pod, destinations, accept, cache=False, count_leaving=count_leaving,
                                       alike=alike)
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
        self._books.exclude_node(node)

    def _record(self, refusal: Refusal | None, pod: PodRecord) -> Verdict | None:
        """Record a refusal in the plan where it says so; its verdict, or None when the pod may go on to node fit."""
        if refusal is None:
            return None
        if refusal.verdict in (Verdict.PROTECTED, Verdict.DEFERRED):
            self._books.decide(Protected(pod, refusal.why), protected=refusal.verdict is Verdict.PROTECTED)
        return refusal.verdict


def _protection(books: Books, pod: PodRecord) -> str | None:
    """Why the DefaultEvictor protects `pod` (not a terminal pod's question: the gate's checks ask that), or None."""
    return protection(pod, books.snapshot, books.policy.evictor)
