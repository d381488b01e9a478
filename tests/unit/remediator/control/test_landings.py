"""Landings: which moves are pinned, and how a move's replacement is judged (control/landings.py)."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.actions.eviction_requests import Outcome, evict
from remediator.alerts.announcer import Alerts
from remediator.control.landings import LandingOutcome, Landings, stuck_pods
from remediator.model.landing import Landing
from remediator.model.plan import PlannedEviction
from remediator.policy.eviction import EvictionSettings
from remediator.state.caches import ClusterCache, slim_pod

LOG = logging.getLogger("test-landings")
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
PLANNED = EvictionSettings(landing="planned", initial_backoff=dt.timedelta(seconds=1))


def node(name: str, hostname: str | None = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": hostname or name}},
            "spec": {}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                                   "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name: str, node_name: str = "", annotations: dict[str, str] | None = None, pinned_to: str = "n2"
        ) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-03-01T11:00:00Z", "annotations": annotations or {},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "web", "uid": "rs-web",
                                              "controller": True}]},
            "spec": {"nodeName": node_name, "containers": [{"name": "c"}],
                     "nodeSelector": {"kubernetes.io/hostname": pinned_to} if annotations else {}},
            "status": {"phase": "Running" if node_name else "Pending"}}


class Api:
    """Records the calls; `refuse` answers the next evictions with a PDB's 429."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.landing_objects: dict[str, Any] = {}
        self.refuse = 0

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        self.calls.append((method, path))
        if path.endswith("/landings") and method == "POST":
            self.landing_objects[body["metadata"]["name"]] = body
        elif "/landings/" in path and method == "DELETE":
            if self.landing_objects.pop(path.rsplit("/", 1)[1], None) is None:
                raise ApiError(404, method, path, '{"reason": "NotFound"}')
        elif path.endswith("/landings"):
            return {"items": [{"metadata": {"name": n}} for n in self.landing_objects]}
        elif path.endswith("/eviction") and self.refuse:
            self.refuse -= 1
            raise ApiError(429, method, path, '{"reason": "TooManyRequests", "details": {"causes": '
                                              '[{"reason": "DisruptionBudget"}]}}')
        return {}


