"""Watch caches: list once, watch from the list's resourceVersion, relist on 410 Gone, keep indexes right."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import AsyncIterator
from typing import Any

from remediator.state.caches import ClusterCache, Informer, snapshot_from_list
from remediator.state.kube import WatchExpired


def pod(name: str, node: str, rv: str, owner: str = "rs-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "resourceVersion": rv,
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}]},
            "spec": {"nodeName": node}, "status": {"phase": "Running"}}


class FakeKube:
    """Scripted list and watch answers; records every call."""

    def __init__(self, lists: list[dict[str, Any]], watches: list[list[dict[str, Any]] | Exception]) -> None:
        self.lists, self.watches = lists, watches
        self.calls: list[tuple[str, str]] = []

    async def request(self, method: str, path: str, **_: Any) -> dict[str, Any]:
        self.calls.append(("LIST", path))
        return self.lists.pop(0)

    async def watch(self, path: str, resource_version: str) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(("WATCH", resource_version))
        if not self.watches:
            await asyncio.Event().wait()  # no more script: block like a quiet watch
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event


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
    kube = FakeKube(
        lists=[{"metadata": {"resourceVersion": "10"}, "items": [pod("a", "n1", "9")]},
               {"metadata": {"resourceVersion": "50"}, "items": [pod("a", "n2", "45"), pod("c", "n1", "46")]}],
        watches=[[{"type": "ADDED", "object": pod("b", "n1", "11")},
                  {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}],
                 WatchExpired("/api/v1/pods")],
    )
    cache = ClusterCache(kube, log=logging.getLogger("t"))  # type: ignore[arg-type]
    informer = cache.informers[1]
    informer.kube = kube  # type: ignore[assignment]
    run_until(informer, lambda: len(kube.calls) >= 5)
    assert kube.calls[:4] == [("LIST", "/api/v1/pods"), ("WATCH", "10"), ("WATCH", "20"), ("LIST", "/api/v1/pods")]
    assert kube.calls[4] == ("WATCH", "50"), "after a relist the watch resumes from the new list"
    assert set(cache.pods) == {"ns/a", "ns/c"}, "the relist replaced the cache (b is gone)"
    assert {k for k in cache.pods_by_node["n1"]} == {"ns/c"} and set(cache.pods_by_node["n2"]) == {"ns/a"}
    assert set(cache.pods_by_owner["rs-1"]) == {"ns/a", "ns/c"}


def test_a_moved_or_deleted_pod_leaves_no_stale_index_entries() -> None:
    cache = ClusterCache(FakeKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    cache._apply_pod("ADDED", pod("a", "n1", "1"))
    cache._apply_pod("MODIFIED", pod("a", "n2", "2"))
    assert "n1" not in cache.pods_by_node and set(cache.pods_by_node["n2"]) == {"ns/a"}
    cache._apply_pod("DELETED", pod("a", "n2", "3"))
    assert cache.pods == {} and cache.pods_by_node == {} and cache.pods_by_owner == {}


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
    cache = ClusterCache(FakeKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
    claim = {"metadata": {"name": "data", "namespace": "ns"}, "spec": {"storageClassName": "fast"}}
    cache._reset_claims([claim, {"metadata": {"name": "tmp", "namespace": "ns"}, "spec": {}}])
    cache._apply_claim("DELETED", {"metadata": {"name": "tmp", "namespace": "ns"}})
    cache._apply_claim("ADDED", {"metadata": {"name": "logs", "namespace": "x"}, "spec": {"storageClassName": "s"}})
    assert cache.snapshot(dt.datetime(2026, 1, 1, tzinfo=dt.UTC)).claim_classes == {"ns/data": "fast", "x/logs": "s"}


def test_priority_classes_follow_their_watch() -> None:
    cache = ClusterCache(FakeKube([], []), log=logging.getLogger("t"))  # type: ignore[arg-type]
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
    cache = ClusterCache(FakeKube([], []), log=logging.getLogger("t"), clock=lambda: clock[0])  # type: ignore[arg-type]

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
