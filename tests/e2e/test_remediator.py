"""The remediator against the real control plane: conditions → taints → evictions, and its safety rails."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    REMEDIATOR,
    deployment,
    events_once,
    nodemedic_events,
    place_on_first,
    pool_affinity,
    pool_scope,
    running_on,
    set_condition,
    start_remediator,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kernel-deadlock"


def policy(namespace: str, pool: list[str], *, extra: str = "",
           safety: str = "{maxTaintedNodes: 10, maxTaintedNodesPercent: 100}", for_: str = "1s",
           recover: str = "2s") -> str:
    # Evictions are scoped to the test's namespace and nodes to its pool, so a test never touches another test's
    # pods, and another test's sick nodes never take this one's breaker slots.
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: {for_}}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: {recover}
evictor:
  namespaces: {{include: [{namespace}]}}
limits: {{ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}}
eviction: {{retryDeadline: 300s, initialBackoff: 200ms, maxBackoff: 1s}}
safety: {safety}
{pool_scope(pool)}
{extra}
"""


def test_a_condition_taints_the_node_and_evicts_only_pods_that_may_and_can_move(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, policy_api: client.PolicyV1Api,
    namespace: str, node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(3)
    a = pool[0]
    empty_dir = [{"name": "scratch", "emptyDir": {}}]

    def create() -> None:
        apps.create_namespaced_deployment(namespace, deployment("web", 4, pool))
        apps.create_namespaced_deployment(namespace, deployment("local", 1, pool, volumes=empty_dir))
        apps.create_namespaced_deployment(namespace, deployment("critical", 1, pool,
                                                                priority_class="system-cluster-critical"))
        apps.create_namespaced_deployment(namespace, deployment("guarded", 2, pool))
        core.create_namespaced_pod(namespace, {"metadata": {
            "name": "mirror", "labels": {"app": "mirror"},
            "annotations": {"kubernetes.io/config.mirror": "x", "kubernetes.io/config.source": "file"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": a,
                                 "uid": core.read_node(a).metadata.uid}]},
            "spec": {"nodeName": a, "containers": [{"name": "c", "image": "registry.invalid/static:1"}]}})
        for app, n in (("web", 4), ("local", 1), ("critical", 1), ("guarded", 2), ("mirror", 1)):
            placed = wait_running(core, namespace, app, n)
            assert set(placed.values()) == {a}, (app, placed)

    place_on_first(core, pool, create)
    apps.create_namespaced_daemon_set(namespace, {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"affinity": pool_affinity(pool),
                     "containers": [{"name": "a", "image": "registry.invalid/agent:1"}]}}}})
    wait_running(core, namespace, "agent", 3)
    policy_api.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "guarded"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}})

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, pool), name="r1", lease_namespace=namespace)
    processes.append(r)
    set_condition(core, a, "KernelDeadlock", "True")

    wait_until(lambda: TAINT in taint_keys(core, a), timeout=30, what=f"{TAINT} on {a}")
    owned = json.loads(core.read_node(a).metadata.annotations["nodemedic.io/owned-taints"])
    assert [o["key"] for o in owned] == [TAINT] and owned[0]["rules"] == ["kernel-deadlock"]

    web = wait_until(lambda: (p := running_on(core, namespace, "web")) and len(p) == 4 and a not in p.values() and p,
                     timeout=60, what="web pods evicted from the sick node and rescheduled elsewhere")
    assert set(web.values()) <= set(pool[1:])
    for app in ("local", "critical", "mirror"):
        assert set(running_on(core, namespace, app).values()) == {a}, f"{app} must stay on {a}"
    assert a in running_on(core, namespace, "agent").values(), "the DaemonSet pod must stay"

    # The PDB allows no disruption: the guarded pods stay, and the remediator keeps retrying (429).
    wait_until(lambda: any(e.get("msg") == "eviction retry" and "guarded" in e.get("pod", "")
                           for e in r.log_events()), timeout=30, what="a 429-refused eviction being retried")
    assert set(running_on(core, namespace, "guarded").values()) == {a}
    policy_api.patch_namespaced_pod_disruption_budget("guarded", namespace, {"spec": {"minAvailable": 1}})
    wait_until(lambda: (p := running_on(core, namespace, "guarded")) and len(p) == 2 and a not in p.values(),
               timeout=60, what="guarded pods evicted once the PDB allows it")

    assert r.metric("nodemedic_evictions_total", outcome="evicted") == 6  # 4 web + 2 guarded, nothing else
    evicted_events = events_once(core, namespace, "NodemedicEvicted", 6)
    assert len({e.involved_object.name for e in evicted_events}) == 6
    assert nodemedic_events(core, "default", "NodemedicTainted")

    set_condition(core, a, "KernelDeadlock", "False")
    wait_until(lambda: TAINT not in taint_keys(core, a), timeout=30, what="the taint removed after recoverAfter")
    assert json.loads(core.read_node(a).metadata.annotations["nodemedic.io/owned-taints"]) == []
    # Steady state is watches only: one LIST per cache (nodes, pods, PDBs, PriorityClasses, PVCs) at start-up, none
    # since.
    assert r.metric("nodemedic_api_requests_total", verb="LIST") == 5
    assert r.metric("nodemedic_api_requests_total", verb="WATCH") >= 5


