"""Equal values that many pods hold, held once: what replicas of a workload have in common is one object in the
cache, not one per pod.

Why: every value decoded from the API's JSON is a new object, and replicas of one workload decode to equal labels,
owners, tolerations (every pod carries the two the API server adds for NotReady and unreachable nodes), requests,
images and constraints, on the same namespace, node, phase and QoS strings. In bench-descheduler's cluster a
decoded pod took 3,299 bytes, most of it such copies; the cache holds every pod of the cluster between cycles.

Bounded: each table keeps the last `SIZE` distinct values it was asked for (the least recently used goes first), so
a rare value costs only its own copy, as it did before, and no table keeps more than `SIZE` values alive (the one
field without a small size bound, annotations, is shared only while small: records.py). Only
values nobody changes are shared: tuples of frozen records, strings, datetimes, and the records' dicts, which no
reader changes (records are read-only, state/derived.py). A shared dict keeps the order it was decoded in: only
dicts with their items in the same order are one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

SIZE = 8192  # distinct values a table keeps: more than the workloads of a 150,000-pod cluster

H = TypeVar("H", bound=Hashable)
V = TypeVar("V", bound=Hashable)


def _first(value: Any) -> Any:
    return value


class Shared(Generic[H]):
    """One table of immutable values: each value asked for → the equal one asked for first (while kept)."""

    def __init__(self) -> None:
        self._one: Callable[[H], H] = functools.lru_cache(maxsize=SIZE)(_first)

    def __call__(self, value: H) -> H:
        return self._one(value)


class SharedMaps(Generic[V]):
    """One table of dicts: each dict asked for → the one with the same items in the same order asked for first."""

    def __init__(self) -> None:
        self._one: Callable[[tuple[tuple[str, V], ...]], dict[str, V]] = functools.lru_cache(maxsize=SIZE)(dict)

    def __call__(self, value: dict[str, V]) -> dict[str, V]:
        return self._one(tuple(value.items()))
