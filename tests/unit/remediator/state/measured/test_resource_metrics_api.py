"""NodeMetrics and PodMetrics items to measured usage: fresh samples only."""

from __future__ import annotations

import datetime as dt

from remediator.state.measured.resource_metrics_api import usage_from_items

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def stamp(age: dt.timedelta) -> str:
    return (NOW - age).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_metrics(name: str, cpu: str, memory: str, age: dt.timedelta = dt.timedelta(seconds=10)) -> dict:
    return {"kind": "NodeMetrics", "metadata": {"name": name}, "timestamp": stamp(age), "window": "10s",
            "usage": {"cpu": cpu, "memory": memory}}


def pod_metrics(name: str, *containers: dict, age: dt.timedelta = dt.timedelta(seconds=10)) -> dict:
    return {"kind": "PodMetrics", "metadata": {"name": name, "namespace": "ns"}, "timestamp": stamp(age),
            "window": "10s", "containers": [{"name": f"c{i}", "usage": u} for i, u in enumerate(containers)]}


def test_node_and_pod_usage_in_millicores_and_bytes_a_pod_summed_over_its_containers() -> None:
    nodes, pods, dropped = usage_from_items([
        node_metrics("n1", "1500000000n", "2Gi"),
        pod_metrics("p", {"cpu": "250m", "memory": "100Mi"}, {"cpu": "1", "memory": "28Mi"}),
        {"kind": "Node", "metadata": {"name": "n1"}},  # other kinds of a snapshot file are not metrics
    ], now=NOW, max_age=MINUTE)
    assert nodes == {"n1": {"cpu": 1500, "memory": 2 << 30}}
    assert pods == {"ns/p": {"cpu": 1250, "memory": 128 << 20}}
    assert dropped == 0


def test_stale_unreadable_and_partly_measured_samples_are_unknown_not_zero() -> None:
    nodes, pods, dropped = usage_from_items([
        node_metrics("old", "1", "1Gi", age=2 * MINUTE),
        {"kind": "NodeMetrics", "metadata": {"name": "undated"}, "usage": {"cpu": "1", "memory": "1Gi"}},
        node_metrics("no-memory", "1", "1Gi") | {"usage": {"cpu": "1"}},
        pod_metrics("half", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1"}),
        pod_metrics("empty"),
    ], now=NOW, max_age=MINUTE)
    assert (nodes, pods, dropped) == ({}, {}, 5)