def test_a_taint_a_human_put_there_first_is_never_removed(
    cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
    tmp_path: Path, processes: list,
) -> None:
    ours, theirs = node_pool(2)
    core.patch_node(theirs, {"spec": {"taints": [{"key": TAINT, "value": "human", "effect": "NoSchedule"}]}})
    processes.append(start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, [ours, theirs]), name="r",
                                      lease_namespace=namespace))
    for n in (ours, theirs):
        set_condition(core, n, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(core, ours), timeout=30, what="our taint")
    for n in (ours, theirs):
        set_condition(core, n, "KernelDeadlock", "False")
    wait_until(lambda: TAINT not in taint_keys(core, ours), timeout=30, what="our taint removed after recovery")
    taints = core.read_node(theirs).spec.taints
    assert [(t.key, t.value) for t in taints] == [(TAINT, "human")]
    assert "nodemedic.io/owned-taints" not in (core.read_node(theirs).metadata.annotations or {})


class Receiver:
    """A real local HTTP receiver collecting JSON bodies (the webhook sink's target)."""

    def __init__(self) -> None:
        self.bodies: list[object] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                outer.bodies.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


ONE_PER_NODE = {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": "kubernetes.io/hostname"}]}}}
ONE_PER_ZONE = {"topologySpreadConstraints": [
    {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
     "labelSelector": {"matchLabels": {"app": "spread"}}}]}


@pytest.mark.parametrize(("constraint", "why"), [(ONE_PER_NODE, "pod anti-affinity"),
                                                 (ONE_PER_ZONE, "topology spread")],
                         ids=["required-anti-affinity", "hard-topology-spread"])
def test_a_pod_whose_constraints_leave_it_nowhere_to_go_stays_while_others_move(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list, constraint: dict, why: str,
) -> None:
    pool = node_pool(3)  # one node in each of the three zones
    a = pool[0]
    spread = deployment("spread", 3, pool)
    template = spread["spec"]["template"]["spec"]
    for key, value in constraint.items():  # affinity merges with the pool's node affinity; the rest is new
        template[key] = {**template[key], **value} if key in template else value
    apps.create_namespaced_deployment(namespace, spread)
    placed = wait_running(core, namespace, "spread", 3)
    assert sorted(placed.values()) == sorted(pool), "kube-scheduler spreads them one per node"
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("plain", 1, pool)),
                                        wait_running(core, namespace, "plain", 1)))
    stuck = next(name for name, node in placed.items() if node == a)

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, pool), name="r", lease_namespace=namespace)
    processes.append(r)
    set_condition(core, a, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(core, a), timeout=30, what="the taint")
    wait_until(lambda: (p := running_on(core, namespace, "plain")) and a not in p.values(), timeout=60,
               what="the plain pod evicted and running elsewhere")
    reason = wait_until(lambda: next((p["why"] for p in r.plan()["protected"] if p["name"] == stuck), None),
                        timeout=30, what=f"{stuck} reported as protected")
    assert "0/" in reason and why in reason, reason
    assert running_on(core, namespace, "spread") == placed, "no spread pod was evicted"
    evicted = {e.involved_object.name for e in events_once(core, namespace, "NodemedicEvicted", 1)}
    assert stuck not in evicted and len(evicted) == 1, evicted


