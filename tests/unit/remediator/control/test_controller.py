"""The controller's cycle against an in-memory API server and a fake clock: what it writes (taints, evictions,
Events) and when it must not (dry run, standby, lost leadership, a failed taint), each eviction sent once, policy
reloads, breaker announcements, and a loop that survives a failing cycle."""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import functools
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from nodemedic_common.kube_errors import ApiError
from remediator.actions.eviction_requests import evict
from remediator.alerts import metrics as metrics_mod
from remediator.alerts import plan_announcements
from remediator.alerts.announcer import Alerts
from remediator.control import controller as controller_mod
from remediator.control.controller import RECENT_EVICTION_MEMORY, Controller
from remediator.control.policy_reload import PolicyReload
from remediator.model.plan import Plan
from remediator.policy import source as policy_source
from remediator.policy.loader import load_policy
from remediator.policy.source import PolicySource
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.autoscaler_detection import KARPENTER_DISCOVERY, LEASES, REDETECT, AutoscalerDetector
from remediator.state.caches import ClusterCache, slim_pod
from remediator.state.snapshot import KARPENTER_NODEPOOL_LABEL
from remediator.strategies import CATALOG

LOG = logging.getLogger("test.controller")
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
HOUR_AGO = "2026-03-01T11:00:00Z"
TAINT = "nodemedic.io/kernel-deadlock"
POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 30s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
  evict: true
  recoverAfter: 10m
