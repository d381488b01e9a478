"""The placement search: the fewest evictions that free one node enough for a pending pod.

Pure and free of Kubernetes: nodes are free-room vectors, pods are request vectors, and `can_go(pod, node)` says
whether a pod's constraints (taints, selectors, affinity) accept a node. The search is iterative deepening on
the number of evictions: for k = 1, 2, ... it tries every target node the pending pod may go to, every set of
that node's movable pods that covers the node's deficit, and places each evicted pod somewhere other than the
target and its own node — directly where there is room, or (up to `depth` links) on a node that itself evicts
pods to make room, those counting towards k. The first k with a plan is the optimum for the model; among the
plans of that size the one with the lowest disruption cost wins. Failed sub-searches are memoised on the pods
still to place and the room changed so far; a deadline stops the search (the best plan found so far, if any,
is kept).
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


@dataclass
class _State:
    free: dict[str, Vector]
    movers: Mapping[str, Sequence[Mover]]
    can_go: Callable[[Mover, str], bool]
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
              can_go: Callable[[Mover, str], bool], *, headroom: Mapping[str, int] | None = None,
              limits: Limits | None = None) -> Found | None:
    """The fewest evictions after which `need` fits one of `targets` (ties: lowest total cost), or None.

    `free`: each node's free room now (allocatable minus requests, "pods" counting slots); `movers`: per node the
    pods that may be evicted, each `can_go` some node; `headroom`: per PDB how many more disruptions it allows.
    """
    limits = limits or Limits()
    state = _State(free=dict(free), movers=movers, can_go=can_go, headroom=headroom or {}, limits=limits)
    ordered = sorted(targets, key=lambda n: (sum(deficit(free[n], need)), n))
    for k in range(1, limits.max_evictions + 1):
        best: Found | None = None
        for target in ordered:
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


def _subsets(pods: Sequence[Mover], lack: Vector, size: int) -> Iterator[tuple[Mover, ...]]:
    """Sets of exactly `size` pods whose requests cover `lack`, cheapest first within the size."""
    if len(pods) < size:
        return
    # A set is minimal when no smaller one covers; the caller walks sizes upwards, so sets of `size` that cover
    # are the candidates. Enumerated in cost order: combinations of the cost-sorted list come out roughly so.
    for combo in itertools.combinations(pods, size):
        total = combo[0].requests
        for p in combo[1:]:
            total = add(total, p.requests)
        if covers(total, lack):
            yield combo


def _free_target(state: _State, target: str, lack: Vector, k: int) -> Found | None:
    """The cheapest plan of at most k evictions that frees `lack` on `target`; the state is left unchanged."""
    pods = sorted((p for p in state.movers.get(target, ()) if p.key not in state.moved),
                  key=lambda p: (p.cost, p.key))
    best: Found | None = None
    for size in range(1, k + 1):
        for chosen in _subsets(pods, lack, size):
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
    return best


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
                      and not covers(state.free[n], pod.requests) and state.movers.get(n)),
                     key=lambda n: (sum(deficit(state.free[n], pod.requests)), n))
    tried = 0
    for node in chained:
        if tried >= state.limits.branch or _expired(state.limits):
            break
        if not state.can_go(pod, node):
            continue
        tried += 1
        lack = deficit(state.free[node], pod.requests)
        others = sorted((p for p in state.movers[node] if p.key not in state.moved), key=lambda p: (p.cost, p.key))
        sets = (c for size in range(1, budget + 1) for c in _subsets(others, lack, size))
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


def _undo(state: _State, moves: Sequence[Move]) -> None:
    for m in reversed(moves):
        _shift(state, m.destination, m.pod.requests)
        _untake(state, m.pod)
