"""The placement search: the fewest evictions that free one node enough for a pending pod.

Pure and free of Kubernetes: nodes are free-room vectors, pods are request vectors, `can_go(pod, node)` says
whether a pod's constraints (taints, selectors, affinity) accept a node, and `may_move(pod)` whether the pod may be
evicted at all (asked only of the pods of a set that covers a deficit: most pods never are); `reach(node)` bounds
what any one pod there asks for, so that a node no set of its pods could free is passed over before its pods are
listed.

The search is iterative deepening on the number of evictions: for k = 1, 2, ... it tries every target node the
pending pod may go to, every set of that node's movable pods that covers the node's deficit, and places each evicted
pod somewhere other than the target and its own node — directly where there is room, or (up to `depth` links) on a
node that itself evicts pods to make room, those counting towards k. The first k with a plan is the optimum for the
model; among the plans of that size the one with the lowest disruption cost wins; a plan no other can undercut (every
move at the lowest cost any move has) ends the search at once. Failed sub-searches are memoised on the pods still to
place and the room changed so far; a deadline stops the search (the best plan found so far, if any, is kept).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

Vector = tuple[int, ...]


@dataclass(frozen=True)
class Mover:
    """A pod the gate would let move: its key, its node, its requests (in the search's resource order) and how
    much evicting it disrupts (lower first)."""

    key: str
    node: str
    requests: Vector
    cost: float = 0.0
    budgets: tuple[str, ...] = ()  # the PDBs selecting it


@dataclass(frozen=True)
class Move:
    pod: Mover
    destination: str


@dataclass(frozen=True)
class Found:
    target: str
    moves: tuple[Move, ...]  # in the order to commit them: a pod leaves a node before another counts on its room
    cost: float


@dataclass
class Limits:
    max_evictions: int = 3
    depth: int = 1  # chain links: 0 = evicted pods go only where there is room now
    branch: int = 6  # destinations tried per pod (distinct free rooms, tightest first)
    deadline: float = float("inf")  # time.monotonic() after which the search gives up
    expired: bool = False
    cheapest: float = float("-inf")  # no move costs less than this (a lower bound: -inf when unknown)

    def floor(self, k: int) -> float:
        """The lowest cost a plan of 1 to k moves can have: once a plan costs this, no other can cost less."""
        return self.cheapest if self.cheapest >= 0 else k * self.cheapest


@dataclass
class _State:
    free: dict[str, Vector]
    movers: Mapping[str, Sequence[Mover]]
    can_go: Callable[[Mover, str], bool]
    may_move: Callable[[Mover], bool]
    reach: Callable[[str], Vector] | None
    headroom: Mapping[str, int]
    limits: Limits
    moved: set[str] = field(default_factory=set)
    pdb_used: dict[str, int] = field(default_factory=dict)
    changed: dict[str, Vector] = field(default_factory=dict)  # node -> free room before this search touched it
    failed: set[tuple[object, ...]] = field(default_factory=set)


def covers(vector: Vector, need: Vector) -> bool:
    return all(v >= n for v, n in zip(vector, need, strict=True))


def add(a: Vector, b: Vector) -> Vector:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def sub(a: Vector, b: Vector) -> Vector:
    return tuple(x - y for x, y in zip(a, b, strict=True))


def deficit(free: Vector, need: Vector) -> Vector:
    return tuple(max(0, n - f) for f, n in zip(free, need, strict=True))


def find_plan(need: Vector, targets: Sequence[str], free: Mapping[str, Vector], movers: Mapping[str, Sequence[Mover]],
              can_go: Callable[[Mover, str], bool], *, may_move: Callable[[Mover], bool] = lambda _: True,
              reach: Callable[[str], Vector] | None = None, headroom: Mapping[str, int] | None = None,
              limits: Limits | None = None) -> Found | None:
    """The fewest evictions after which `need` fits one of `targets` (ties: lowest total cost), or None.

    `free`: each node's free room now (allocatable minus requests, "pods" counting slots); `movers`: per node the
    pods that may be evicted, each `can_go` some node; `reach`: per node, at least what each of its movers asks for
    in every resource; `headroom`: per PDB how many more disruptions it allows.
    """
    limits = limits or Limits()
    state = _State(free=dict(free), movers=movers, can_go=can_go, may_move=may_move, reach=reach,
                   headroom=headroom or {}, limits=limits)
    ordered = sorted(targets, key=lambda n: (sum(deficit(free[n], need)), n))
    for k in range(1, limits.max_evictions + 1):
        best: Found | None = None
        floor = limits.floor(k)
        for target in ordered:
            if best is not None and best.cost <= floor:
                break  # no later target's plan can cost less, and a tie keeps the earlier one
            if _expired(limits):
                return best
            lack = deficit(state.free[target], need)
            if not any(lack):
                continue  # it fits already: not fragmentation (the scheduler will place it)
            # The pending pod takes its room first; the target is then a node like any other whose room must
            # not go negative, so pods may also move onto it (a swap: it gives a pod of one shape for another).
            _shift(state, target, tuple(-x for x in need))
            found = _free_target(state, target, lack, k)
            _shift(state, target, need)
            if found is not None and (best is None or found.cost < best.cost):
                best = found
        if best is not None:
            return best
    return None


def _expired(limits: Limits) -> bool:
    if not limits.expired and time.monotonic() > limits.deadline:
        limits.expired = True
    return limits.expired


def _subsets(pods: Sequence[Mover], lack: Vector, size: int,
             may_move: Callable[[Mover], bool]) -> Iterator[tuple[Mover, ...]]:
    """Sets of exactly `size` pods that may move and whose requests cover `lack`, cheapest first within the size."""
    if len(pods) < size:
        return
    # A set is minimal when no smaller one covers; the caller walks sizes upwards, so sets of `size` that cover
    # are the candidates. Enumerated in cost order: combinations of the cost-sorted list come out roughly so.
    for combo in itertools.combinations(pods, size):
        total = combo[0].requests
        for p in combo[1:]:
            total = add(total, p.requests)
        if covers(total, lack) and all(may_move(p) for p in combo):
            yield combo


def _free_target(state: _State, target: str, lack: Vector, k: int) -> Found | None:
    """The cheapest plan of at most k evictions that frees `lack` on `target`; the state is left unchanged."""
    if not _may_cover(state, target, lack, k):
        return None
    pods = sorted((p for p in state.movers.get(target, ()) if p.key not in state.moved),
                  key=lambda p: (p.cost, p.key))
    best: Found | None = None
    for size in range(1, k + 1):
        for chosen in _subsets(pods, lack, size, state.may_move):
            if _expired(state.limits):
                return best
            moves = _place_all(state, list(chosen), k - size, state.limits.depth, frozenset({target}))
            if moves is None:
                continue
            _undo(state, moves)
            cost = sum(m.pod.cost for m in moves)
            if best is None or cost < best.cost:
                best = Found(target, tuple(moves), cost)
            break  # the cheapest covering set of this size that places
        if best is not None and best.cost <= state.limits.floor(k):
            break  # a larger set cannot cost less
    return best


def _may_cover(state: _State, node: str, lack: Vector, size: int) -> bool:
    """Whether `size` of the node's pods could cover `lack` at all, by its bound (True without one)."""
    if state.reach is None:
        return True
    return all(size * r >= need for r, need in zip(state.reach(node), lack, strict=True))


def _take(state: _State, pod: Mover) -> bool:
    for b in pod.budgets:
        if state.pdb_used.get(b, 0) >= state.headroom.get(b, 1 << 30):
            return False
    state.moved.add(pod.key)
    for b in pod.budgets:
        state.pdb_used[b] = state.pdb_used.get(b, 0) + 1
    _shift(state, pod.node, pod.requests)
    return True


def _untake(state: _State, pod: Mover) -> None:
    state.moved.discard(pod.key)
    for b in pod.budgets:
        state.pdb_used[b] -= 1
    _shift(state, pod.node, tuple(-x for x in pod.requests))


def _shift(state: _State, node: str, delta: Vector) -> None:
    state.changed.setdefault(node, state.free[node])
    state.free[node] = add(state.free[node], delta)


def _place_all(state: _State, pods: list[Mover], budget: int, depth: int,
               forbidden: frozenset[str]) -> list[Move] | None:
    """Evict `pods` and give each a destination outside `forbidden`, using at most `budget` further evictions.
    Returns the moves in commit order, with the state left as if they were made; None leaves the state as it was."""
    taken: list[Mover] = []
    for p in pods:
        if not _take(state, p):
            for q in reversed(taken):
                _untake(state, q)
            return None
        taken.append(p)
    pending = sorted(pods, key=lambda p: (-sum(p.requests), p.key))
    moves = _place(state, pending, budget, depth, forbidden)
    if moves is None:
        for q in reversed(taken):
            _untake(state, q)
        return None
    return moves


def _memo_key(state: _State, pending: Sequence[Mover], budget: int, depth: int,
              forbidden: frozenset[str]) -> tuple[object, ...]:
    room = tuple(sorted((n, state.free[n]) for n in state.changed if state.free[n] != state.changed[n]))
    return (tuple(p.key for p in pending), room, frozenset(state.moved), budget, depth, forbidden)


def _place(state: _State, pending: list[Mover], budget: int, depth: int,
           forbidden: frozenset[str]) -> list[Move] | None:
    """Destinations for `pending` (already taken off their nodes), depth first; undoes itself on failure."""
    if not pending:
        return []
    if _expired(state.limits):
        return None
    key = _memo_key(state, pending, budget, depth, forbidden)
    if key in state.failed:
        return None
    found = _place_direct(state, pending, budget, depth, forbidden)
    if found is None and depth > 0 and budget > 0:
        found = _place_chained(state, pending, budget, depth, forbidden)
    if found is None:
        state.failed.add(key)
    return found


def _place_direct(state: _State, pending: list[Mover], budget: int, depth: int,
                  forbidden: frozenset[str]) -> list[Move] | None:
    """The first pod where there is room now, tightest room first (best fit keeps the roomy nodes for the pods
    still to place). A node being freed may take a pod where its room allows: the books keep what it must give."""
    pod, rest = pending[0], pending[1:]
    seen: set[Vector] = set()
    direct = sorted((n for n, room in state.free.items() if n != pod.node and covers(room, pod.requests)),
                    key=lambda n: (sum(sub(state.free[n], pod.requests)), n))
    for node in direct:
        room = state.free[node]
        if room in seen or not state.can_go(pod, node):
            continue
        seen.add(room)
        _shift(state, node, tuple(-x for x in pod.requests))
        after = _place(state, rest, budget, depth, forbidden)
        if after is not None:
            return [Move(pod, node), *after]
        _shift(state, node, pod.requests)
        if len(seen) >= state.limits.branch:
            break
    return None


def _place_chained(state: _State, pending: list[Mover], budget: int, depth: int,
                   forbidden: frozenset[str]) -> list[Move] | None:
    """The first pod on a node that makes room by moving some of its own pods on (counted against `budget`)."""
    pod, rest = pending[0], pending[1:]
    chained = sorted((n for n in state.free if n not in forbidden and n != pod.node
                      and not covers(state.free[n], pod.requests) and _any_may_move(state, n)),
                     key=lambda n: (sum(deficit(state.free[n], pod.requests)), n))
    tried = 0
    for node in chained:
        if tried >= state.limits.branch or _expired(state.limits):
            break
        if not state.can_go(pod, node):
            continue
        tried += 1
        lack = deficit(state.free[node], pod.requests)
        if not _may_cover(state, node, lack, budget):
            continue
        others = sorted((p for p in state.movers[node] if p.key not in state.moved), key=lambda p: (p.cost, p.key))
        sets = (c for size in range(1, budget + 1) for c in _subsets(others, lack, size, state.may_move))
        for chosen in itertools.islice(sets, state.limits.branch):
            inner = _place_all(state, list(chosen), budget - len(chosen), depth - 1, forbidden | {node})
            if inner is None:
                continue
            if covers(state.free[node], pod.requests):  # (a pod further down may have taken it back)
                _shift(state, node, tuple(-x for x in pod.requests))
                after = _place(state, rest, budget - len(inner), depth, forbidden)
                if after is not None:
                    return [*inner, Move(pod, node), *after]
                _shift(state, node, pod.requests)
            _undo(state, inner)
    return None


def _any_may_move(state: _State, node: str) -> bool:
    return any(state.may_move(p) for p in state.movers.get(node, ()))


def _undo(state: _State, moves: Sequence[Move]) -> None:
    for m in reversed(moves):
        _shift(state, m.destination, m.pod.requests)
        _untake(state, m.pod)
