"""The moments of one fault, in seconds since it was made: what the repair benchmark times and prints.

A probe is polled; the first time it is truthy, its moment is kept (later truthy values do not move it). The clock is
injected, so the helper is tested without sleeping.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class Timeline:
    """Named moments, each the first time it was seen, in seconds since `start` (or since construction)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, start: float | None = None) -> None:
        self.clock = clock
        self.t0 = clock() if start is None else start
        self.moments: dict[str, float] = {}

    def mark(self, name: str, value: T) -> T:
        """`value` unchanged; the moment of `name` kept the first time `value` is truthy."""
        if value and name not in self.moments:
            self.moments[name] = self.clock() - self.t0
        return value

    def elapsed(self) -> float:
        return self.clock() - self.t0

    def get(self, name: str) -> float | None:
        return self.moments.get(name)

    def ordered(self) -> list[tuple[str, float]]:
        """(name, seconds) in the order they happened; two at the same moment in the order they were marked."""
        return sorted(self.moments.items(), key=lambda kv: kv[1])


def seconds(value: float | None, *, missing: str = "-") -> str:
    """`12.3 s`, or `missing` where the moment was never seen."""
    return missing if value is None else f"{value:.1f} s"
