"""Requests-based node utilization, as descheduler's utilization strategies compute it.

Usage is the sum of the requests of a node's non-terminal pods (and their count for `pods`), in percent of
allocatable. A resource the node does not offer counts as 0 % when nothing requests it and 100 % otherwise.
Thresholds are static, or with `useDeviationThresholds` distances below/above the mean usage of the nodes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from remediator.model.records import PodRecord
from remediator.state.snapshot import Snapshot

Percentages = dict[str, float]

# descheduler's SortPodsBasedOnPriorityLowToHigh: no priority first, then ascending priority, then QoS.
_QOS_RANK = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
PREFER_NO_EVICTION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"


def percent(used: int, allocatable: int) -> float:
    if allocatable <= 0:
        return 100.0 if used > 0 else 0.0
    return used * 100.0 / allocatable


def percentages(used: Mapping[str, int], allocatable: Mapping[str, int], resources: Iterable[str]) -> Percentages:
    return {r: percent(used.get(r, 0), allocatable.get(r, 0)) for r in resources}


def levels(thresholds: Mapping[str, float], targets: Mapping[str, float], *, deviation: bool,
           usage: Sequence[Mapping[str, float]]) -> tuple[Percentages, Percentages]:
    """(low, high) per resource: the thresholds as given, or around the mean usage with deviation."""
    if not deviation:
        return dict(thresholds), dict(targets)
    low, high = {}, {}
    for r in thresholds:
        mean = sum(u.get(r, 0.0) for u in usage) / len(usage) if usage else 0.0
        low[r] = min(100.0, max(0.0, mean - thresholds[r]))
        high[r] = min(100.0, max(0.0, mean + targets.get(r, 0.0)))
    return low, high


def at_or_below(pct: Mapping[str, float], limit: Mapping[str, float]) -> bool:
    return all(pct[r] <= limit[r] for r in limit)


def above(pct: Mapping[str, float], limit: Mapping[str, float]) -> list[str]:
    """The resources over their limit."""
    return [r for r in sorted(limit) if pct[r] > limit[r]]


def describe(pct: Mapping[str, float]) -> str:
    return ", ".join(f"{r} {pct[r]:.0f}%" for r in sorted(pct))


def eviction_order(pods: Iterable[PodRecord]) -> list[PodRecord]:
    """No priority first, then ascending priority; BestEffort < Burstable < Guaranteed; pods asking not to be
    evicted last; then by name so the order is stable."""
    return sorted(pods, key=lambda p: (p.priority is not None, p.priority or 0, _QOS_RANK.get(p.qos, 1),
                                       PREFER_NO_EVICTION in p.annotations, p.namespace, p.name))


def live_pods(snapshot: Snapshot, node: str) -> list[PodRecord]:
    return [p for p in snapshot.pods(node) if p.live]
