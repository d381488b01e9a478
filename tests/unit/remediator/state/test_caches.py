"""Watch caches: list once, watch from the list's resourceVersion, relist on 410 Gone, keep indexes right."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodemedic_common import kube_client
from nodemedic_common.informer import Informer
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import WatchExpired
from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.loader import parse_policy
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.caches import ClusterCache, snapshot_from_list
from remediator.state.derived import Derived
from remediator.strategies import CATALOG
from tests.scripted_kube import ScriptedKube
from tests.watch_server import WatchServer, big_object, serving

KEPT_POLICY = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: RemovePodsViolatingTopologySpreadConstraint
- name: RemoveFailedPods
- name: LowNodeUtilization
  args:
    thresholds: {cpu: 20, memory: 20, pods: 20}
    targetThresholds: {cpu: 30, memory: 30, pods: 30}
"""


def pod(name: str, node: str, rv: str, owner: str = "rs-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv,
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


def run_until(informer: Informer, done: Any) -> None:
    async def main() -> None:
        task = asyncio.create_task(informer.run())
        for _ in range(500):
            if done():
                break
            await asyncio.sleep(0.001)
        task.cancel()

    asyncio.run(main())


def test_a_410_gone_relists_and_other_events_are_applied_in_order() -> None:
    kube = ScriptedKube(
        lists=[{"metadata": {"resourceVersion": "10"}, "items": [pod("a", "n1", "9")]},
               {"metadata": {"resourceVersion": "50"}, "items": [pod("a", "n2", "45"), pod("c", "n1", "46")]}],
        watches=[[{"type": "ADDED", "object": pod("b", "n1", "11")},
                  {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}],
                 WatchExpired(410, "WATCH", "/api/v1/pods", "too old")],
    )
    cache = ClusterCache(kube, log=logging.getLogger("t"))  # type: ignore[arg-type]
    informer = cache.informers[1]
    informer.kube = kube  # type: ignore[assignment]
    run_until(informer, lambda: len(kube.calls) >= 5)
    assert {c.path for c in kube.calls} == {"/api/v1/pods"}
    assert kube.versions()[:4] == [("LIST", ""), ("WATCH", "10"), ("WATCH", "20"), ("LIST", "")]
    assert kube.versions()[4] == ("WATCH", "50"), "after a relist the watch resumes from the new list"
    assert set(cache.pods) == {"ns/a", "ns/c"}, "the relist replaced the cache (b is gone)"
    assert {k for k in cache.pods_by_node["n1"]} == {"ns/c"} and set(cache.pods_by_node["n2"]) == {"ns/a"}
    assert set(cache.pods_by_owner["rs-1"]) == {"ns/a", "ns/c"}


def test_an_event_over_the_line_bound_is_counted_and_the_node_cache_relists_past_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_client, "MAX_WATCH_LINE", 256 << 10)  # a small bound, so a 1 MiB event is over it
    big = {**big_object("n1", "3", 1 << 20), "status": {"allocatable": {"cpu": "4"}}}
    server = WatchServer("/api/v1/nodes",
                         lists=[{"metadata": {"resourceVersion": "1"}, "items": [big_object("n0", "1", 10)]},
                                {"metadata": {"resourceVersion": "3"}, "items": [big_object("n0", "1", 10), big]}],
                         watches=[[{"type": "ADDED", "object": big}]])
    registry = CollectorRegistry()

    async def body(base: str) -> None:
        async with Kube(Credentials(server=base, ssl=False), registry=registry) as kube:
            cache = ClusterCache(kube, log=logging.getLogger("t"))
            informer = next(i for i in cache.informers if i.path == "/api/v1/nodes")
            task = asyncio.create_task(informer.run())
            await server.wait_for(["LIST", "WATCH", "LIST", "WATCH"])
            assert not task.done(), "the informer survives"
            task.cancel()
            assert sorted(cache.nodes) == ["n0", "n1"]
            assert server.requests[3][1]["resourceVersion"] == "3", "the watch resumes after the relist"

    asyncio.run(serving(server, body))
    assert registry.get_sample_value("nodemedic_watch_lines_too_long_total", {"path": "/api/v1/nodes"}) == 1
    assert [kind for kind, _ in server.requests] == ["LIST", "WATCH", "LIST", "WATCH"]


