"""A node's cpu:memory mix against the cluster's: the measure the balancing engine lowers."""

from __future__ import annotations

from collections.abc import Mapping

from remediator.state.snapshot import Snapshot


def lean(used: Mapping[str, int], allocatable: Mapping[str, int]) -> float:
    """cpu% - memory% of a node's requests."""
    return pct(used.get("cpu", 0), allocatable.get("cpu", 0)) - pct(used.get("memory", 0),
                                                                       allocatable.get("memory", 0))


def pct(used: int, allocatable: int) -> float:
    return 100.0 * used / allocatable if allocatable > 0 else 0.0


def deviation(snapshot: Snapshot, usage: Mapping[str, Mapping[str, int]],
              scope: list[str]) -> tuple[float, dict[str, float]]:
    """The cluster's lean and each node's signed distance from it (positive: more CPU-heavy than the cluster)."""
    total_used = {r: sum(usage[n].get(r, 0) for n in scope) for r in ("cpu", "memory")}
    total_alloc = {r: sum(snapshot.nodes[n].allocatable.get(r, 0) for n in scope) for r in ("cpu", "memory")}
    cluster = lean(total_used, total_alloc)
    return cluster, {n: lean(usage[n], snapshot.nodes[n].allocatable) - cluster for n in scope}


def total_deviation(excess: Mapping[str, float]) -> float:
    return sum(abs(e) for e in excess.values())
