"""low_node_utilization/plan.py, one planning cycle at a time through the real gate: what an eviction says, a
destination never pushed above the target, the pooled room up to target ending the strategy, sources the busiest
first, an opted-out source left alone and the cases with nothing to do. The scenario table of
test_utilization_strategies.py covers descheduler's algorithm itself."""

from __future__ import annotations

from remediator.model.plan import Plan
from remediator.model.records import NodeRecord, PodRecord
from remediator.policy.safety import EXCLUDE_LABEL
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs
from remediator.strategies.low_node_utilization.plan import NAME
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

ARGS = LowNodeUtilizationArgs(thresholds=(("cpu", 20.0),), target_thresholds=(("cpu", 50.0),))


def on(name: str, count: int, cpu: int = 400) -> list[PodRecord]:
    return [pod(f"{name}-{i}", name, cpu=cpu) for i in range(count)]


def run(nodes: list[NodeRecord], pods: list[PodRecord], args: LowNodeUtilizationArgs = ARGS) -> Plan:
    return cycle(snapshot(nodes, pods), NAME, args)


def test_an_eviction_says_which_resource_of_its_node_is_above_target() -> None:
    plan = run([node("hot"), node("cold")], on("hot", 7) + on("cold", 1))  # 70 % and 10 % cpu
    assert evicted(plan) == ["hot-0", "hot-1"]
    assert plan.evictions[0].reason.startswith("node hot above target (cpu 70% > cpu 50%)")
    assert plan.evictions[1].reason.startswith("node hot above target (cpu 60% > cpu 50%)")
    assert {e.destination for e in plan.evictions} == {"cold"}


def test_no_pod_moves_where_it_would_take_the_destination_above_target() -> None:
    big = [pod("big", "hot", cpu=2100), *on("hot", 2)]  # 72.5 %: big alone would take cold to 62.5 %
    plan = run([node("hot"), node("cold")], big + on("cold", 1, cpu=400))
    assert evicted(plan) == ["hot-0", "hot-1"]
    assert {p.pod.name: p.why for p in plan.protected}["big"].endswith("1 would go above target cpu 50%")


def test_the_pooled_room_up_to_target_ends_the_strategy() -> None:
    """cold has 1600m up to its 50 % target: the four 400m pods of the busier source use it all, none of warm's
    moves."""
    plan = run([node("hot"), node("warm"), node("cold")], on("hot", 10) + on("warm", 8, cpu=300) + on("cold", 1))
    assert evicted(plan) == ["hot-0", "hot-1", "hot-2", "hot-3"]


def test_the_busiest_source_is_relieved_first() -> None:
    plan = run([node("a"), node("b"), node("cold1"), node("cold2")],
               on("a", 6) + on("b", 8) + on("cold1", 1) + on("cold2", 1))
    assert [e.pod.node_name for e in plan.evictions][:1] == ["b"]
    assert sorted(evicted(plan)) == ["a-0", "b-0", "b-1", "b-2"]


def test_an_opted_out_source_is_not_relieved() -> None:
    opted = node("hot", labels={EXCLUDE_LABEL: "true"})
    assert evicted(run([opted, node("cold")], on("hot", 7) + on("cold", 1))) == []


def test_nothing_moves_without_two_known_nodes_or_with_every_node_underutilized() -> None:
    assert evicted(run([node("hot")], on("hot", 9))) == []
    assert evicted(run([node("hot"), node("cold", ready=False)], on("hot", 9))) == []
    assert evicted(run([node("a"), node("b")], on("a", 1) + on("b", 2))) == []