def test_the_circuit_breaker_taints_at_most_the_limit_and_processes_the_rest_as_nodes_recover(
    cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
    tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(5)
    receiver = Receiver()
    try:
        sinks = f"notifications: {{sinks: [{{type: webhook, url: '{receiver.url}'}}]}}"
        r = start_remediator(tmp_path, cluster.kubeconfig,
                             policy(namespace, pool, extra=sinks, recover="1s",
                                    safety="{maxTaintedNodes: 2, maxTaintedNodesPercent: 100, minTaintedNodes: 1}"),
                             name="r", lease_namespace=namespace)
        processes.append(r)
        for n in pool:
            set_condition(core, n, "KernelDeadlock", "True")

        def tainted() -> set[str]:
            # One LIST, so one moment: reading the nodes one by one can see a node's old taint and another's new
            # one together, a state that never existed.
            return {n.metadata.name for n in core.list_node().items
                    if n.metadata.name in pool and any(t.key == TAINT for t in n.spec.taints or [])}

        first = wait_until(lambda: len(t := tainted()) == 2 and t, timeout=30, what="2 tainted nodes")
        wait_until(lambda: len(r.plan()["held"]) == 3, timeout=30, what="3 nodes held by the breaker")
        # /plan is published before the cycle's metrics are set: wait for them, then hold them to exactly one trip.
        wait_until(lambda: r.metric("nodemedic_circuit_breaker_trips_total") >= 1, timeout=10, what="the trip counted")
        assert r.metric("nodemedic_circuit_breaker_open") == 1
        assert r.metric("nodemedic_circuit_breaker_trips_total") == 1
        breaker_events = nodemedic_events(core, "default", "NodemedicCircuitBreakerOpen")
        assert {e.involved_object.name for e in breaker_events} >= set(pool) - first
        assert all(e.type == "Warning" for e in breaker_events)
        wait_until(lambda: any(isinstance(b, dict) and b.get("kind") == "CircuitBreakerOpen"
                               for b in receiver.bodies), timeout=30, what="a CircuitBreakerOpen notification")
        assert tainted() == first, "the breaker must hold at exactly 2"

        seen: set[str] = set(first)
        for n in sorted(first):
            set_condition(core, n, "KernelDeadlock", "False")
        while len(seen) < 5:
            now_tainted = wait_until(lambda seen=seen: (t := tainted()) and not t <= seen and t, timeout=30,
                                     what=f"a new node tainted after recovery (seen {sorted(seen)})")
            assert len(now_tainted) <= 2, now_tainted
            for n in now_tainted - seen:
                set_condition(core, n, "KernelDeadlock", "False")
            seen |= now_tainted
        assert {b["kind"] for b in receiver.bodies if isinstance(b, dict)} >= {"Tainted", "Untainted",
                                                                               "CircuitBreakerOpen"}
    finally:
        receiver.close()


def test_only_the_leader_acts_and_a_standby_takes_over_without_evicting_twice(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, policy_api: client.PolicyV1Api,
    coordination: client.CoordinationV1Api, namespace: str, node_pool: Callable[..., list[str]], tmp_path: Path,
    processes: list,
) -> None:
    pool = node_pool(3)
    a = pool[0]
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 4, pool)),
                                        wait_running(core, namespace, "web", 4)))
    policy_api.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "web"}, "spec": {"minAvailable": 4, "selector": {"matchLabels": {"app": "web"}}}})
    text = policy(namespace, pool)
    r1 = start_remediator(tmp_path, cluster.kubeconfig, text, name="r1", lease_namespace=namespace)
    processes.append(r1)
    wait_until(lambda: r1.metric("nodemedic_leader") == 1, timeout=30, what="r1 leading")
    r2 = start_remediator(tmp_path, cluster.kubeconfig, text, name="r2", lease_namespace=namespace)
    processes.append(r2)
    set_condition(core, a, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(core, a), timeout=30, what="taint by the leader")
    wait_until(lambda: any(e.get("msg") == "eviction retry" for e in r1.log_events()), timeout=30,
               what="the leader retrying PDB-refused evictions")
    assert r2.metric("nodemedic_leader") == 0
    assert not any(e.get("msg") in ("eviction retry", "taint write failed") or e.get("event") for e in
                   r2.log_events()), "the standby acted"
    # The standby's caches are warm but its own planning cycle lags the leader's by up to a cycle interval.
    wait_until(lambda: r2.plan()["evictions"], timeout=30, what="the standby planning the same evictions")

    r1.kill()
    killed = time.monotonic()
    holder = wait_until(lambda: coordination.read_namespaced_lease("nodemedic-remediator", namespace)
                        .spec.holder_identity == "r2", timeout=20, what="r2 holding the lease")
    took = time.monotonic() - killed
    assert holder and took <= 6 + 1 + 1, f"takeover took {took:.1f}s (lease 6s, retry 1s)"
    print(f"\nstandby took over {took:.1f}s after the leader was killed (lease duration 6s)")
    policy_api.patch_namespaced_pod_disruption_budget("web", namespace, {"spec": {"minAvailable": 3}})
    wait_until(lambda: (p := running_on(core, namespace, "web")) and len(p) == 4 and a not in p.values(),
               timeout=90, what="all web pods moved off the sick node")
    evicted = [e.involved_object.name for e in events_once(core, namespace, "NodemedicEvicted", 4)]
    assert len(evicted) == 4 and len(set(evicted)) == 4, evicted