strategies:
- name: RemovePodsViolatingNodeTaints
limits: {ownerCooldown: 0s}
safety: {maxTaintedNodes: %d, maxTaintedNodesPercent: 100, minTaintedNodes: 1}
"""


def node(name: str, *, sick: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": HOUR_AGO}]
    if sick:
        conditions.append({"type": "KernelDeadlock", "status": "True", "lastTransitionTime": HOUR_AGO})
    return {"metadata": {"name": name, "resourceVersion": "1", "labels": {"kubernetes.io/hostname": name}},
            "spec": {},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}, "conditions": conditions}}


def pod(name: str, node_name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "resourceVersion": "1",
                         "creationTimestamp": "2026-02-01T00:00:00Z",
                         "ownerReferences": [{"kind": "ReplicaSet", "name": f"rs-{name}", "uid": f"rs-{name}",
                                              "controller": True}]},
            "spec": {"nodeName": node_name,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
            "status": {"phase": "Running", "startTime": "2026-02-01T00:00:05Z"}}


class ApiServer:
    """The writes the controller makes, kept in memory: node patches, evictions and Events; failures on demand. A node
    patch reaches the caches as the node watch would bring it: a moment after the write returns, or when `deliver`
    is called while `hold_watch` is set (a watch lagging behind). A patch sent with a resourceVersion the node no
    longer has is answered 409, as the API server does."""

    def __init__(self) -> None:
        self.watch: Callable[[dict[str, Any]], None] | None = None  # the cache's node watch, fed after each patch
        self.hold_watch = False
        self.held: list[dict[str, Any]] = []  # patched nodes the watch has not delivered yet
        self.nodes: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []
        self.events: list[dict[str, Any]] = []
        self.evicted: list[str] = []
        self.landing_objects: list[dict[str, Any]] = []  # control/landings.py's, as POSTed
        self.migrations: list[dict[str, Any]] = []  # control/migrations.py's, as listed
        self.fail_nodes: set[str] = set()
        self.hold_evictions: asyncio.Event | None = None  # set: evictions wait for it (an eviction in flight)
        self.fail_evictions = False
        self.lose_eviction_answers: set[str] = set()  # pods whose eviction is carried out and its answer lost
        self.lose_patch_answers: set[str] = set()  # nodes whose next patch is carried out and its answer lost
        # node -> its conditions as another writer (an agent) sets them just before our next PATCH, which that write
        # makes a 409
        self.written_first: dict[str, list[dict[str, Any]]] = {}

    async def get(self, path: str, **_: str) -> Any:
        name = path.rsplit("/", 1)[1]
        return copy.deepcopy(self.nodes[name])

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        await asyncio.sleep(0)
        self.writes.append((method, path))
        if path.endswith("/events"):
            self.events.append(body)
            return body
        if path.endswith("/eviction"):
            if self.hold_evictions is not None:
                await self.hold_evictions.wait()
            if self.fail_evictions:
                raise ApiError(403, method, path, '{"message": "pods is forbidden", "reason": "Forbidden"}')
            key = f"{body['metadata']['namespace']}/{body['metadata']['name']}"
            if key in self.lose_eviction_answers and key in self.evicted:  # the retry: carried out already
                raise ApiError(404, method, path, '{"message": "pods not found", "reason": "NotFound"}')
            self.evicted.append(key)
            if key in self.lose_eviction_answers:
                raise ApiError(0, method, path, "ServerDisconnectedError: Server disconnected")
            return {}
        if method == "PATCH" and path.startswith("/api/v1/nodes/"):
            name = path.rsplit("/", 1)[1]
            if name in self.fail_nodes:
                raise ApiError(500, method, path, '{"message": "etcdserver: request timed out"}')
            if name in self.written_first:
                stored = self.nodes[name]
                stored["status"]["conditions"] = self.written_first.pop(name)
                stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
                raise ApiError(409, method, path, '{"reason": "Conflict", "message": "the object has been modified"}')
            stored = self.nodes[name]
            if body["metadata"].get("resourceVersion") not in (None, stored["metadata"]["resourceVersion"]):
                raise ApiError(409, method, path, '{"reason": "Conflict", "message": "the object has been modified"}')
            annotations = stored["metadata"].setdefault("annotations", {})
            annotations.update(body["metadata"]["annotations"])
            for key in [k for k, v in annotations.items() if v is None]:
                del annotations[key]  # a merge patch's null removes the key
            if "spec" in body:
                stored["spec"]["taints"] = body["spec"]["taints"]
            stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1)
            self.held.append(copy.deepcopy(stored))
            if not self.hold_watch:
                asyncio.get_running_loop().call_soon(self.deliver)
            if name in self.lose_patch_answers:
                self.lose_patch_answers.discard(name)
                raise ApiError(0, method, path, "ServerDisconnectedError: Server disconnected")
            return copy.deepcopy(stored)
        if method == "DELETE" and path.startswith("/apis/karpenter.sh/v1/nodeclaims/"):
            return {}
        if path.startswith("/apis/nodemedic.io/v1alpha1/namespaces/ops/landings"):
            self.landing_objects.append(body) if method == "POST" else None
            return {"items": []} if method == "GET" else {}
        if path == "/apis/nodemedic.io/v1alpha1/namespaces/ops/migrations" and method == "GET":
            return {"items": copy.deepcopy(self.migrations)}
        raise AssertionError(f"unexpected {method} {path}")

    def deliver(self) -> None:
        """The node watch brings the patched nodes it held back."""
        while self.held:
            n = self.held.pop(0)
            self.writes.append(("WATCH", f"/api/v1/nodes/{n['metadata']['name']}"))
            if self.watch is not None:
                self.watch(n)

    def reasons(self) -> list[str]:
        return [e["reason"] for e in self.events]


class Lease:
    def __init__(self, leading: bool) -> None:
        self.leading = leading

    def is_leader(self) -> bool:
        return self.leading


class Clock:
    def __init__(self) -> None:
        self.now, self.mono = NOW, 5000.0

    def wall(self) -> dt.datetime:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)
        self.mono += seconds


class World:
    """A controller wired to the fakes, its caches fed as the watches would feed them."""

    def __init__(self, tmp: Path, *, nodes: list[dict[str, Any]], pods: list[dict[str, Any]], leading: bool = True,
                 dry_run: bool = False, max_tainted: int = 10, policy: str | None = None,
                 landing_namespace: str = "") -> None:
        self.api, self.clock, self.lease = ApiServer(), Clock(), Lease(leading)
        self.api.nodes = {n["metadata"]["name"]: copy.deepcopy(n) for n in nodes}
        self.policy_path = tmp / "policy.yaml"
        self.policy_path.write_text(POLICY % max_tainted if policy is None else policy)
        self.registry = CollectorRegistry()
        self.metrics = metrics_mod.create(self.registry)
        self.cache = ClusterCache(self.api, log=LOG, clock=self.clock.wall)  # type: ignore[arg-type]
        self.cache._reset_nodes(nodes)
        self.cache._reset_pods([slim_pod(p) for p in pods])
        self.api.watch = lambda n: self.cache._apply_node("MODIFIED", n)
        alerts = Alerts(self.api, None, identity="r1", log=LOG)  # type: ignore[arg-type]
        self.controller = Controller(
            kube=self.api, cache=self.cache,  # type: ignore[arg-type]
            policy=PolicyReload(PolicySource(str(self.policy_path), load_policy(self.policy_path, catalog=CATALOG),
                                             catalog=CATALOG), alerts=alerts,
                                metrics=self.metrics, log=LOG, lease_namespace="ops", lease_name="nm",
                                announce=not dry_run),
            alerts=alerts, metrics=self.metrics,
            log=LOG, elector=None if dry_run else self.lease, dry_run=dry_run,  # type: ignore[arg-type]
            clock=self.clock.wall, monotonic=self.clock.monotonic, landing_namespace=landing_namespace)

    def cycle(self) -> None:
        async def one() -> None:
            await self.controller.cycle()
            for _ in range(20):  # let the eviction tasks it started finish
                await asyncio.sleep(0)

        asyncio.run(one())

    def watch_nodes(self) -> None:
        """What the node watch delivers after our own patches."""
        for n in self.api.nodes.values():
            self.cache._apply_node("MODIFIED", copy.deepcopy(n))

    def metric(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


PODS = [pod("a", "sick"), pod("b", "sick"), pod("c", "well")]


def test_a_dry_run_writes_nothing_and_reports_each_action_once(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS, dry_run=True)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        w.cycle()
        w.clock.advance(5)
        w.cycle()
    assert w.api.writes == []
    assert w.metric("nodemedic_dry_run_actions_total", action="taint") == 1
    assert [r.message for r in caplog.records].count("dry-run: would taint") == 1


def test_the_leader_taints_then_evicts_each_pod_exactly_once(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.cycle()
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/sick"]
    assert w.api.nodes["sick"]["spec"]["taints"] == [{"key": TAINT, "effect": "NoSchedule", "value": "true"}]
    assert "NodemedicTainted" in w.api.reasons()
    w.watch_nodes()
    for _ in range(5):  # the pods stay in the cache (evicted pods take a while to go): never evicted twice
        w.clock.advance(1)
        w.cycle()
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]
    assert w.metric("nodemedic_evictions_total", strategy="RemovePodsViolatingNodeTaints", outcome="evicted") == 2
    assert w.api.reasons().count("NodemedicEvicted") == 2
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/sick"], "the taint is written once"


def test_an_eviction_whose_answer_was_lost_is_announced_and_counted_once_the_retry_finds_the_pod_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The API server carried the eviction out and the answer was lost: the retry's 404 is our eviction, not someone
    else's removal, so it has its Event and metric like any other (a chain test once missed one such Event)."""
    async def no_sleep(_: float) -> None:
        return None

    monkeypatch.setattr(controller_mod, "evict", functools.partial(evict, sleep=no_sleep))
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.api.lose_eviction_answers = {"shop/a"}
    w.cycle()
    w.watch_nodes()
    w.clock.advance(1)
    w.cycle()
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]
    evicted = {e["involvedObject"]["name"]: e["message"] for e in w.api.events if e["reason"] == "NodemedicEvicted"}
    assert sorted(evicted) == ["a", "b"]
    assert evicted["a"].endswith("(the pod is gone after an attempt whose answer was lost (attempt 1: "
                                 "ServerDisconnectedError: Server disconnected))")
    assert "answer was lost" not in evicted["b"]
    assert w.metric("nodemedic_evictions_total", strategy="RemovePodsViolatingNodeTaints", outcome="evicted") == 2


def test_an_eviction_still_in_flight_is_not_sent_again(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)

    async def slow_evictions() -> None:
        w.api.hold_evictions = asyncio.Event()
        for _ in range(3):
            await w.controller.cycle()
            await asyncio.sleep(0)
            w.watch_nodes()
            w.clock.advance(1)
        assert len(w.controller.in_flight) == 2
        assert sum(1 for _, p in w.api.writes if p.endswith("/eviction")) == 2
        assert w.metric("nodemedic_evictions_in_flight") == 2
        assert w.metric("nodemedic_evictions_total", strategy="RemovePodsViolatingNodeTaints", outcome="evicted") == 0
        w.api.hold_evictions.set()
        await asyncio.gather(*w.controller.in_flight.values())

    asyncio.run(slow_evictions())
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]
    # A reader that sees none in flight sees every outcome counted (the e2e tests wait on it before counting).
    assert w.metric("nodemedic_evictions_in_flight") == 0
    assert w.metric("nodemedic_evictions_total", strategy="RemovePodsViolatingNodeTaints", outcome="evicted") == 2


