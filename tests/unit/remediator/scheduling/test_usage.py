"""Requests-based utilization as descheduler computes it: percent of allocatable (a resource the node lacks is 0 %
or 100 %), static or deviation thresholds, the over/under checks, and the order pods are evicted in."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.model.records import PodRecord
from remediator.scheduling.usage import (
    PREFER_NO_EVICTION,
    above,
    at_or_below,
    describe,
    eviction_order,
    levels,
    live_pods,
    percent,
    percentages,
)
from remediator.state.snapshot import Snapshot


@pytest.mark.parametrize(("used", "allocatable", "expected"), [
    (500, 2000, 25.0), (0, 2000, 0.0), (3000, 2000, 150.0), (0, 0, 0.0), (1, 0, 100.0), (5, -1, 100.0)])
def test_percent_of_allocatable_and_a_missing_resource_is_0_or_100(used: int, allocatable: int,
                                                                    expected: float) -> None:
    assert percent(used, allocatable) == expected


def test_percentages_covers_exactly_the_resources_asked_for() -> None:
    assert percentages({"cpu": 1000, "memory": 5}, {"cpu": 4000, "pods": 10}, ["cpu", "pods", "gpu"]) == {
        "cpu": 25.0, "pods": 0.0, "gpu": 0.0}


def test_static_levels_are_the_thresholds_and_targets_as_given() -> None:
    low, high = levels({"cpu": 20.0}, {"cpu": 50.0}, deviation=False, usage=[{"cpu": 90.0}])
    assert (low, high) == ({"cpu": 20.0}, {"cpu": 50.0})


def test_deviation_levels_are_around_the_mean_usage_clamped_to_0_and_100() -> None:
    usage = [{"cpu": 10.0, "memory": 90.0}, {"cpu": 30.0, "memory": 100.0}]
    low, high = levels({"cpu": 5.0, "memory": 10.0}, {"cpu": 15.0, "memory": 10.0}, deviation=True, usage=usage)
    assert low == {"cpu": 15.0, "memory": 85.0}
    assert high == {"cpu": 35.0, "memory": 100.0}
    low, high = levels({"cpu": 50.0}, {}, deviation=True, usage=usage)
    assert (low, high) == ({"cpu": 0.0}, {"cpu": 20.0})  # no target for cpu: the mean itself


def test_deviation_levels_without_nodes_are_around_zero() -> None:
    assert levels({"cpu": 10.0}, {"cpu": 10.0}, deviation=True, usage=[]) == ({"cpu": 0.0}, {"cpu": 10.0})


def test_at_or_below_and_above_compare_only_the_limited_resources() -> None:
    pct = {"cpu": 50.0, "memory": 80.0, "pods": 99.0}
    assert at_or_below(pct, {"cpu": 50.0, "memory": 80.0})
    assert not at_or_below(pct, {"cpu": 49.9})
    assert above(pct, {"memory": 70.0, "cpu": 40.0, "pods": 99.0}) == ["cpu", "memory"]
    assert above(pct, {}) == []


def test_describe_lists_the_resources_sorted_in_whole_percent() -> None:
    assert describe({"memory": 80.4, "cpu": 49.6}) == "cpu 50%, memory 80%"


def _pod(name: str, *, priority: int | None = None, qos: str = "Burstable", ns: str = "a",
         annotations: dict[str, str] | None = None, **fields: object) -> PodRecord:
    return PodRecord(namespace=ns, name=name, uid=f"uid-{name}", node_name="n1", priority=priority, qos=qos,
                     annotations=annotations or {}, **fields)  # type: ignore[arg-type]


def test_eviction_order_no_priority_then_ascending_priority_then_qos_then_prefer_no_eviction_then_name() -> None:
    pods = [
        _pod("g", priority=10, qos="Guaranteed"),
        _pod("prefer", priority=10, qos="BestEffort", annotations={PREFER_NO_EVICTION: ""}),
        _pod("be", priority=10, qos="BestEffort"),
        _pod("zero", priority=0),
        _pod("none-b", ns="b"),
        _pod("none-a"),
        _pod("negative", priority=-5),
        _pod("odd-qos", priority=10, qos="Unknown"),  # ranks as Burstable
        _pod("burst", priority=10),
    ]
    assert [p.name for p in eviction_order(pods)] == ["none-a", "none-b", "negative", "zero", "be", "prefer",
                                                      "burst", "odd-qos", "g"]


def test_live_pods_leaves_out_finished_and_terminating_pods() -> None:
    pods = [_pod("run", phase="Running"), _pod("done", phase="Succeeded"), _pod("bye", phase="Running",
                                                                                   terminating=True),
            _pod("new", phase="Pending")]
    snap = Snapshot(now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), nodes={}, pods_by_node={"n1": pods}, pods_by_owner={})
    assert [p.name for p in live_pods(snap, "n1")] == ["run", "new"]
    assert live_pods(snap, "n2") == []
