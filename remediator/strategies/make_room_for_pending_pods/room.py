"""The free room of the nodes a search may use, for one set of resources, held column by column.

Every search ranks thousands of nodes by how short each is of its pending pod and by how roomy each is: one pass
per resource over a column of ints runs in a comprehension, where a tuple per node made each node a Python loop of
its own (5,000 nodes, 100 searches: 1.6 s that way, 0.35 s by columns). The ranks are the ones the per-node tuples
gave: the same sums, added in the same order.
"""

from __future__ import annotations

from collections.abc import Iterable

Vector = tuple[int, ...]


class Room:
    """Each node's free room (allocatable minus requests, "pods" counting slots), by node and by resource."""

    def __init__(self, rooms: Iterable[tuple[str, Vector]], width: int) -> None:
        self.names: list[str] = []
        self.columns: list[list[int]] = [[] for _ in range(width)]
        self._at: dict[str, int] = {}
        self._positions: dict[tuple[str, ...], tuple[list[str], list[int]]] = {}
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
        for column, value in zip(self.columns, vector, strict=True):
            column[at] = value

    def shortfalls(self, names: tuple[str, ...], need: Vector) -> list[tuple[int, str]]:
        """(how far each of `names` held here is short of `need`, summed over the resources, name)."""
        kept = self._positions.get(names)
        if kept is None:  # pods of one workload share their pool: its positions are looked up once
            known = [n for n in names if n in self._at]
            kept = self._positions[names] = (known, [self._at[n] for n in known])
        known, at = kept
        if not known:
            return []
        total = [0] * len(at)
        for column, q in zip(self.columns, need, strict=True):
            values = [column[i] for i in at]
            total = [t + q - f if q > f else t for t, f in zip(total, values, strict=True)]
        return list(zip(total, known, strict=True))

    def roomiest(self, need: Vector, count: int, skip: set[str]) -> list[str]:
        """The `count` nodes outside `skip` with the most room in units of `need` (each resource counting up to four
        times what it asks for), roomiest first, ties by name."""
        shares = [0.0] * len(self.names)
        for column, q in zip(self.columns, need, strict=True):
            if q > 0:
                cap = 4 * q
                shares = [s + (f if f < cap else cap) / q for s, f in zip(shares, column, strict=True)]
        wanted = count + len(skip)
        if wanted < len(shares):
            cut = sorted(shares, reverse=True)[wanted - 1]
            ranked = sorted((-s, n) for s, n in zip(shares, self.names, strict=True) if s >= cut)
        else:
            ranked = sorted(zip([-s for s in shares], self.names, strict=True))
        return [n for _, n in ranked if n not in skip][:count]