def test_an_evicted_pod_still_in_the_cache_is_planned_again_only_after_the_memory_expires(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.cycle()
    w.watch_nodes()
    w.cycle()
    assert len(w.api.evicted) == 2
    w.clock.advance(RECENT_EVICTION_MEMORY - 10)
    w.cycle()
    assert len(w.api.evicted) == 2
    w.clock.advance(20)  # a pod that refuses to go for ten minutes: the Eviction API is asked again
    w.cycle()
    assert sorted(w.api.evicted) == ["shop/a", "shop/a", "shop/b", "shop/b"]


def test_a_standby_writes_nothing_until_it_leads(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS, leading=False)
    for _ in range(3):
        w.cycle()
        w.clock.advance(2)
    assert w.api.writes == []
    w.lease.leading = True
    w.cycle()
    assert ("PATCH", "/api/v1/nodes/sick") in w.api.writes


def test_losing_the_lease_mid_cycle_stops_the_remaining_taint_writes(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node(f"sick-{i}", sick=True) for i in range(4)] + [node("well")], pods=[])
    original = w.api.request

    async def lose_after_first_patch(method: str, path: str, **kw: Any) -> Any:
        answer = await original(method, path, **kw)
        if method == "PATCH":
            w.lease.leading = False
        return answer

    w.api.request = lose_after_first_patch  # type: ignore[method-assign]
    w.cycle()
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/sick-0"]


def test_a_failed_taint_write_skips_that_nodes_evictions_and_not_the_others(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    nodes = [node("sick-1", sick=True), node("sick-2", sick=True), node("well")]
    pods = [pod("a", "sick-1"), pod("b", "sick-2"), pod("c", "well")]
    w = World(tmp_path, nodes=nodes, pods=pods)
    w.api.fail_nodes = {"sick-1"}
    with caplog.at_level(logging.ERROR, logger=LOG.name):
        for _ in range(3):
            w.cycle()
            w.watch_nodes()
            w.clock.advance(1)
    assert "taint write failed" in [r.message for r in caplog.records]
    assert w.api.evicted == ["shop/b"], "no eviction from a node whose taint did not land"
    assert w.api.nodes["sick-1"]["spec"] == {}


def tainted(name: str) -> dict[str, Any]:
    """A sick node that already wears nodemedic's taint (an earlier cycle wrote it)."""
    n = node(name, sick=True)
    n["spec"]["taints"] = [{"key": TAINT, "effect": "NoSchedule", "value": "true"}]
    n["metadata"]["annotations"] = {"nodemedic.io/owned-taints": json.dumps(
        [{"key": TAINT, "value": "true", "effect": "NoSchedule", "rules": ["kernel-deadlock"], "cause": "t",
          "since": HOUR_AGO}])}
    return n


def requests_in_order(w: World) -> list[tuple[str, str]]:
    return [(m, p) for m, p in w.api.writes if m in ("PATCH", "WATCH") or p.endswith("/eviction")]


def test_a_condition_that_flips_between_the_plan_and_the_taint_write_gets_no_taint_and_no_eviction(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    """The chaos test's flapping node: planned on a True spell held past `for`, the node's agent wrote False before
    our PATCH went out. The write's 409 and re-read show it: no taint, no Event, no eviction; the next plan decides."""
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.api.written_first["sick"] = [{"type": "Ready", "status": "True", "lastTransitionTime": HOUR_AGO},
                                   {"type": "KernelDeadlock", "status": "False",
                                    "lastTransitionTime": "2026-03-01T12:00:00Z"}]
    with caplog.at_level(logging.INFO, logger=LOG.name):
        w.cycle()
    assert w.api.nodes["sick"]["spec"].get("taints") is None
    assert w.api.evicted == [] and "NodemedicTainted" not in w.api.reasons()
    deferred = [r for r in caplog.records if r.getMessage().startswith("taint change deferred")]
    assert [(r.node, r.taint, r.change) for r in deferred] == [("sick", TAINT, "add")]  # type: ignore[attr-defined]


def test_evictions_from_a_node_just_tainted_wait_until_the_node_watch_shows_the_taint(tmp_path: Path) -> None:
    # Issue 42 (tests/e2e/test_autoscaler_chain.py failed once): the pods were evicted 60 ms after the taint PATCH; a
    # kube-scheduler whose watch had not brought the taint yet bound a replacement back on the sick node, and it was
    # evicted in turn. Until our own watch shows the taint, the scheduler may not have it either.
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.api.hold_watch = True  # the watch lags: the patched node is not in the caches yet

    async def lagging_watch() -> None:
        cycle = asyncio.create_task(w.controller.cycle())
        for _ in range(500):  # far more turns than a cycle needs to taint, announce and send its evictions
            if any(p.endswith("/eviction") for _, p in w.api.writes):
                break
            await asyncio.sleep(0)
        assert ("PATCH", "/api/v1/nodes/sick") in w.api.writes
        assert not any(p.endswith("/eviction") for _, p in w.api.writes), "evicted before the watch showed the taint"
        assert not cycle.done()
        w.api.deliver()
        await cycle
        await asyncio.gather(*w.controller.in_flight.values())

    asyncio.run(lagging_watch())
    assert requests_in_order(w) == [("PATCH", "/api/v1/nodes/sick"), ("WATCH", "/api/v1/nodes/sick"),
                                    ("POST", "/api/v1/namespaces/shop/pods/a/eviction"),
                                    ("POST", "/api/v1/namespaces/shop/pods/b/eviction")]
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]


def test_a_run_once_waits_for_the_watch_to_show_the_taint_as_well(tmp_path: Path) -> None:
    """A Job's or CronJob's single cycle: its caches are watched while it runs (cli._once), so it waits the same way."""
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    for informer in w.cache.informers:
        informer.synced.set()
    w.api.hold_watch = True

    async def once() -> tuple[int, str]:
        run = asyncio.create_task(w.controller.run_once(1.0))
        for _ in range(500):
            if any(p.endswith("/eviction") for _, p in w.api.writes):
                break
            await asyncio.sleep(0)
        assert not any(p.endswith("/eviction") for _, p in w.api.writes), "evicted before the watch showed the taint"
        w.api.deliver()
        return await run

    code, summary = asyncio.run(once())
    assert (code, summary) == (0, "1 tainted, 0 untainted, 2 evicted; 0 deferred")
    assert requests_in_order(w)[:2] == [("PATCH", "/api/v1/nodes/sick"), ("WATCH", "/api/v1/nodes/sick")]


def test_a_new_taint_the_watch_never_shows_in_time_skips_only_that_nodes_evictions_until_a_later_cycle(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pods = [pod("a", "old"), pod("b", "new"), pod("c", "well")]
    w = World(tmp_path, nodes=[tainted("old"), node("new", sick=True), node("well")], pods=pods)
    w.controller.taint_seen_within = 0.05
    w.api.hold_watch = True
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        w.cycle()
    assert ("PATCH", "/api/v1/nodes/new") in w.api.writes
    assert "shop/b" not in w.api.evicted, "evicted from a node whose new taint the watch never showed"
    assert w.api.evicted == ["shop/a"], "the node whose taint was there already is not held up"
    (warned,) = [r for r in caplog.records if r.message.startswith("new taint not seen")]
    assert warned.node == "new"  # type: ignore[attr-defined]
    w.api.deliver()  # the watch catches up: the next cycle evicts from the new node
    w.clock.advance(1)
    w.cycle()
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/new"], "the taint is written once"


def test_a_cycle_ahead_of_the_node_watch_keeps_the_taint_ours_announced_once_and_removed_on_recovery(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The next cycle plans from a cache that does not show our last taint write yet (the watch behind, or the write's
    answer lost): it adds the taint again, the cached resourceVersion earns a 409, and the re-read shows the taint
    with our annotation. It is ours and in place. The writer used to keep the cache's ownership record through the
    re-read, took the taint for a person's, wrote the annotation without it and announced it again: no recovery would
    ever have removed that taint (the chaos test once counted one NodemedicTainted more than its untaints allowed)."""
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.controller.taint_seen_within = 0.05
    w.api.hold_watch = True
    w.cycle()
    w.clock.advance(1)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        w.cycle()  # the cache still shows the node untainted
    annotation = w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/owned-taints"]
    assert [o["key"] for o in json.loads(annotation)] == [TAINT], "the taint is no longer recorded as ours"
    assert w.api.reasons().count("NodemedicTainted") == 1
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/sick"] * 2  # the second one: 409
    assert [r.message for r in caplog.records if r.message.startswith("taint change already in place")] == [
        "taint change already in place: an earlier write landed before the node watch showed it"]
    w.api.deliver()
    w.clock.advance(1)
    w.cycle()
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"], "tainted as planned: its pods are evicted"
    recovered = w.api.nodes["sick"]
    recovered["status"]["conditions"][-1] = {"type": "KernelDeadlock", "status": "False",
                                              "lastTransitionTime": "2026-03-01T12:00:02Z"}
    recovered["metadata"]["resourceVersion"] = str(int(recovered["metadata"]["resourceVersion"]) + 1)
    w.cache._apply_node("MODIFIED", copy.deepcopy(recovered))
    w.clock.advance(11 * 60)  # past recoverAfter
    w.cycle()
    assert w.api.reasons().count("NodemedicUntainted") == 1
    assert w.api.nodes["sick"]["spec"]["taints"] == []


def test_a_taint_write_whose_answer_was_lost_but_that_landed_is_announced_and_its_node_drained(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """As for an eviction whose answer was lost (actions/eviction_requests.py): the node, read again, shows the write
    carried out, so it is a remediation like any other, with its Event, and the node's evictions go ahead."""
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS)
    w.api.lose_patch_answers.add("sick")
    with caplog.at_level(logging.INFO, logger=LOG.name):
        w.cycle()
    assert w.api.reasons().count("NodemedicTainted") == 1
    assert not [r for r in caplog.records if r.message == "taint write failed"]
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]
    assert w.metric("nodemedic_taint_changes_total", action="add", key=TAINT) == 1


def test_evictions_from_a_node_already_tainted_do_not_wait_for_the_watch(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[tainted("sick"), node("well")], pods=PODS)
    w.controller.taint_seen_within = 0.0  # any wait for a taint would skip the evictions
    w.api.hold_watch = True
    w.cycle()
    assert not [m for m, _ in w.api.writes if m == "PATCH"]
    assert sorted(w.api.evicted) == ["shop/a", "shop/b"]


def test_the_breaker_holds_the_extra_nodes_and_announces_each_once(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node(f"sick-{i}", sick=True) for i in range(3)] + [node("well")], pods=[],
              max_tainted=1)
    for _ in range(3):
        w.cycle()
        w.watch_nodes()
        w.clock.advance(2)
    assert sum(1 for m, _ in w.api.writes if m == "PATCH") == 1
    assert w.api.reasons().count("NodemedicCircuitBreakerOpen") == 2, "one Event per held node, not per cycle"
    assert w.metric("nodemedic_circuit_breaker_open") == 1
    assert w.metric("nodemedic_circuit_breaker_trips_total") == 1


