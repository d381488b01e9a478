"""The free room of the nodes a search may use, for one set of resources, held column by column.

Every search ranks thousands of nodes by how short each is of its pending pod and by how roomy each is: one pass
per resource over a column of ints runs in a comprehension, where a tuple per node made each node a Python loop of
its own (5,000 nodes, 100 searches: 1.6 s that way, 0.35 s by columns). The ranks are the ones the per-node tuples
gave: the same sums, added in the same order.

The roomiest few of thousands, and the least short few of a pool, are found from each column's nodes kept in order
of their room, most first (Fagin's threshold algorithm): walking the columns down together, a node not met yet has
at most the room each column holds where the walk is, so once the few found are all roomier (or less short) than
that, no other node can be (on the placement benchmark's 5,000 nodes, 124 nodes looked at for the 96 roomiest asked).
Where a walk would go deep (nodes alike in room, ties at the cut), the columns are summed whole instead. On that
benchmark a warm cycle went from 0.63 to 0.34 s with these walks and node fit's affinity change (README, Performance).
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Iterable, Iterator

Vector = tuple[int, ...]


class Room:
    """Each node's free room (allocatable minus requests, "pods" counting slots), by node and by resource."""

    def __init__(self, rooms: Iterable[tuple[str, Vector]], width: int) -> None:
        self.names: list[str] = []
        self.columns: list[list[int]] = [[] for _ in range(width)]
        self._at: dict[str, int] = {}
        self._positions: dict[tuple[str, ...], tuple[list[str], list[int]]] = {}
        self._orders: dict[int, list[tuple[int, int]]] = {}  # column -> (-room, position) of every node, most first
        # (pool, column) -> the same of the pool's nodes; the pool's positions as a set
        self._pool_orders: dict[tuple[tuple[str, ...], int], list[tuple[int, int]]] = {}
        self._pool_sets: dict[tuple[str, ...], set[int]] = {}
        for name, vector in rooms:
            self._at[name] = len(self.names)
            self.names.append(name)
            for column, value in zip(self.columns, vector, strict=True):
                column.append(value)

    def __contains__(self, name: object) -> bool:
        return name in self._at

    def __getitem__(self, name: str) -> Vector:
        at = self._at[name]
        return tuple(column[at] for column in self.columns)

    def update(self, name: str, vector: Vector) -> None:
        at = self._at[name]
        for c, (column, value) in enumerate(zip(self.columns, vector, strict=True)):
            if column[at] == value:
                continue
            # every kept order holding the node: the whole column's, and those of the pools it is in
            orders = [order for (pool, oc), order in self._pool_orders.items()
                      if oc == c and at in self._pool_sets[pool]]
            if c in self._orders:
                orders.append(self._orders[c])
            for order in orders:
                del order[bisect.bisect_left(order, (-column[at], at))]
                bisect.insort(order, (-value, at))
            column[at] = value

    def by_shortfall(self, names: tuple[str, ...], need: Vector) -> Iterator[str]:
        """`names` held here, the least short of `need` first (the shortfalls summed over the resources), ties by
        name; worked out as far as the caller reads (a search reads a few dozen of a pool of thousands): walking the
        pool's nodes down from the roomiest in each resource asked for, a node is given once no node not met yet can
        be less short (each is short at least of what the walk's place in each column lacks). Where the walk would go
        deep, the rest are summed whole."""
        at = self._pool(names)[1]
        asked = [c for c, q in enumerate(need) if q > 0]
        orders = [self._pool_order(names, c) for c in asked]
        met: set[int] = set()
        given: set[str] = set()
        waiting: list[tuple[int, str]] = []  # a heap of the nodes met and not given yet
        for depth in range(len(at) // 4):
            for order in orders:
                position = order[depth][1]
                if position not in met:
                    met.add(position)
                    heapq.heappush(waiting, (self._short(position, need), self.names[position]))
            least = sum(max(0, need[c] + order[depth][0]) for c, order in zip(asked, orders, strict=True))
            while waiting and waiting[0][0] < least:
                name = heapq.heappop(waiting)[1]
                given.add(name)
                yield name
        rest = [(short, name) for short, name in self.shortfalls(names, need) if name not in given]
        heapq.heapify(rest)
        while rest:
            yield heapq.heappop(rest)[1]

    def shortfalls(self, names: tuple[str, ...], need: Vector) -> list[tuple[int, str]]:
        """(how far each of `names` held here is short of `need`, summed over the resources, name)."""
        known, at = self._pool(names)
        if not known:
            return []
        total = [0] * len(at)
        for column, q in zip(self.columns, need, strict=True):
            values = [column[i] for i in at]
            total = [t + q - f if q > f else t for t, f in zip(total, values, strict=True)]
        return list(zip(total, known, strict=True))

    def _short(self, position: int, need: Vector) -> int:
        """`shortfalls`' sum for one node."""
        return sum(q - column[position] for column, q in zip(self.columns, need, strict=True) if q > column[position])

    def _pool(self, names: tuple[str, ...]) -> tuple[list[str], list[int]]:
        kept = self._positions.get(names)
        if kept is None:  # pods of one workload share their pool: its positions are looked up once
            known = [n for n in names if n in self._at]
            kept = self._positions[names] = (known, [self._at[n] for n in known])
        return kept

    def _pool_order(self, names: tuple[str, ...], c: int) -> list[tuple[int, int]]:
        order = self._pool_orders.get((names, c))
        if order is None:
            at = self._pool(names)[1]
            self._pool_sets[names] = set(at)
            column = self.columns[c]
            order = self._pool_orders[(names, c)] = sorted((-column[i], i) for i in at)
        return order

    def roomiest(self, need: Vector, count: int, skip: set[str]) -> list[str]:
        """The `count` nodes outside `skip` with the most room in units of `need` (each resource counting up to four
        times what it asks for), roomiest first, ties by name."""
        wanted = count + len(skip)
        shares = self._most_shares(need, wanted) if wanted < len(self.names) else None
        if shares is None:
            shares = dict(enumerate(self._shares(need)))
        if wanted < len(shares):
            cut = sorted(shares.values(), reverse=True)[wanted - 1]
            ranked = sorted((-s, self.names[i]) for i, s in shares.items() if s >= cut)
        else:
            ranked = sorted((-s, self.names[i]) for i, s in shares.items())
        return [n for _, n in ranked if n not in skip][:count]

    def _shares(self, need: Vector) -> list[float]:
        """Every node's room in units of `need`, by position."""
        shares = [0.0] * len(self.names)
        for column, q in zip(self.columns, need, strict=True):
            if q > 0:
                cap = 4 * q
                shares = [s + (f if f < cap else cap) / q for s, f in zip(shares, column, strict=True)]
        return shares

    def _most_shares(self, need: Vector, wanted: int) -> dict[int, float] | None:
        """position -> share (`_shares`'s sum) of the nodes met walking the columns down from their roomiest, once
        the `wanted` largest met are all larger than any node not met can be: those met include every node whose
        share is at least the `wanted`th largest. None when the walk would look at more than an eighth of the nodes
        (`_shares` then costs less)."""
        asked = [(c, column, q, 4 * q) for c, (column, q) in enumerate(zip(self.columns, need, strict=True)) if q > 0]
        if not asked or wanted < 1:
            return None
        orders = [self._order(c) for c, *_ in asked]
        met: dict[int, float] = {}
        largest: list[float] = []  # a heap of the `wanted` largest shares met
        most = len(self.names) // 8
        for depth in range(len(self.names)):
            for order in orders:
                at = order[depth][1]
                if at in met:
                    continue
                # `_shares`'s sum: the same terms, added in the same order
                share = met[at] = _share([column[at] for _, column, _, _ in asked], asked)
                if len(largest) < wanted:
                    heapq.heappush(largest, share)
                elif share > largest[0]:
                    heapq.heapreplace(largest, share)
            if len(met) > most:
                return None
            # The most any node not met can have: each column's room where the walk is, summed as a share is (each
            # term grows with the room, and so does a float sum with each term).
            if len(largest) == wanted and largest[0] > _share([-order[depth][0] for order in orders], asked):
                return met
        return met

    def _order(self, c: int) -> list[tuple[int, int]]:
        order = self._orders.get(c)
        if order is None:
            order = self._orders[c] = sorted((-f, at) for at, f in enumerate(self.columns[c]))
        return order


def _share(rooms: list[int], asked: list[tuple[int, list[int], int, int]]) -> float:
    """The share of a node holding `rooms` in the columns `asked` ((column, its values, the pod's ask, the cap))."""
    share = 0.0
    for f, (_, _, q, cap) in zip(rooms, asked, strict=True):
        share = share + (f if f < cap else cap) / q
    return share
