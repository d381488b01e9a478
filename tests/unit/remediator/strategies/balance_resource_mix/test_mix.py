"""balance_resource_mix/mix.py: a node's lean (cpu% - memory% of its requests), the cluster's lean over the nodes in
scope, each node's signed distance from it, and the total the balancing engine lowers."""

from __future__ import annotations

import pytest

from remediator.strategies.balance_resource_mix.mix import deviation, lean, pct, total_deviation
from tests.unit.remediator.strategies.cluster import GiB, node, snapshot


def test_a_percentage_of_no_allocatable_is_zero() -> None:
    assert pct(500, 2000) == 25.0
    assert pct(500, 0) == 0.0


def test_a_node_s_lean_is_its_cpu_percent_less_its_memory_percent() -> None:
    assert lean({"cpu": 3000, "memory": 4 * GiB}, {"cpu": 4000, "memory": 16 * GiB}) == pytest.approx(50.0)
    assert lean({"memory": 8 * GiB}, {"cpu": 4000, "memory": 16 * GiB}) == pytest.approx(-50.0)


def test_a_resource_missing_from_usage_or_allocatable_counts_as_zero_percent() -> None:
    assert lean({}, {"cpu": 4000, "memory": 16 * GiB}) == 0.0
    assert lean({"cpu": 1000, "memory": GiB}, {"cpu": 2000}) == 50.0


def test_each_node_s_deviation_is_signed_from_the_cluster_s_pooled_lean() -> None:
    s = snapshot([node("cpu-heavy"), node("mem-heavy"), node("outside")], [])
    usage = {"cpu-heavy": {"cpu": 4000, "memory": 0}, "mem-heavy": {"cpu": 0, "memory": 16 * GiB},
             "outside": {"cpu": 4000}}
    cluster, excess = deviation(s, usage, ["cpu-heavy", "mem-heavy"])
    assert cluster == pytest.approx(0.0)  # 50% cpu and 50% memory pooled over the two
    assert excess == pytest.approx({"cpu-heavy": 100.0, "mem-heavy": -100.0})
    assert total_deviation(excess) == pytest.approx(200.0)


def test_the_cluster_lean_weighs_nodes_by_their_allocatable() -> None:
    s = snapshot([node("big", cpu=12000), node("small", cpu=4000)], [])
    usage = {"big": {"cpu": 12000, "memory": 8 * GiB}, "small": {"cpu": 0, "memory": 8 * GiB}}
    cluster, excess = deviation(s, usage, ["big", "small"])
    assert cluster == pytest.approx(75.0 - 50.0)  # 12000 of 16000 millicores, 16 of 32 GiB
    assert excess == pytest.approx({"big": 50.0 - 25.0, "small": -50.0 - 25.0})


def test_a_balanced_cluster_deviates_by_nothing() -> None:
    assert total_deviation({}) == 0.0
    s = snapshot([node("a"), node("b")], [])
    half = {"cpu": 2000, "memory": 8 * GiB}
    assert deviation(s, {"a": half, "b": half}, ["a", "b"]) == (0.0, {"a": 0.0, "b": 0.0})