def test_a_recovered_node_is_untainted_before_the_next_one_is_tainted_so_the_breaker_never_exceeds_its_limit(
        tmp_path: Path) -> None:
    # Found by tests/e2e/test_remediator.py under load: with the writes in node-name order, "a" was tainted before
    # "z" was untainted, and for the time the writes and alerts in between took, 2 nodes wore the taint of a limit 1.
    w = World(tmp_path, nodes=[node("a"), node("z", sick=True)], pods=[], max_tainted=1)
    w.cycle()
    w.watch_nodes()
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/z"]
    w.api.nodes["a"]["status"]["conditions"].append(
        {"type": "KernelDeadlock", "status": "True", "lastTransitionTime": HOUR_AGO})
    w.api.nodes["z"]["status"]["conditions"][1].update(status="False", lastTransitionTime=HOUR_AGO)
    w.watch_nodes()
    w.clock.advance(5)
    w.cycle()  # z's place is given out once z shows the untaint: an untaint can be deferred or fail
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/z", "/api/v1/nodes/z"]
    assert "NodemedicCircuitBreakerOpen" not in w.api.reasons() and "NodemedicHeld" not in w.api.reasons()
    w.watch_nodes()
    w.cycle()
    assert [p for m, p in w.api.writes if m == "PATCH"] == ["/api/v1/nodes/z", "/api/v1/nodes/z",
                                                            "/api/v1/nodes/a"]
    assert w.api.nodes["z"]["spec"]["taints"] == [] and len(w.api.nodes["a"]["spec"]["taints"]) == 1