def test_dry_run_and_plan_report_the_full_plan_and_write_nothing(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, coordination: client.CoordinationV1Api,
    namespace: str, node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(2)
    a = pool[0]
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 3, pool)),
                                        wait_running(core, namespace, "web", 3)))
    before = running_on(core, namespace, "web")
    set_condition(core, a, "KernelDeadlock", "True")
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, pool), name="dry", lease_namespace=namespace,
                         extra=["--dry-run"])
    processes.append(r)

    def planned() -> bool:
        p = r.plan()
        return (any(t["node"] == a and t["key"] == TAINT for t in p["taints"]["add"])
                and {e["name"] for e in p["evictions"]} == set(before))

    wait_until(planned, timeout=30, what="the dry run planning the taint and 3 evictions")
    wait_until(lambda: sum(1 for e in r.log_events() if e.get("dry_run")) >= 4, timeout=10,
               what="dry-run log lines")

    def one_shot() -> dict:
        out = subprocess.run([*REMEDIATOR, "plan", "--policy", str(tmp_path / "dry-policy.yaml"), "--kubeconfig",
                              str(cluster.kubeconfig), "--json"], capture_output=True, text=True, timeout=60,
                             check=True)
        return json.loads(out.stdout)

    # A fresh process cannot have watched the transition: it counts `for` from lastTransitionTime + 1 s (the
    # stamp's resolution), so it may plan the taint up to a second after the running dry run did.
    doc = wait_until(lambda: (d := one_shot()) and any(t["node"] == a for t in d["taints"]["add"]) and d,
                     timeout=15, what="the one-shot plan to reach `for` too")
    node = core.read_node(a)
    seen = (f"node {a}: taints {[(t.key, t.effect) for t in node.spec.taints or []]}, conditions "
            f"{[(c.type, c.status, c.last_transition_time) for c in node.status.conditions or []]}; plan held "
            f"{doc['held']}, breaker {doc['breaker']}, {len(doc['taints']['add'])} adds in all")
    assert [(t["node"], t["key"], t["rule"]) for t in doc["taints"]["add"] if t["node"] == a] == [
        (a, TAINT, "kernel-deadlock")], seen
    assert {(e["namespace"], e["name"], e["node"]) for e in doc["evictions"]} == {
        (namespace, name, a) for name in before}
    assert set(doc) >= {"taints", "evictions", "protected"}

    assert TAINT not in taint_keys(core, a)
    assert "nodemedic.io/owned-taints" not in (core.read_node(a).metadata.annotations or {})
    assert running_on(core, namespace, "web") == before
    ours = [e for e in core.list_event_for_all_namespaces().items
            if e.reporting_component == "nodemedic-remediator"
            and (e.metadata.namespace == namespace or e.involved_object.name in pool)]
    assert not ours, f"the dry run wrote Events: {[(e.reason, e.involved_object.name) for e in ours]}"
    with pytest.raises(ApiException) as no_lease:
        coordination.read_namespaced_lease("nodemedic-remediator", namespace)
    assert no_lease.value.status == 404


