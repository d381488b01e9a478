"""make_room_for_pending_pods/detect.py: which pending pods are stuck on fragmentation — refused for resources, no
node of their pool with room, the pool's free room adding up to their requests — in the scheduler's queue order,
each judged against its own pool, and the room stranded on those pools."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping

from remediator.model.records import NodeRecord, PodRecord, Taint
from remediator.state import records
from remediator.state.snapshot import Snapshot
from remediator.strategies.make_room_for_pending_pods.detect import (
    dimensions,
    free_vector,
    pool,
    refused_for_resources,
    stuck_pods,
    vector,
)
from tests.unit.remediator.strategies.cluster import GiB, node, pod, snapshot

INSUFFICIENT_CPU = "0/2 nodes are available: 2 Insufficient cpu."
MiB64 = 64 << 20


def pending(name: str, cpu: int, *, message: str = INSUFFICIENT_CPU, **kw: object) -> PodRecord:
    return pod(name, "", cpu=cpu, phase="Pending", unschedulable=message, **kw)


def cluster(nodes: list[NodeRecord], waiting: list[PodRecord]) -> Snapshot:
    return dataclasses.replace(snapshot(nodes, []), pending=waiting)


def used(cpu: int) -> dict[str, int]:
    return {"cpu": cpu, "memory": GiB, "pods": 5}


def stuck_names(s: Snapshot, usage: Mapping[str, Mapping[str, int]], *, exclude: set[str] | None = None,
                planned: Mapping[str, tuple[Taint, ...]] | None = None) -> list[str]:
    found, _ = stuck_pods(s, usage, exclude=exclude or set(), planned_taints=planned or {})
    return [st.pod.name for st in found]


SPLIT = {"n1": used(2500), "n2": used(2500)}  # 1500m free on each: 3000m in all, 1500m on any one node


def test_a_pod_whose_room_is_split_across_its_pool_is_stuck_and_the_pool_s_free_room_is_stranded() -> None:
    s = cluster([node("n1"), node("n2")], [pending("big", 2000)])
    found, stranded = stuck_pods(s, SPLIT, exclude=set(), planned_taints={})
    assert [(st.pod.name, st.resources, st.need, st.pool) for st in found] == [
        ("big", ("cpu", "memory", "pods"), (2000, MiB64, 1), ("n1", "n2"))]
    assert stranded == {"cpu": 3000, "memory": 2 * 15 * GiB}


def test_a_pod_is_not_stuck_when_one_node_has_room_or_the_pool_has_too_little_in_all() -> None:
    s = cluster([node("n1"), node("n2")], [pending("fits", 1000), pending("too-big", 3500)])
    assert stuck_names(s, SPLIT) == []


def test_a_pod_bigger_than_every_node_even_empty_is_not_stuck() -> None:
    s = cluster([node("n1", cpu=2000), node("n2", cpu=2000)], [pending("huge", 2500)])
    assert stuck_names(s, {"n1": used(0), "n2": used(0)}) == []


def test_only_pods_refused_for_resources_and_not_being_deleted_count() -> None:
    assert refused_for_resources(pending("a", 1, message="0/3 nodes are available: 3 Too many pods."))
    assert not refused_for_resources(pending("b", 1, message="0/3 nodes are available: 3 node(s) had taint"))
    assert not refused_for_resources(pending("c", 1, terminating=True))
    assert not refused_for_resources(pending("d", 1, message=""))
    s = cluster([node("n1"), node("n2")], [pending("affinity", 2000, message="didn't match Pod's node affinity")])
    assert stuck_names(s, SPLIT) == []


def test_stuck_pods_come_highest_priority_then_oldest_first() -> None:
    old, young = dt.timedelta(hours=2), dt.timedelta(minutes=1)
    waiting = [pending("low-old", 2000, priority=0, age=old), pending("high-young", 2000, priority=10, age=young),
               pending("low-young", 2000, age=young), pending("high-old", 2000, priority=10, age=old)]
    s = cluster([node("n1"), node("n2")], waiting)
    assert stuck_names(s, SPLIT) == ["high-old", "high-young", "low-old", "low-young"]


def test_a_pod_is_judged_against_the_nodes_it_could_go_to_alone() -> None:
    """The room on a node the pod may not go to (its selector, an untolerated or planned taint, an excluded node)
    does not count towards its pool."""
    s = cluster([node("n1", labels={"pool": "a"}), node("n2", labels={"pool": "a"}), node("n3", labels={"pool": "b"})],
                [pending("pool-a", 2000, node_selector={"pool": "a"})])
    usage = {"n1": used(3600), "n2": used(2500), "n3": used(2500)}  # 400m + 1500m free in pool a: too little
    assert stuck_names(s, usage) == []
    usage["n1"] = used(2500)
    assert stuck_names(s, usage) == ["pool-a"]
    assert stuck_names(s, usage, exclude={"n2"}) == []
    assert stuck_names(s, usage, planned={"n1": (Taint("nodemedic.io/x"),)}) == []


def test_the_pool_leaves_out_not_ready_cordoned_and_untolerated_tainted_nodes() -> None:
    tainted = dataclasses.replace(node("n4"), taints=(Taint("dedicated", "gpu"),))
    nodes = [node("n1"), node("n2", ready=False), node("n3", unschedulable=True), tainted]
    assert pool(pending("p", 1), nodes, exclude=set(), planned_taints={}) == ("n1",)


def test_a_pod_s_dimensions_are_cpu_memory_and_its_extended_resources_then_one_pod_slot() -> None:
    p = pending("gpu", 100, requests={"nvidia.com/gpu": 1, "cpu": 100, "ephemeral": 0, "pods": 3})
    resources = dimensions(p)
    assert resources == ("cpu", "memory", "nvidia.com/gpu", "pods")
    assert vector(p.requests, resources) == (100, 0, 1, 1)
    n = node("n1")
    assert free_vector(n, {"cpu": 1000, "pods": 10}, resources) == (3000, 16 * GiB, 0, 100)


def test_a_pod_needing_an_extended_resource_no_node_offers_is_not_stuck() -> None:
    s = cluster([node("n1"), node("n2")], [pending("gpu", 100, requests={"cpu": 100, "nvidia.com/gpu": 1})])
    assert stuck_names(s, {}) == []


def test_a_pod_held_by_someone_else_s_scheduling_gate_is_never_made_room_for() -> None:
    """Bad input (issue 41): a gate left on a pod by another controller. Its PodScheduled condition says
    SchedulingGated, not Unschedulable: nothing is moved for it, and nodemedic never removes a gate."""
    gated = records.pod({
        "metadata": {"name": "gated", "namespace": "shop", "uid": "u-gated"},
        "spec": {"schedulingGates": [{"name": "example.com/quota"}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "64Mi"}}}]},
        "status": {"phase": "Pending", "conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates"}]}})
    assert gated.unschedulable == "" and not refused_for_resources(gated)
    refused = dataclasses.replace(gated, unschedulable=INSUFFICIENT_CPU)  # the same pod, ungated and refused
    assert stuck_names(cluster([node("n1"), node("n2")], [refused]), SPLIT) == ["gated"]
    assert stuck_names(cluster([node("n1"), node("n2")], [gated]), SPLIT) == []