def test_a_held_node_whose_condition_flaps_is_announced_once_until_it_has_been_quiet_for_the_memory(
        tmp_path: Path) -> None:
    # Found by tests/e2e/test_chaos_flapping.py: every flap of a held node raised a new Event and notification.
    w = World(tmp_path, nodes=[node("sick-0", sick=True), node("sick-1", sick=True), node("well")], pods=[],
              max_tainted=1)

    def flap(status: str) -> None:
        w.api.nodes["sick-1"]["status"]["conditions"][1].update(
            status=status, lastTransitionTime=w.clock.now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        w.watch_nodes()

    w.cycle()
    w.watch_nodes()
    for _ in range(5):  # sick-1 is held; its condition goes away and comes back, 40 s each way
        flap("False")
        w.clock.advance(40)
        w.cycle()
        flap("True")
        w.clock.advance(40)
        w.cycle()
    assert w.api.reasons().count("NodemedicCircuitBreakerOpen") == 1
    flap("False")
    w.clock.advance(plan_announcements.HELD_MEMORY + 1)  # quiet long enough: the next hold is news again
    w.cycle()
    flap("True")
    w.clock.advance(40)
    w.cycle()
    assert w.api.reasons().count("NodemedicCircuitBreakerOpen") == 2


def test_a_bad_policy_edit_keeps_the_last_good_policy_and_says_so_on_the_lease(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=[])
    w.policy_path.write_text("apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nrules: 3\n")

    async def cycle_and_settle() -> None:
        await w.controller.cycle()
        await asyncio.gather(*w.controller.background)

    asyncio.run(cycle_and_settle())
    assert w.metric("nodemedic_policy_reloads_total", result="error") == 1
    assert ("PATCH", "/api/v1/nodes/sick") in w.api.writes, "the last good policy still acts"
    (rejected,) = [e for e in w.api.events if e["reason"] == "NodemedicPolicyRejected"]
    assert rejected["involvedObject"]["kind"] == "Lease" and rejected["involvedObject"]["name"] == "nm"
    assert "rules" in rejected["message"]
    w.policy_path.write_text(POLICY.replace("evict: true", "evict: false") % 10)
    asyncio.run(cycle_and_settle())
    assert w.metric("nodemedic_policy_reloads_total", result="ok") == 1
    assert w.controller.policy.current.rules[0].evict is False


def test_a_dry_run_says_nothing_on_the_lease_about_a_bad_policy(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("well")], pods=[], dry_run=True)
    w.policy_path.write_text("rules: [")
    w.cycle()
    assert w.api.writes == [] and w.metric("nodemedic_policy_reloads_total", result="error") == 1


