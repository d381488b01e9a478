"""remove_duplicates/plan.py, one planning cycle through the real gate: which pods are duplicates (namespace, owners,
images), which nodes can take them (Ready, schedulable, taints tolerated), how many a node keeps
(`ceil(replicas / targets)`), where each goes and what its eviction says; scope and excludeOwnerKinds. The scenario
table of test_balance_strategies.py covers descheduler's algorithm itself."""

from __future__ import annotations

import dataclasses

from remediator.model.plan import Plan
from remediator.model.records import NodeRecord, PodRecord, Taint
from remediator.policy.fields import Namespaces
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_duplicates.args import RemoveDuplicatesArgs
from remediator.strategies.remove_duplicates.plan import NAME
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

THREE = [node("n1"), node("n2"), node("n3")]


def web(i: int, node_name: str, *, image: str = "nginx:1", **kw: object) -> PodRecord:
    return pod(f"web-{i}", node_name, owner_name="web", images=(image,), **kw)


def run(nodes: list[NodeRecord], pods: list[PodRecord], args: RemoveDuplicatesArgs | None = None) -> Plan:
    return cycle(snapshot(nodes, pods), NAME, args or RemoveDuplicatesArgs())


def test_three_replicas_on_one_of_three_nodes_spread_one_to_each_other_node() -> None:
    plan = run(THREE, [web(0, "n1"), web(1, "n1"), web(2, "n1")])
    assert len(plan.evictions) == 2
    assert sorted(e.destination or "" for e in plan.evictions) == ["n2", "n3"]
    assert plan.evictions[0].reason.startswith(
        "3 replicas of ReplicaSet/web on n1, more than 1 (per node over the 3 nodes that can take them)")


def test_a_node_keeps_up_to_its_share_rounded_up() -> None:
    """Five replicas over three targets: upper = 2, so n1 with four gives up two; n3, the roomiest, may take both
    (it ends with two, its share, fewer than n1 had)."""
    plan = run(THREE, [web(0, "n1"), web(1, "n1"), web(2, "n1"), web(3, "n1"), web(4, "n2")])
    assert [(e.pod.node_name, e.destination) for e in plan.evictions] == [("n1", "n3"), ("n1", "n3")]


def test_pods_of_one_owner_with_different_images_are_not_duplicates() -> None:
    assert evicted(run(THREE, [web(0, "n1", image="a"), web(1, "n1", image="b"), web(2, "n1", image="c")])) == []


def test_pods_without_an_owner_or_of_an_excluded_owner_kind_are_left_alone() -> None:
    bare = [pod(f"b-{i}", "n1", owner="", images=("x",)) for i in range(3)]
    assert evicted(run(THREE, bare)) == []
    pods = [web(i, "n1") for i in range(3)]
    assert evicted(run(THREE, pods, RemoveDuplicatesArgs(exclude_owner_kinds=("ReplicaSet",)))) == []


def test_pods_outside_the_scope_are_left_alone() -> None:
    pods = [web(i, "n1", namespace="kube-system") for i in range(3)]
    assert evicted(run(THREE, pods, RemoveDuplicatesArgs(scope=PodScope(Namespaces(exclude=("kube-system",)))))) \
        == []
    assert len(run(THREE, pods).evictions) == 2


def test_fewer_than_two_nodes_that_can_take_the_replicas_is_nothing_to_do() -> None:
    tainted = dataclasses.replace(node("n2"), taints=(Taint("dedicated", "gpu"),))
    nodes = [node("n1"), tainted, node("n3", unschedulable=True), node("n4", ready=False)]
    assert evicted(run(nodes, [web(i, "n1") for i in range(3)])) == []


def test_a_node_that_cannot_take_them_is_no_target_and_does_not_lower_the_share() -> None:
    """n3 is cordoned: two targets, upper = ceil(4/2) = 2, n1 gives two to n2."""
    nodes = [node("n1"), node("n2"), node("n3", unschedulable=True)]
    plan = run(nodes, [web(i, "n1") for i in range(4)])
    assert [e.destination for e in plan.evictions] == ["n2", "n2"]
    assert "more than 2 (per node over the 2 nodes that can take them)" in plan.evictions[0].reason