def test_a_moved_or_deleted_pod_leaves_no_stale_index_entries() -> None:
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    cache._apply_pod("ADDED", pod("a", "n1", "1"))
    cache._apply_pod("MODIFIED", pod("a", "n2", "2"))
    assert "n1" not in cache.pods_by_node and set(cache.pods_by_node["n2"]) == {"ns/a"}
    cache._apply_pod("DELETED", pod("a", "n2", "3"))
    assert cache.pods == {} and cache.pods_by_node == {} and cache.pods_by_owner == {}


def test_a_snapshot_hands_out_the_same_list_for_a_node_or_owner_whose_pods_did_not_change() -> None:
    """The list's identity is its version (state/derived.py): kept while nothing changed, new once something did, and
    every list new after a relist; the lists follow the cache's order and contents either way."""
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    cache._apply_pod("ADDED", pod("a", "n1", "1"))
    cache._apply_pod("ADDED", pod("b", "n2", "1", owner="rs-2"))
    cache._apply_pod("ADDED", pod("c", "n2", "1", owner="rs-2"))
    first = cache.snapshot(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    second = cache.snapshot(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    assert all(second.pods_by_node[n] is first.pods_by_node[n] for n in ("n1", "n2"))
    assert second.pods_by_owner["rs-2"] is first.pods_by_owner["rs-2"]
    assert second.derived is first.derived, "what was worked out from those lists goes with them"

    cache._apply_pod("MODIFIED", {**pod("c", "n2", "2", owner="rs-2"), "status": {"phase": "Failed"}})
    third = cache.snapshot(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    assert third.pods_by_node["n1"] is first.pods_by_node["n1"], "n1's pods did not change"
    assert third.pods_by_node["n2"] is not first.pods_by_node["n2"]
    assert [(p.name, p.phase) for p in third.pods_by_node["n2"]] == [("b", "Running"), ("c", "Failed")]
    assert third.pods_by_owner["rs-1"] is first.pods_by_owner["rs-1"]
    assert third.pods_by_owner["rs-2"] is not first.pods_by_owner["rs-2"]

    cache._apply_pod("MODIFIED", pod("a", "n3", "3"))  # moved: both nodes change, n1 is gone
    cache._apply_pod("DELETED", pod("b", "n2", "4", owner="rs-2"))
    fourth = cache.snapshot(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    assert list(fourth.pods_by_node) == ["n2", "n3"] and [p.name for p in fourth.pods_by_node["n3"]] == ["a"]
    assert [p.name for p in fourth.pods_by_node["n2"]] == [p.name for p in fourth.pods_by_owner["rs-2"]] == ["c"]

    cache._reset_pods([(p, ()) for p in cache.pods.values()])  # a relist: the same pods, every list new
    fifth = cache.snapshot(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))
    assert all(fifth.pods_by_node[n] is not fourth.pods_by_node[n] for n in fifth.pods_by_node)
    assert {n: [p.name for p in ps] for n, ps in fifth.pods_by_node.items()} == {"n2": ["c"], "n3": ["a"]}


def test_a_plan_made_with_what_earlier_cycles_kept_is_the_plan_made_from_scratch() -> None:
    """Cycle after cycle on one cache, with pods moving, failing and going: every plan equals the plan of the same
    snapshot with nothing kept."""
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    policy = parse_policy(KEPT_POLICY, source="p.yaml", catalog=CATALOG)
    for i in range(3):
        cache._apply_node("ADDED", {
            "metadata": {"name": f"n{i}", "labels": {"topology.kubernetes.io/zone": f"z{i % 2}"}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}})
    for i in range(6):
        cache._apply_pod("ADDED", {**pod(f"p{i}", f"n{i % 2}", "1"), "spec": {
            "nodeName": f"n{i % 2}", "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}})
    now = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    events: list[tuple[str, dict[str, Any]] | None] = [
        None, ("MODIFIED", {**pod("p0", "n2", "2"), "spec": {"nodeName": "n2"}}),
        ("MODIFIED", {**pod("p1", "n1", "3"), "status": {"phase": "Failed"}}), ("DELETED", pod("p2", "n0", "4")), None]
    evictions = 0
    for event in events:
        if event is not None:
            cache._apply_pod(*event)
        snapshot = cache.snapshot(now)
        kept = make_plan(snapshot, policy, PlannerMemory())
        fresh = make_plan(dataclasses.replace(snapshot, derived=Derived()), policy, PlannerMemory())
        assert PlanAnswer.of(kept).to_json() == PlanAnswer.of(fresh).to_json()
        assert len(cache.derived.requests) > 0, "the cache keeps what the plans worked out"
        evictions += len(kept.evictions)
    assert evictions, "the plans move pods, so a stale request or zone count would show"


def test_a_kubectl_list_becomes_a_snapshot() -> None:
    doc = {"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2"}}},
        {"kind": "Pod", **pod("a", "n1", "1")},
        {"kind": "PodDisruptionBudget", "metadata": {"name": "p", "namespace": "ns"},
         "spec": {"selector": {"matchLabels": {"app": "x"}}}, "status": {"disruptionsAllowed": 1}},
        {"kind": "PriorityClass", "metadata": {"name": "high"}, "value": 100000},
        {"kind": "PriorityClass", "metadata": {"name": "broken"}, "value": "high"},
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "ns"},
         "spec": {"storageClassName": "fast"}},
        {"kind": "PersistentVolumeClaim", "metadata": {"name": "old", "namespace": "ns"}, "spec": {}},
    ]}
    snap = snapshot_from_list(doc, dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    assert list(snap.nodes) == ["n1"] and snap.nodes["n1"].allocatable == {"cpu": 2000}
    assert [p.name for p in snap.pods("n1")] == ["a"]
    assert snap.pdbs[0].disruptions_allowed == 1
    assert snap.priority_classes == {"high": 100000}, "a class without an integer value is left out"
    assert snap.claim_classes == {"ns/data": "fast", "ns/old": ""}


def test_claims_storage_classes_follow_their_watch() -> None:
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    claim = {"metadata": {"name": "data", "namespace": "ns"}, "spec": {"storageClassName": "fast"}}
    cache._reset_claims([claim, {"metadata": {"name": "tmp", "namespace": "ns"}, "spec": {}}])
    cache._apply_claim("DELETED", {"metadata": {"name": "tmp", "namespace": "ns"}})
    cache._apply_claim("ADDED", {"metadata": {"name": "logs", "namespace": "x"}, "spec": {"storageClassName": "s"}})
    assert cache.snapshot(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).claim_classes == {"ns/data": "fast", "x/logs": "s"}


def test_priority_classes_follow_their_watch() -> None:
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    cache._reset_priority_classes([{"metadata": {"name": "high"}, "value": 1000},
                                   {"metadata": {"name": "low"}, "value": 10}])
    cache._apply_priority_class("MODIFIED", {"metadata": {"name": "high"}, "value": 2000})
    cache._apply_priority_class("DELETED", {"metadata": {"name": "low"}, "value": 10})
    assert cache.snapshot(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).priority_classes == {"high": 2000}


def node_with(condition_status: str, transition: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": "n1", "resourceVersion": rv},
            "status": {"conditions": [{"type": "KernelDeadlock", "status": condition_status,
                                       "lastTransitionTime": transition, "lastHeartbeatTime": f"hb-{rv}"}]}}


def test_a_condition_keeps_the_time_our_watch_first_saw_its_transition() -> None:
    clock = [dt.datetime(2026, 1, 1, 12, 0, 0, 400000, tzinfo=dt.UTC)]
    cache = ClusterCache(ScriptedKube([], []), log=logging.getLogger("t"), clock=lambda: clock[0])  # type: ignore[arg-type]

    def seen() -> dt.datetime | None:
        return cache.nodes["n1"].condition("KernelDeadlock").observed_at  # type: ignore[union-attr]

    cache._apply_node("ADDED", node_with("True", "2026-01-01T12:00:00Z", "1"))
    first = clock[0]
    assert seen() == first
    clock[0] += dt.timedelta(seconds=30)
    cache._apply_node("MODIFIED", node_with("True", "2026-01-01T12:00:00Z", "2"))  # a heartbeat, same transition
    assert seen() == first
    cache._reset_nodes([node_with("True", "2026-01-01T12:00:00Z", "3")])  # a relist after 410 Gone
    assert seen() == first, "a relist keeps what the watch already knew"
    cache._apply_node("MODIFIED", node_with("False", "2026-01-01T12:00:30Z", "4"))  # a real transition
    assert seen() == clock[0]