def test_the_loop_survives_a_failing_cycle_and_runs_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    w = World(tmp_path, nodes=[node("well")], pods=[])
    for informer in w.cache.informers:
        informer.synced.set()
    real = controller_mod.make_plan
    calls: list[int] = []

    def flaky(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise KeyError("odd data")
        return real(*args)

    monkeypatch.setattr(controller_mod, "make_plan", flaky)
    monkeypatch.setattr(controller_mod.asyncio, "sleep", _no_wait)
    finished: list[Plan] = []
    cycle = w.controller.cycle

    async def counted_cycle() -> Plan:
        finished.append(plan := await cycle())
        return plan

    monkeypatch.setattr(w.controller, "cycle", counted_cycle)

    async def run_until_a_cycle_finishes() -> None:
        task = asyncio.create_task(w.controller.run())
        while not finished and len(calls) < 3:
            w.cache.changed.set()
            await _yield()
        task.cancel()

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        asyncio.run(run_until_a_cycle_finishes())
    assert "planning cycle failed" in [r.message for r in caplog.records]
    assert len(calls) == 2 and len(finished) == 1, "the cycle after the failure ran to the end"


async def _no_wait(_: float) -> None:
    await _yield()


_real_sleep = asyncio.sleep


async def _yield() -> None:
    await _real_sleep(0)


def test_a_node_stamped_in_year_9999_costs_only_itself_and_is_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 25: a condition with lastTransitionTime "9999-12-31T23:59:59Z" (the API server stores any RFC 3339 time)
    # made every cycle raise OverflowError; the loop retried forever and no node anywhere was remediated.
    future = node("future", sick=True)
    future["status"]["conditions"][1]["lastTransitionTime"] = "9999-12-31T23:59:59Z"
    nodes = [future, node("sick-1", sick=True), node("sick-2", sick=True), node("well")]
    pods = [pod("a", "future"), pod("b", "sick-1"), pod("c", "sick-2")]
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        w = World(tmp_path, nodes=nodes, pods=pods)
        for _ in range(3):
            w.cycle()
            w.watch_nodes()  # the node's heartbeats bring the same bad stamp again: logged once
            w.clock.advance(1)
    assert sorted(p for m, p in w.api.writes if m == "PATCH") == ["/api/v1/nodes/sick-1", "/api/v1/nodes/sick-2"]
    assert sorted(w.api.evicted) == ["shop/b", "shop/c"]
    (logged,) = [r for r in caplog.records if r.message == "unusable times treated as unknown"]
    assert logged.object == "node/future"  # type: ignore[attr-defined]
    assert logged.problems == [  # type: ignore[attr-defined]
        "status.conditions[1].lastTransitionTime: '9999-12-31T23:59:59Z' is outside 1970-01-01..2262-04-11"]


LNU_POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: LowNodeUtilization
  args: {thresholds: {cpu: 20}, targetThresholds: {cpu: 50}}
limits: {ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}
"""


def busy_pod(name: str, node_name: str, cpu: str = "900m") -> dict[str, Any]:
    p = pod(name, node_name)
    p["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return p


def test_evictions_the_caches_have_not_seen_yet_count_as_moved_so_a_second_round_evicts_nothing_more(
        tmp_path: Path) -> None:
    # Issue 25 (tests/e2e/test_utilization.py failed once under load): the plan named 4 moves off the hot node and the
    # remediator evicted 7 within 0.4 s. The first round's evictions finished before any watch event showed them, so
    # the next cycle's snapshot still had the hot node at 90 % and planned other pods off it from a stale view.
    hot = [busy_pod(f"h{i}", "hot") for i in range(8)]  # 8 x 900m on an 8-cpu node: 90 %; target 50 %: four go
    w = World(tmp_path, nodes=[node("hot"), node("cold-1"), node("cold-2")], pods=hot, policy=LNU_POLICY)
    w.cycle()
    first = sorted(w.api.evicted)
    assert len(first) == 4, first
    for _ in range(3):  # the caches still show every pod where it was: no cycle may evict more
        w.clock.advance(0.2)
        w.cycle()
    assert sorted(w.api.evicted) == first
    # The watch now shows the evicted pods terminating (still holding their requests on the node, as the scheduler
    # counts them), then gone and replaced on the cold nodes: still nothing more to move.
    for key in first:
        terminating = copy.deepcopy(next(p for p in hot if f"shop/{p['metadata']['name']}" == key))
        terminating["metadata"]["deletionTimestamp"] = "2026-03-01T12:00:01Z"
        w.cache._apply_pod("MODIFIED", terminating)
    w.clock.advance(1)
    w.cycle()
    assert sorted(w.api.evicted) == first
    for i, key in enumerate(first):
        gone = next(p for p in hot if f"shop/{p['metadata']['name']}" == key)
        w.cache._apply_pod("DELETED", copy.deepcopy(gone))
        w.cache._apply_pod("ADDED", busy_pod(f"r{i}", f"cold-{1 + i % 2}"))
    w.clock.advance(1)
    w.cycle()
    assert sorted(w.api.evicted) == first
    assert w.controller.memory.leaving == {}, "evictions the caches have seen through are forgotten"


def test_an_eviction_that_failed_stops_counting_as_moved_and_is_planned_again(tmp_path: Path) -> None:
    hot = [busy_pod(f"h{i}", "hot") for i in range(8)]
    w = World(tmp_path, nodes=[node("hot"), node("cold-1"), node("cold-2")], pods=hot, policy=LNU_POLICY)
    w.api.fail_evictions = True
    w.cycle()
    assert w.metric("nodemedic_evictions_total", strategy="LowNodeUtilization", outcome="failed") == 4
    assert w.controller.memory.leaving == {}, "not made: the pods count where they are"
    w.api.fail_evictions = False
    w.clock.advance(1)
    w.cycle()
    assert len(w.api.evicted) == 4


@pytest.mark.parametrize("text", [
    "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nrules: " + "[" * 2000 + "]" * 2000 + "\n",
    "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n# caf\xe9\n",
], ids=["nested 2000 deep", "not UTF-8"])
def test_a_hostile_policy_edit_is_counted_and_announced_and_the_last_good_policy_kept(tmp_path: Path,
                                                                                      text: str) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=[])
    w.policy_path.write_bytes(text.encode("latin-1"))

    async def cycle_and_settle() -> None:
        await w.controller.cycle()
        await asyncio.gather(*w.controller.background)

    asyncio.run(cycle_and_settle())
    assert w.metric("nodemedic_policy_reloads_total", result="error") == 1
    assert ("PATCH", "/api/v1/nodes/sick") in w.api.writes, "the last good policy still acts"
    (rejected,) = [e for e in w.api.events if e["reason"] == "NodemedicPolicyRejected"]
    assert "<document>" in rejected["message"]


def test_a_loader_failure_that_is_not_a_policy_error_is_still_counted_and_announced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=[])

    def crash(path: object, **_: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(policy_source, "load_policy", crash)
    w.policy_path.write_text("apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n# changed\n")

    async def cycle_and_settle() -> None:
        await w.controller.cycle()
        await asyncio.gather(*w.controller.background)

    asyncio.run(cycle_and_settle())
    assert w.metric("nodemedic_policy_reloads_total", result="error") == 1
    assert ("PATCH", "/api/v1/nodes/sick") in w.api.writes, "the last good policy still acts"
    (rejected,) = [e for e in w.api.events if e["reason"] == "NodemedicPolicyRejected"]
    assert "RecursionError" in rejected["message"]


class Discovery:
    """The API as the autoscaler detection sees it: Karpenter's NodePools served, or not (404 for anything else)."""

    def __init__(self, karpenter: bool, clock: Clock) -> None:
        self.karpenter, self.clock = karpenter, clock
        self.asked: list[str] = []

    async def request(self, method: str, path: str, **_: Any) -> Any:
        self.asked.append(path)
        if self.karpenter and path == KARPENTER_DISCOVERY:
            return {"kind": "APIResourceList", "resources": [{"name": "nodepools"}]}
        if self.karpenter and path == LEASES:  # its leader renews the Lease every few seconds: just now
            renewed = self.clock.wall().astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            return {"kind": "LeaseList", "items": [{"metadata": {"name": "karpenter-leader-election",
                                                                 "namespace": "karpenter"},
                                                    "spec": {"holderIdentity": "k-1", "renewTime": renewed}}]}
        raise ApiError(404, method, path, '{"kind": "Status", "code": 404, "reason": "NotFound", "message": "gone"}')


def test_the_controller_counts_on_the_karpenter_it_detects_says_so_once_and_exports_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The shipped default, addsNodes: auto: the sick node's pod fits no other node, and goes to a new node only once
    Karpenter is found (at the first cycle, then again every REDETECT seconds)."""
    sick = node("sick", sick=True)
    sick["metadata"]["labels"][KARPENTER_NODEPOOL_LABEL] = "default"
    full = node("full")
    full["status"]["allocatable"]["cpu"] = "50m"
    w = World(tmp_path, nodes=[sick, full], pods=[pod("a", "sick")])
    api = Discovery(karpenter=False, clock=w.clock)
    w.controller.autoscalers = AutoscalerDetector(api, gauge=w.metrics.autoscaler_detected,  # type: ignore[arg-type]
                                                  log=LOG, monotonic=w.clock.monotonic, clock=w.clock.wall)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        w.cycle()
        assert w.api.evicted == [] and w.metric("nodemedic_autoscaler_detected", autoscaler="karpenter") == 0
        api.karpenter = True  # installed now: found at the next look, not before
        w.watch_nodes()
        w.clock.advance(REDETECT - 1)
        w.cycle()
        assert w.api.evicted == [] and len(api.asked) == 2  # discovery 404: no Lease asked for
        w.clock.advance(1)
        w.cycle()
        w.clock.advance(1)
        w.cycle()
    assert w.api.evicted == ["shop/a"]
    assert w.metric("nodemedic_autoscaler_detected", autoscaler="karpenter") == 1
    assert w.metric("nodemedic_autoscaler_detected", autoscaler="cluster-autoscaler") == 0
    assert [(r.message, getattr(r, "autoscaler", "")) for r in caplog.records if "autoscaler" in r.message] == [
        ("node autoscaler not detected", "karpenter"), ("node autoscaler not detected", "cluster-autoscaler"),
        ("node autoscaler detected", "karpenter")]


def test_why_says_what_the_last_plan_decided_for_a_node(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=[])
    assert w.controller.why("sick").to_json()["facts"] == [{"topic": "plan", "sentence": "no planning cycle yet"}]
    w.cycle()
    facts = w.controller.why("sick").to_json()["facts"]
    assert isinstance(facts, list)
    plan = [f["sentence"] for f in facts if f["topic"] == "plan"]
    assert len(plan) == 1 and plan[0].startswith("this cycle adds "), plan
    assert not [f for f in w.controller.why("well").to_json()["facts"] if f["topic"] == "plan"]


LADDER_POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 30s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
  evict: true
  recoverAfter: 10m
  repair:
  - {action: restart, service: kubelet, wait: 3m}
  - {action: reboot, wait: 15m}
  - {action: replace, wait: 30m}
  - {action: person}
strategies:
- name: RemovePodsViolatingNodeTaints
limits: {ownerCooldown: 0s}
safety: {maxTaintedNodes: 3, maxTaintedNodesPercent: 100, minTaintedNodes: 1}
repair: {maxUnhealthyPercent: 100}
"""


def answer(w: World, node_name: str, reason: str, text: str) -> None:
    """The agent's answer to the step under way, as its status write would put it on the Node."""
    state = json.loads(w.api.nodes[node_name]["metadata"]["annotations"]["nodemedic.io/repair"])
    w.api.nodes[node_name]["status"]["conditions"].append(
        {"type": "NodemedicRepair", "status": "False", "reason": reason, "message": f"request {state['id']}: {text}",
         "lastTransitionTime": "2026-03-01T12:00:00Z"})


def test_a_ladder_goes_from_restart_to_reboot_after_the_drain_and_ends_with_a_person(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[node("sick", sick=True), node("well")], pods=PODS, policy=LADDER_POLICY)
    w.cycle()
    w.watch_nodes()
    w.clock.advance(1)
    w.cycle()
    state = json.loads(w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/repair"])
    assert (state["action"], state["service"], state["step"]) == ("restart", "kubelet", 0)
    assert w.api.reasons().count("NodemedicRepairStep") == 1
    assert w.metric("nodemedic_repair_steps_started_total", action="restart") == 1
    assert w.metric("nodemedic_repair_nodes") == 1
    w.watch_nodes()
    answer(w, "sick", "Failed", "systemctl exited 5")
    w.watch_nodes()
    w.clock.advance(1)
    w.cycle()  # the restart failed; the reboot waits for the drain (the pods were evicted but are still cached)
    assert json.loads(w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/repair"])["action"] == "restart"
    assert any(w.why.startswith("draining first") for w in w.controller.plan.repair.waiting)
    w.cache._reset_pods([slim_pod(p) for p in PODS if p["spec"]["nodeName"] != "sick"])
    w.clock.advance(1)
    w.cycle()
    state = json.loads(w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/repair"])
    assert (state["action"], state["step"]) == ("reboot", 1)
    assert state["history"][0]["result"] == "the agent answered Failed: systemctl exited 5"
    assert w.metric("nodemedic_repair_steps_finished_total", action="restart", result="failed") == 1
    w.watch_nodes()
    w.clock.advance(16 * 60)  # the reboot's wait passes; no NodeClaim: replace is skipped, a person is told
    w.cycle()
    state = json.loads(w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/repair"])
    assert (state["action"], state["step"]) == ("person", 3)
    assert state["history"][-1]["result"].startswith("skipped: no Karpenter NodeClaim")
    assert "NodemedicNeedsAPerson" in w.api.reasons()
    w.watch_nodes()
    w.cycle()
    assert w.metric("nodemedic_repair_needs_a_person", node="sick", rule="kernel-deadlock") == 1
    assert w.metric("nodemedic_repair_nodes") == 0
    # The condition clears: the ladder ends and its annotation goes.
    w.api.nodes["sick"]["status"]["conditions"][1]["status"] = "False"
    w.watch_nodes()
    w.clock.advance(1)
    w.cycle()
    assert "nodemedic.io/repair" not in w.api.nodes["sick"]["metadata"]["annotations"]
    assert "NodemedicRepaired" in w.api.reasons()
    assert w.metric("nodemedic_repair_steps_finished_total", action="person", result="repaired") == 1


def test_a_dry_run_reports_a_repair_step_and_writes_nothing(tmp_path: Path) -> None:
    sick = node("sick", sick=True)
    sick["spec"]["taints"] = [{"key": TAINT, "effect": "NoSchedule", "value": "true"}]
    sick["metadata"]["annotations"] = {"nodemedic.io/owned-taints": json.dumps(
        [{"key": TAINT, "value": "true", "effect": "NoSchedule", "rules": ["kernel-deadlock"], "cause": "t",
          "since": HOUR_AGO}])}
    w = World(tmp_path, nodes=[sick, node("well")], pods=PODS, policy=LADDER_POLICY, dry_run=True)
    w.cycle()
    assert w.api.writes == []
    assert w.metric("nodemedic_dry_run_actions_total", action="repair") == 1, PlanAnswer.of(w.controller.plan).to_json()


def test_a_replace_step_deletes_the_nodes_nodeclaim(tmp_path: Path) -> None:
    policy = LADDER_POLICY.replace("  - {action: restart, service: kubelet, wait: 3m}\n", "").replace(
        "  - {action: reboot, wait: 15m}\n", "")
    sick = node("sick", sick=True)
    sick["metadata"]["ownerReferences"] = [{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                                            "name": "default-abcde", "uid": "c1"}]
    w = World(tmp_path, nodes=[sick, node("well")], pods=[], policy=policy)
    w.cycle()
    w.watch_nodes()
    w.clock.advance(1)
    w.cycle()
    assert ("DELETE", "/apis/karpenter.sh/v1/nodeclaims/default-abcde") in w.api.writes
    state = json.loads(w.api.nodes["sick"]["metadata"]["annotations"]["nodemedic.io/repair"])
    assert state["action"] == "replace"
    del w.api.nodes["sick"]
    w.cache._reset_nodes(list(w.api.nodes.values()))
    w.cycle()
    assert w.metric("nodemedic_repair_steps_finished_total", action="replace", result="repaired") == 1


def dark_node(name: str, *, confirmed: bool = True) -> dict[str, Any]:
    """Ready=Unknown and the agent silent for an hour; a person's confirmation half an hour ago."""
    n = node(name)
    n["status"]["conditions"] = [
        {"type": "Ready", "status": "Unknown", "lastTransitionTime": HOUR_AGO, "lastHeartbeatTime": HOUR_AGO},
        {"type": "KernelDeadlock", "status": "False", "lastTransitionTime": HOUR_AGO, "lastHeartbeatTime": HOUR_AGO}]
    if confirmed:
        n["metadata"]["annotations"] = {"nodemedic.io/fence-confirmed": "2026-03-01T11:30:00Z by alice"}
    return n


OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute",
                  "timeAdded": "2026-03-01T12:00:00Z"}


def test_a_dark_node_a_person_confirmed_is_fenced_once_and_unfenced_when_it_is_back(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[dark_node("dark"), node("well"), node("well2")], pods=[])
    w.cycle()
    stored = w.api.nodes["dark"]
    assert stored["spec"]["taints"] == [OUT_OF_SERVICE]
    assert json.loads(stored["metadata"]["annotations"]["nodemedic.io/fence"])["evidence"] == "person"
    assert "NodemedicFenced" in w.api.reasons() and w.metric("nodemedic_fences_total", evidence="person") == 1
    w.watch_nodes()
    w.clock.advance(5)
    w.cycle()
    assert w.api.writes.count(("PATCH", "/api/v1/nodes/dark")) == 1  # fenced once
    # Back: Ready, then its agent reports; only then the taint and both annotations go.
    stored["status"]["conditions"] = [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2026-03-01T12:00:03Z",
         "lastHeartbeatTime": "2026-03-01T12:00:03Z"},
        {"type": "KernelDeadlock", "status": "False", "lastTransitionTime": HOUR_AGO,
         "lastHeartbeatTime": "2026-03-01T12:00:01Z"}]
    w.watch_nodes()
    w.clock.advance(5)
    w.cycle()
    assert stored["spec"]["taints"] == [OUT_OF_SERVICE] and w.metric("nodemedic_silent_nodes", seen="returning") == 1
    stored["status"]["conditions"][1]["lastHeartbeatTime"] = "2026-03-01T12:00:10Z"
    w.watch_nodes()
    w.clock.advance(5)
    w.cycle()
    assert stored["spec"]["taints"] == []
    assert not {"nodemedic.io/fence", "nodemedic.io/fence-confirmed"} & set(stored["metadata"]["annotations"])
    assert "NodemedicUnfenced" in w.api.reasons() and w.metric("nodemedic_unfences_total") == 1


def test_a_dark_node_that_comes_back_between_the_plan_and_the_write_is_not_fenced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = World(tmp_path, nodes=[dark_node("dark"), node("well"), node("well2")], pods=[])
    planned = controller_mod.make_plan

    def plan_then_the_kubelet_posts(*args: Any) -> Plan:
        plan = planned(*args)
        back = dark_node("dark")
        back["metadata"]["resourceVersion"] = "2"
        back["status"]["conditions"][0].update(status="True", lastTransitionTime="2026-03-01T12:00:00Z")
        w.cache._apply_node("MODIFIED", back)
        return plan

    monkeypatch.setattr(controller_mod, "make_plan", plan_then_the_kubelet_posts)
    w.cycle()
    assert [f.node for f in w.controller.plan.dark.fences] == ["dark"]  # planned...
    assert ("PATCH", "/api/v1/nodes/dark") not in w.api.writes  # ...and not written: the node changed since
    assert w.api.nodes["dark"]["spec"].get("taints") is None


def test_a_dark_node_without_evidence_is_announced_once_and_a_dry_run_fences_nothing(tmp_path: Path) -> None:
    w = World(tmp_path, nodes=[dark_node("dark", confirmed=False), node("well"), node("well2")], pods=[])
    w.cycle()
    w.clock.advance(5)
    w.cycle()
    assert w.api.reasons().count("NodemedicDarkNode") == 1 and ("PATCH", "/api/v1/nodes/dark") not in w.api.writes
    assert w.metric("nodemedic_dark_node_needs_evidence", node="dark") == 1
    d = World(tmp_path, nodes=[dark_node("dark"), node("well"), node("well2")], pods=[], dry_run=True)
    d.cycle()
    assert d.api.writes == [] and d.metric("nodemedic_dry_run_actions_total", action="fence") == 1


def test_a_dark_node_waiting_for_evidence_is_told_again_when_a_partition_holds_it(tmp_path: Path) -> None:
    nodes = [dark_node("d0", confirmed=False), node("d1"), node("d2"), node("well"), node("well2")]
    w = World(tmp_path, nodes=nodes, pods=[])
    w.cycle()
    assert w.api.reasons() == ["NodemedicDarkNode"]
    for name in ("d1", "d2"):  # two more go dark: 3 of 5, a partition
        w.api.nodes[name] = dark_node(name, confirmed=False)
    w.watch_nodes()
    w.clock.advance(5)
    w.cycle()
    assert sorted(w.api.reasons()) == ["NodemedicDarkNode"] + ["NodemedicManyNodesDark"] * 3
    assert w.metric("nodemedic_dark_nodes_halted", group="cluster") == 1


def test_a_landed_balance_move_opens_its_landing_before_the_eviction_and_the_workloads_next_move_waits(
        tmp_path: Path) -> None:
    hot = [busy_pod(f"h{i}", "hot") for i in range(8)]
    for p in hot[:4]:  # one workload of four pods, four of one pod each
        p["metadata"]["ownerReferences"][0].update(name="web", uid="rs-web")
    w = World(tmp_path, nodes=[node("hot"), node("cold-1"), node("cold-2")], pods=hot,
              policy=LNU_POLICY + "eviction: {landing: planned}\n", landing_namespace="ops")
    w.cycle()
    web = {f"shop/h{i}" for i in range(4)}
    assert len([k for k in w.api.evicted if k in web]) == 1, w.api.evicted
    first = [(m, p) for m, p in w.api.writes if "/landings" in p or p.endswith("/eviction")]
    landed = [obj["spec"]["moved"] for obj in w.api.landing_objects]
    assert sorted(landed) == sorted(w.api.evicted), "each move pinned (each node has a hostname of its own)"
    landings = "/apis/nodemedic.io/v1alpha1/namespaces/ops/landings"
    assert first[0] == ("GET", landings), "a previous leader's landings looked for first"
    assert first[1] == ("POST", landings) and first[2][1].endswith("/eviction")
    assert {obj["spec"]["node"] for obj in w.api.landing_objects} <= {"cold-1", "cold-2"}
    assert all(obj["spec"]["ownerUID"] == "rs-web" for obj in w.api.landing_objects if obj["spec"]["moved"] in web)


def test_the_leader_reads_the_migrations_before_planning_and_an_open_one_holds_its_engine(tmp_path: Path) -> None:
    """control/migrations.py: an open Migration of an engine keeps that engine from proposing another; a dry run
    reads them and writes none."""
    for dry_run in (False, True):
        w = World(tmp_path, nodes=[node("n1")], pods=[], policy=LNU_POLICY, landing_namespace="ops", dry_run=dry_run)
        w.api.migrations = [{"metadata": {"name": "migration-0011aabb", "namespace": "ops"}, "spec": {
            "engine": "BalanceResourceMix", "proposed": "2026-03-01T12:00:00Z", "expires": "2099-03-01T13:00:00Z",
            "decision": "", "gain": {"measure": "m", "before": 2, "after": 1}, "steps": [
                {"pod": "shop/a", "podUID": "u", "owner": "ReplicaSet/web", "ownerUID": "rs", "from": "n1", "to": "n2",
                 "hostname": "n2"}]}, "status": {"phase": "Proposed"}}]
        w.cycle()
        assert w.controller.memory.open_migrations == {"BalanceResourceMix": "migration-0011aabb"}
        listed = ("GET", "/apis/nodemedic.io/v1alpha1/namespaces/ops/migrations")
        assert [c for c in w.api.writes if "/migrations" in c[1]] == [listed], "waiting for a decision: only read"