class World:
    def __init__(self, nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.api, self.now = Api(), NOW
        self.cache = ClusterCache(self.api, log=LOG, clock=lambda: self.now)  # type: ignore[arg-type]
        self.cache._reset_nodes(nodes)
        self.cache._reset_pods([slim_pod(p) for p in pods])
        self.counted: list[str] = []
        self.missed: list[str] = []  # landings handed back to the loop detector
        self.steps: list[Callable[[], None]] = []  # what happens at each look the landing takes, in order
        self.landings = Landings(kube=self.api, cache=self.cache,  # type: ignore[arg-type]
                                 alerts=Alerts(self.api, None, identity="r1", log=LOG),  # type: ignore[arg-type]
                                 count=self.counted.append, missed=lambda m: self.missed.append(m.name), log=LOG,
                                 namespace="ops", clock=lambda: self.now,
                                 sleep=self.sleep)

    async def sleep(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)
        if self.steps:
            self.steps.pop(0)()

    def move(self, name: str = "a", to: str = "n2") -> PlannedEviction:
        return PlannedEviction(self.cache.pods[f"shop/{name}"], "BalanceResourceMix", "mix", destination=to)


def events(api: Api) -> list[str]:
    return [p for m, p in api.calls if m == "POST" and p.endswith("/events")]


def test_only_a_move_with_another_destination_a_controller_and_a_hostname_of_its_own_is_landed() -> None:
    w = World([node("n1"), node("n2"), node("n3", hostname="shared"), node("n4", hostname="shared")],
              [pod("a", "n1"), pod("b", "n1")])
    landing = w.landings.plan(w.move(), PLANNED, NOW)
    assert landing is not None and (landing.node, landing.hostname, landing.owner) == ("n2", "n2", "ReplicaSet/web")
    assert (landing.source, landing.decided) == ("n1", NOW)
    assert landing.before == {"uid-a", "uid-b"} and landing.deadline == NOW + dt.timedelta(minutes=2)
    assert w.landings.plan(w.move(), EvictionSettings(), NOW) is None, "landing: anywhere (the default)"
    assert w.landings.plan(w.move(to="n1"), PLANNED, NOW) is None, "its own node: a new node from the autoscaler"
    assert w.landings.plan(w.move(to="n3"), PLANNED, NOW) is None, "a hostname two nodes carry pins to neither"
    assert w.landings.plan(w.move(to="gone"), PLANNED, NOW) is None


def landed_world() -> tuple[World, Landing]:
    w = World([node("n1"), node("n2")], [pod("a", "n1"), pod("b", "n1")])
    landing = w.landings.plan(w.move(), PLANNED, NOW)
    assert landing is not None
    w.landings.hold(landing)
    return w, landing


def test_a_pinned_replacement_bound_to_the_planned_node_has_landed_and_the_landing_object_is_gone() -> None:
    w, landing = landed_world()
    asyncio.run(w.landings.open(landing.owner_uid))
    assert w.api.landing_objects[landing.name]["spec"] == {
        "namespace": "shop", "ownerUID": "rs-web", "owner": landing.owner, "hostname": "n2",
        "annotation": landing.annotation(), "node": "n2", "moved": "shop/a", "strategy": "BalanceResourceMix"}
    pinned = {"nodemedic.io/landing": landing.annotation()}
    w.steps = [lambda: w.cache._apply_pod("DELETED", pod("a", "n1")),
               lambda: w.cache._apply_pod("ADDED", pod("c", "", pinned)),
               lambda: None,
               lambda: w.cache._apply_pod("MODIFIED", pod("c", "n2", pinned))]
    assert asyncio.run(w.landings.follow(landing)) == LandingOutcome.LANDED
    assert w.api.landing_objects == {} and w.counted == ["landed"] and len(events(w.api)) == 1
    assert w.missed == [], "a landed move cannot come back: nothing for the loop detector"
    assert not w.landings.waits(w.move("b")), "the workload's next move may go"


def test_a_replacement_made_without_the_pin_is_unguided() -> None:
    w, landing = landed_world()
    assert w.landings.waits(w.move("b")), "one landing per workload at a time"
    w.steps = [lambda: w.cache._apply_pod("ADDED", pod("c", "n1"))]
    assert asyncio.run(w.landings.follow(landing)) == LandingOutcome.UNGUIDED
    assert w.counted == ["unguided"] and w.missed == [landing.name], "it may come back: the loop detector watches it"


def test_a_pinned_pod_still_pending_at_the_deadline_is_stuck_and_the_reaper_takes_it() -> None:
    w, landing = landed_world()
    pinned = {"nodemedic.io/landing": landing.annotation()}
    w.steps = [lambda: w.cache._apply_pod("ADDED", pod("c", "", pinned))]
    assert asyncio.run(w.landings.follow(landing)) == LandingOutcome.STUCK
    assert w.now >= landing.deadline
    assert [p.key for p in stuck_pods(w.cache, w.now)] == ["shop/c"]
    assert stuck_pods(w.cache, landing.deadline - dt.timedelta(seconds=1)) == []
    result = asyncio.run(w.landings.unpin(w.cache.pods["shop/c"], PLANNED, lambda: True))
    assert result.outcome == Outcome.EVICTED and ("POST", "/api/v1/namespaces/shop/pods/c/eviction") in w.api.calls


@pytest.mark.parametrize("annotation", ["nodemedic-landing-0011aabb", "nodemedic-landing-0011aabb yesterday",
                                        "someone-else 2026-03-01T10:00:00Z",
                                        "nodemedic-landing-01 2026-03-01T10:00:00Z"],
                         ids=["no-deadline", "bad-deadline", "not-ours", "short-name"])
def test_a_pending_pod_with_an_annotation_the_policy_does_not_write_is_not_reaped(annotation: str) -> None:
    w = World([node("n1")], [pod("c", "", {"nodemedic.io/landing": annotation})])
    assert stuck_pods(w.cache, NOW + dt.timedelta(days=1)) == []


def test_the_landing_object_exists_only_around_attempts_a_pdb_refuses_and_the_deadline_counts_from_the_last() -> None:
    w, landing = landed_world()
    w.api.refuse = 1
    before, after = w.landings.attempt_hooks(landing)

    async def no_sleep(_: float) -> None:
        w.now += dt.timedelta(minutes=5)  # a PDB refused the move for five minutes
    result = asyncio.run(evict(w.api, w.move(), PLANNED, may_act=lambda: True, log=LOG,  # type: ignore[arg-type]
                               sleep=no_sleep, before_attempt=before, after_refusal=after))
    assert result.outcome == Outcome.EVICTED
    assert [(m, p.rsplit("/", 1)[1]) for m, p in w.api.calls] == [
        ("POST", "landings"), ("POST", "eviction"), ("DELETE", landing.name), ("POST", "landings"),
        ("POST", "eviction")]
    assert list(w.api.landing_objects) == [landing.name], "open until the replacement is seen"
    opened = NOW + dt.timedelta(minutes=5 + 2)
    assert w.api.landing_objects[landing.name]["spec"]["annotation"] == f"{landing.name} {opened:%Y-%m-%dT%H:%M:%SZ}"
    assert w.landings.busy["rs-web"].deadline == opened


def test_landing_objects_a_previous_leader_left_open_are_closed_once() -> None:
    w, landing = landed_world()
    asyncio.run(w.landings.open(landing.owner_uid))
    asyncio.run(w.landings.clear_left_open())
    asyncio.run(w.landings.clear_left_open())
    assert w.api.landing_objects == {}
    assert [m for m, p in w.api.calls if "/landings" in p] == ["POST", "GET", "DELETE"]


def test_a_statefulset_replacement_that_reuses_the_moved_pods_name_is_found_by_its_uid() -> None:
    w, landing = landed_world()
    again = pod("a", "", {"nodemedic.io/landing": landing.annotation()})
    again["metadata"]["uid"] = "uid-a-2"
    bound = {**again, "spec": {**again["spec"], "nodeName": "n2"}, "status": {"phase": "Running"}}
    w.steps = [lambda: w.cache._apply_pod("MODIFIED", again), lambda: w.cache._apply_pod("MODIFIED", bound)]
    assert asyncio.run(w.landings.follow(landing)) == LandingOutcome.LANDED


def test_a_pod_pinned_to_a_node_gone_or_cordoned_since_is_reaped_before_its_deadline() -> None:
    pinned = {"nodemedic.io/landing": "nodemedic-landing-0011aabb 2026-03-01T12:02:00Z"}
    cordoned = node("n3")
    cordoned["spec"]["unschedulable"] = True
    w = World([node("n1"), node("n2"), cordoned],
              [pod("waits", "", pinned), pod("gone", "", pinned, pinned_to="n9"),
               pod("off", "", pinned, pinned_to="n3")])
    assert [p.key for p in stuck_pods(w.cache, NOW)] == ["shop/gone", "shop/off"]


def test_a_pod_that_tolerates_the_cordon_still_lands_there_and_a_deleting_node_is_gone() -> None:
    """kube-scheduler binds a pod tolerating node.kubernetes.io/unschedulable to a cordoned node: reaping it would
    fail a migration step cordoned mid-move for nothing; a node being deleted takes nothing more."""
    pinned = {"nodemedic.io/landing": "nodemedic-landing-0011aabb 2026-03-01T12:02:00Z"}
    cordoned, deleting = node("n3"), node("n4")
    cordoned["spec"]["unschedulable"] = True
    deleting["metadata"]["deletionTimestamp"] = "2026-03-01T11:59:00Z"
    tolerant, other_key = pod("tolerant", "", pinned, pinned_to="n3"), pod("other", "", pinned, pinned_to="n3")
    tolerant["spec"]["tolerations"] = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                        "effect": "NoSchedule"}]
    other_key["spec"]["tolerations"] = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
    w = World([node("n1"), cordoned, deleting],
              [tolerant, other_key, pod("leaving", "", pinned, pinned_to="n4")])
    assert [p.key for p in stuck_pods(w.cache, NOW)] == ["shop/leaving", "shop/other"]
    # Two nodes answering to one hostname: the pin takes either, so a cordon on one strands nothing.
    w = World([cordoned, node("n5", hostname="n3")], [other_key])
    assert stuck_pods(w.cache, NOW) == []


def test_each_stuck_pod_is_asked_to_go_once() -> None:
    pinned = {"nodemedic.io/landing": "nodemedic-landing-0011aabb 2026-03-01T11:59:00Z"}
    w = World([node("n1"), node("n2")], [pod("c", "", pinned)])

    async def twice() -> None:
        w.landings.unpin_stuck(PLANNED, lambda: True, NOW)
        w.landings.unpin_stuck(PLANNED, lambda: True, NOW)
        await asyncio.gather(*w.landings.tasks)
    asyncio.run(twice())
    assert [p for m, p in w.api.calls if p.endswith("/eviction")] == ["/api/v1/namespaces/shop/pods/c/eviction"]
    assert w.landings.unpinning == {"uid-c"} and not w.landings.tasks