def test_a_restart_in_the_middle_of_a_remediation_converges_and_keeps_ownership(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, policy_api: client.PolicyV1Api,
    namespace: str, node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(3)
    a = pool[0]
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 3, pool)),
                                        wait_running(core, namespace, "web", 3)))
    apps.create_namespaced_deployment(namespace, deployment("bystander", 2, pool[1:]))
    bystanders = wait_running(core, namespace, "bystander", 2)
    policy_api.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "web"}, "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}})
    text = policy(namespace, pool, recover="2s")
    r1 = start_remediator(tmp_path, cluster.kubeconfig, text, name="first", lease_namespace=namespace)
    processes.append(r1)
    set_condition(core, a, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(core, a), timeout=30, what="taint")
    wait_until(lambda: any(e.get("msg") == "eviction retry" for e in r1.log_events()), timeout=30,
               what="evictions blocked by the PDB")
    r1.kill()

    r2 = start_remediator(tmp_path, cluster.kubeconfig, text, name="second", lease_namespace=namespace,
                          policy_path=tmp_path / "first-policy.yaml")
    processes.append(r2)
    policy_api.patch_namespaced_pod_disruption_budget("web", namespace, {"spec": {"minAvailable": 2}})
    wait_until(lambda: (p := running_on(core, namespace, "web")) and len(p) == 3 and a not in p.values(),
               timeout=90, what="the new process finishing the evictions")
    set_condition(core, a, "KernelDeadlock", "False")
    wait_until(lambda: TAINT not in taint_keys(core, a), timeout=30,
               what="the new process removing the taint the first one added")
    assert running_on(core, namespace, "bystander") == bystanders, "a pod the plan did not require was evicted"
    evicted = [e.involved_object.name for e in events_once(core, namespace, "NodemedicEvicted", 3)]
    assert len(evicted) == 3 and len(set(evicted)) == 3, evicted


def test_a_bad_policy_file_keeps_the_last_good_one_and_raises_a_warning(
    cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
    tmp_path: Path, processes: list,
) -> None:
    (node,) = node_pool(1)
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, [node]), name="r", lease_namespace=namespace)
    processes.append(r)
    (tmp_path / "r-policy.yaml").write_text("apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nrules: 7\n")
    wait_until(lambda: nodemedic_events(core, namespace, "NodemedicPolicyRejected"), timeout=30,
               what="a Warning event for the rejected policy")
    assert r.metric("nodemedic_policy_reloads_total", result="error") == 1
    set_condition(core, node, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(core, node), timeout=30, what="the old policy still acting")
    assert r.healthy()
