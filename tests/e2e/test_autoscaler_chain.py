"""The whole chain with a real node autoscaler: kernel line → agent → taint → evictions → Karpenter removes the node.

Every node here is Karpenter's (a NodeClaim of the test's own NodePool, made by its kwok provider); nodemedic's
agent plays one of them through a fixture host root and the remediator runs as a real process. Each test watches
its pool throughout: no node may disappear that nodemedic did not drain or consolidate, and no PDB-protected
workload may drop below its minimum.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.kcp import karpenter, partition
from tests.e2e.agent_harness import HUNG, Agent, kmsg, start_agent, write_config
from tests.e2e.audit_log import audit_calls, pod_removals
from tests.e2e.autoscaler_harness import POOL_LABEL, PoolWatch, node_pool, pool_nodes
from tests.e2e.conftest import LocalCluster
from tests.e2e.fake_host import host_root
from tests.e2e.remediator_harness import (
    RemediatorProcess,
    cordon,
    events_once,
    nodemedic_events,
    set_condition,
    start_remediator,
    taint_keys,
)
from tests.e2e.repair_harness import answer, ladder, repairing_agent
from tests.waiting import Moments, wait_until

# One xdist worker runs the whole module: its tests share one Karpenter cluster (module-scoped karpenter_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("autoscaler_chain")]

TAINT = "nodemedic.io/kernel-deadlock"
SHIPPED_POLICY = Path(__file__).resolve().parents[2] / "deploy" / "policy" / "default.yaml"
CONSOLIDATING = "nodemedic.io/consolidating"
NODE_GONE = 180  # Karpenter removes an empty node after consolidateAfter (5 s) + up to 10 s + 15 s + the drain


@dataclass
class Chain:
    cluster: LocalCluster
    core: client.CoreV1Api
    apps: client.AppsV1Api
    policy_api: client.PolicyV1Api
    namespace: str
    pool: str
    tmp: Path

    def deploy(self, name: str, replicas: int, cpu: str, *, min_available: int | None = None) -> None:
        """A Deployment whose pods select this test's NodePool (so Karpenter makes their nodes); a PDB if asked."""
        labels = {"app": name}
        self.apps.create_namespaced_deployment(self.namespace, {
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"nodeSelector": {POOL_LABEL: self.pool}, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                         "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}]}}}})
        if min_available is not None:
            self.policy_api.create_namespaced_pod_disruption_budget(self.namespace, {
                "metadata": {"name": name},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}}})

    def serving(self, app: str) -> dict[str, str]:
        """pod -> node for the pods of `app` that serve (Running, Ready, not terminating) on live nodes of the pool."""
        live = pool_nodes(self.core, self.pool)
        return {p.metadata.name: p.spec.node_name
                for p in self.core.list_namespaced_pod(self.namespace, label_selector=f"app={app}").items
                if p.metadata.deletion_timestamp is None and p.status.phase == "Running" and p.spec.node_name in live
                and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])}

    def placed(self, app: str, count: int, timeout: float = 90) -> dict[str, str]:
        """pod -> node once exactly `count` pods of `app` serve."""
        return self.serving_when(app, lambda pods: len(pods) == count, timeout,
                                 f"{count} serving pods of {app} on pool {self.pool}")

    def serving_when(self, app: str, ok: Callable[[dict[str, str]], bool], timeout: float, what: str
                     ) -> dict[str, str]:
        def probe() -> dict[str, str] | None:
            pods = self.serving(app)
            return pods if ok(pods) else None
        return wait_until(probe, timeout=timeout, what=what)

    def remediator(self, policy: str, processes: list) -> RemediatorProcess:
        r = start_remediator(self.tmp, self.cluster.kubeconfig, policy, name=f"remediator-{self.pool}",
                             lease_namespace=self.namespace)
        processes.append(r)
        return r

    def gone(self, node: str) -> bool:
        try:
            self.core.read_node(node)
        except ApiException as e:
            if e.status == 404:
                return True
            raise
        return False

    def cordoned(self, nodes: set[str], on: bool) -> None:
        cordon(self.core, sorted(nodes), on)  # an uncordon also waits for the unschedulable taint to go


@pytest.fixture
def chain(karpenter_cluster: LocalCluster, tmp_path: Path) -> Iterator[Chain]:
    core = client.CoreV1Api(karpenter_cluster.api)
    suffix = secrets.token_hex(2)
    name = f"chain-{suffix}"
    core.create_namespace({"metadata": {"name": name}})
    wait_until(lambda: core.list_namespaced_service_account(name).items, timeout=30, what=f"{name}/default SA")
    pool = node_pool(karpenter_cluster, name)
    yield Chain(karpenter_cluster, core, client.AppsV1Api(karpenter_cluster.api),
                client.PolicyV1Api(karpenter_cluster.api), name, pool, tmp_path)
    core.delete_namespace(name)  # its pods go, so Karpenter empties and removes the pool's nodes by itself
    assert karpenter_cluster.owned is not None
    log = karpenter_cluster.owned.log_dir / "karpenter.log"
    if log.exists():  # the cluster's state directory goes with it: keep Karpenter's account of this test
        shutil.copyfile(log, tmp_path / "karpenter.log")


# The shipped policy's autoscaler section as it is (addsNodes: auto): the remediator must find Karpenter itself.
SHIPPED_AUTOSCALER = json.dumps(yaml.safe_load(SHIPPED_POLICY.read_text())["autoscaler"])


def policy(namespace: str, *, rules: bool = True, strategies: str = "", safety: str = "{}") -> str:
    rule = f"""
- name: kernel-deadlock
  condition: {{type: KernelDeadlock, status: "True", for: 2s}}
  taint: {{key: {TAINT}, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 10m""" if rules else " []"
    return f"""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:{rule}
{strategies}
evictor: {{nodeFit: true, namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 300s, initialBackoff: 200ms, maxBackoff: 1s}}
safety: {safety}
autoscaler: {SHIPPED_AUTOSCALER}
"""


def test_a_hung_task_line_on_a_karpenter_node_ends_with_the_node_removed_and_its_pods_running_elsewhere(
    chain: Chain, agents: list[Agent], processes: list,
) -> None:
    # 4 pods of 1500m on 4-CPU nodes: Karpenter makes two full nodes, so the pods of either have room nowhere
    # else: nodemedic counts on the autoscaler it detects (autoscaler.addsNodes: auto) and Karpenter must add a
    # node for them. The remediator runs the shipped policy unchanged (rule `for: 30s`, ownerCooldown 5s, its
    # eviction back-off): what a user installs delivers the chain.
    chain.deploy("web", 4, "1500m", min_available=3)
    before = chain.placed("web", 4)
    first_nodes = set(before.values())
    assert len(first_nodes) == 2, before
    sick = sorted(first_nodes)[0]
    on_sick = sorted(p for p, n in before.items() if n == sick)
    watch = PoolWatch(chain.core, chain.pool, {(chain.namespace, "web"): 3}).start()
    processes.append(watch)  # stopped after the test, whatever the outcome

    r = chain.remediator(SHIPPED_POLICY.read_text(), processes)
    root = host_root(chain.tmp)
    config = write_config(chain.tmp / "agent.yaml", ["kernel-monitor.json"])
    agents.append(agent := start_agent(chain.cluster.kubeconfig, sick, root, config, chain.tmp / "agent.log"))
    wait_until(lambda: any(c.type == "KernelDeadlock" for c in chain.core.read_node_status(sick).status.conditions)
               or (agent.proc.poll() is not None and pytest.fail(agent.log.read_text()[-3000:])),
               timeout=30, what="the agent's first status write")

    t0 = time.monotonic()
    kmsg(root, HUNG, [0])
    wait_until(lambda: any(c.type == "KernelDeadlock" and c.status == "True"
                           for c in chain.core.read_node_status(sick).status.conditions),
               timeout=30, what=f"KernelDeadlock=True on {sick}")
    t_detected = time.monotonic()
    wait_until(lambda: TAINT in taint_keys(chain.core, sick), timeout=60, what=f"{TAINT} on {sick} (`for: 30s`)")
    t_tainted = time.monotonic()
    after = chain.serving_when("web", lambda p: len(p) == 4 and sick not in p.values(), 120,
                               "the 4 pods serving again, none on the sick node")
    t_moved = time.monotonic()
    pods_then = chain.core.list_namespaced_pod(chain.namespace, label_selector="app=web").items  # the node still there
    wait_until(lambda: chain.gone(sick), timeout=NODE_GONE, what=f"Karpenter removing {sick}")
    t_removed = time.monotonic()
    watch.stop()

    replacements = set(after.values()) - first_nodes
    assert replacements, f"the evicted pods ran on a node Karpenter added: {after}"
    assert all(watch.added[n] > t0 for n in replacements)
    evicted = sorted(e.involved_object.name
                     for e in events_once(chain.core, chain.namespace, "NodemedicEvicted", len(on_sick)))
    tainted_at = taint_logged(r, sick)
    assert evicted == on_sick, "\n".join([f"evicted {evicted}, on {sick} at the start {on_sick}",
                                          *eviction_evidence(chain, r, "web", tainted_at)])
    # The remediator evicts only once its own node watch shows the taint (remediator/control/taints_seen.py): by
    # then kube-scheduler has been sent it too, and no replacement may be bound to the sick node.
    late = {p: t for p, t in scheduled_to(chain.core, chain.namespace, sick).items() if t >= tainted_at}
    late |= {p.metadata.name: p.metadata.creation_timestamp for p in pods_then if p.spec.node_name == sick
             and p.metadata.creation_timestamp >= tainted_at.replace(microsecond=0)}  # stamped in whole seconds
    assert not late, "\n".join([f"pods bound to {sick} after its taint ({tainted_at}): {late}",
                                 *eviction_evidence(chain, r, "web", tainted_at)])
    watch.assert_held(may_remove={sick})
    # By its work, not its CRDs: the Lease the running Karpenter's leader renews (hack/kcp/karpenter.py).
    found = [str(e.get("evidence")) for e in r.log_events()
             if e.get("msg") == "node autoscaler detected" and e.get("autoscaler") == "karpenter"]
    assert len(found) == 1, f"the remediator found Karpenter itself, once: {found}"
    assert found[0].startswith("Lease kube-system/karpenter-leader-election (held by "), found
    assert r.metric("nodemedic_autoscaler_detected", autoscaler="karpenter") == 1
    print(f"\nchain: kernel line → condition {t_detected - t0:.1f}s → taint {t_tainted - t_detected:.1f}s → "
          f"pods serving elsewhere {t_moved - t_tainted:.1f}s (on new {sorted(replacements)}) → node removed "
          f"{t_removed - t_moved:.1f}s; total {t_removed - t0:.1f}s; fewest serving web pods "
          f"{watch.fewest[(chain.namespace, 'web')]} (PDB minAvailable 3); remediator log: taint → first eviction "
          f"{(min(t for t, _, _ in evictions_logged(r)) - tainted_at).total_seconds() * 1000:.0f} ms")


def taint_logged(r: RemediatorProcess, node: str) -> dt.datetime:
    """When the remediator logged the NodemedicTainted of `node` (just after its taint PATCH returned)."""
    times = [dt.datetime.fromisoformat(str(e["time"])) for e in r.log_events()
             if e.get("event") == "NodemedicTainted" and e.get("node") == node]
    assert times, f"no NodemedicTainted of {node} in the remediator's log"
    return min(times)


def evictions_logged(r: RemediatorProcess) -> list[tuple[dt.datetime, str, str]]:
    """(when, pod, "evicted from NODE by ...") for each NodemedicEvicted line of the remediator's log."""
    return [(dt.datetime.fromisoformat(str(e["time"])), str(e.get("pod")), str(e.get("msg")))
            for e in r.log_events() if e.get("event") == "NodemedicEvicted"]


def scheduled_to(core: client.CoreV1Api, namespace: str, node: str) -> dict[str, dt.datetime]:
    """pod -> when kube-scheduler bound it to `node`, from its Scheduled Events (kept after the pod is gone)."""
    out = {}
    for e in core.list_namespaced_event(namespace, field_selector="reason=Scheduled").items:
        when = event_time(e)
        if (e.message or "").endswith(f" to {node}") and when is not None:
            out[e.involved_object.name] = when
    return out


def eviction_evidence(chain: Chain, r: RemediatorProcess, app: str, tainted_at: dt.datetime) -> list[str]:
    """What tells an eviction of a replacement bound back to the sick node from any other cause: the remediator's own
    account of each eviction (pod, node) and of each retry or pod found gone, the app's pods (node, created), and every
    Event on a pod of the namespace: kube-scheduler's bindings, and whoever else removed one (Karpenter's drain,
    kube-controller-manager's taint eviction); then the API server's account of every request that removed one."""
    lines = [f"taint logged {tainted_at.isoformat()}"]
    lines += [f"remediator {when.isoformat()}: {pod} {msg}" for when, pod, msg in evictions_logged(r)]
    lines += [f"remediator {e.get('time')}: {e.get('pod')} {e.get('msg')} {e.get('error') or e.get('detail') or ''}"
              for e in r.log_events() if e.get("msg") in ("eviction retry", "pod gone before its eviction",
                                                          "event not recorded")]
    for p in chain.core.list_namespaced_pod(chain.namespace, label_selector=f"app={app}").items:
        lines.append(f"pod {p.metadata.name} on {p.spec.node_name} created {p.metadata.creation_timestamp}"
                     + (" (terminating)" if p.metadata.deletion_timestamp else ""))
    events = chain.core.list_namespaced_event(chain.namespace, field_selector="involvedObject.kind=Pod").items
    lines += [event_line(e) for e in sorted(events, key=lambda e: str(event_time(e)))]
    lines += [f"audit {line}" for line in pod_removals(audit_calls(chain.cluster), chain.namespace)]
    return lines


def node_evidence(chain: Chain, node: str) -> list[str]:
    """The node's taints and conditions now, and every Event about it: whoever else acted on it (the node
    lifecycle controller, Karpenter)."""
    n = chain.core.read_node(node)
    lines = [f"node {node} taints {[(t.key, t.effect) for t in n.spec.taints or []]}"]
    lines += [f"node {node} {c.type}={c.status} since {c.last_transition_time}" for c in n.status.conditions or []]
    return lines + [event_line(e) for e in
                    chain.core.list_event_for_all_namespaces(field_selector=f"involvedObject.name={node}").items]


def event_line(e: client.CoreV1Event) -> str:
    """Who reported it, when, why, about what."""
    source = e.reporting_component or (e.source.component if e.source else "") or "?"
    return f"{source} {event_time(e)}: {e.reason} {e.involved_object.name}: {e.message}"


def event_time(e: client.CoreV1Event) -> dt.datetime | None:
    """When it happened: an events.k8s.io Event's eventTime, a core one's last (or first) timestamp."""
    return e.event_time or e.last_timestamp or e.first_timestamp


def test_high_node_utilization_empties_an_idle_karpenter_node_and_karpenter_removes_it(
    chain: Chain, processes: list,
) -> None:
    chain.deploy("web", 1, "2500m", min_available=1)
    busy = set(chain.placed("web", 1).values())
    chain.cordoned(busy, True)  # so the idle pod gets a node of its own from Karpenter
    try:
        chain.deploy("idle", 1, "300m")
        idle_node = set(chain.placed("idle", 1).values())
    finally:
        chain.cordoned(busy, False)
    assert idle_node.isdisjoint(busy)
    (idle,) = idle_node
    watch = PoolWatch(chain.core, chain.pool, {(chain.namespace, "web"): 1}).start()
    processes.append(watch)  # stopped after the test, whatever the outcome

    hnu = """strategies:
- name: HighNodeUtilization
  args: {thresholds: {cpu: 20}}"""
    r = chain.remediator(policy(chain.namespace, rules=False, strategies=hnu), processes)
    wait_until(lambda: CONSOLIDATING in taint_keys(chain.core, idle), timeout=60, what=f"{CONSOLIDATING} on {idle}")
    # The taint comes before the eviction: wait for the pod to serve off the idle node, then see where it went.
    moved = chain.serving_when("idle", lambda pods: len(pods) == 1 and idle not in pods.values(), 90,
                               f"the idle pod serving off {idle}")
    assert set(moved.values()) == busy, f"the idle pod went to another node, not to the busy one: {moved}"
    wait_until(lambda: chain.gone(idle), timeout=NODE_GONE, what=f"Karpenter removing the emptied {idle}")
    watch.stop()
    watch.assert_held(may_remove={idle})
    assert pool_nodes(chain.core, chain.pool) == busy
    assert r.metric("nodemedic_evictions_total", outcome="evicted") == 1


def test_with_the_breaker_at_its_limit_no_further_node_is_tainted_drained_or_removed(
    chain: Chain, processes: list,
) -> None:
    chain.deploy("held", 2, "1500m")
    held = set(chain.placed("held", 2).values())
    chain.policy_api.create_namespaced_pod_disruption_budget(chain.namespace, {  # nothing may leave the first node
        "metadata": {"name": "held"}, "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "held"}}}})
    chain.cordoned(held, True)
    try:
        chain.deploy("other", 2, "1500m")
        other_pods = chain.placed("other", 2)
    finally:
        chain.cordoned(held, False)
    (first,), (second,) = held, set(other_pods.values())
    assert first != second
    watch = PoolWatch(chain.core, chain.pool, {(chain.namespace, "held"): 2, (chain.namespace, "other"): 2}).start()
    processes.append(watch)  # stopped after the test, whatever the outcome

    r = chain.remediator(policy(chain.namespace, safety="{maxTaintedNodes: 1}"), processes)
    set_condition(chain.core, first, "KernelDeadlock", "True")
    wait_until(lambda: TAINT in taint_keys(chain.core, first), timeout=30, what=f"{TAINT} on {first}")
    tainted_at = dt.datetime.now(dt.UTC)
    wait_until(lambda: [e for e in r.log_events() if e.get("msg") == "eviction retry"
                        and "disruption budget" in str(e.get("error", "")).lower()],
               timeout=30, what="the PDB refusing the first node's evictions")
    set_condition(chain.core, second, "KernelDeadlock", "True")
    wait_until(lambda: [e for e in chain.core.list_event_for_all_namespaces(
        field_selector="reason=NodemedicCircuitBreakerOpen").items if e.involved_object.name == second],
        timeout=30, what=f"the breaker holding {second} back")
    # Longer than Karpenter takes to remove an empty node (26-35 s measured): had nodemedic drained either node,
    # it would be gone by now.
    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        assert TAINT not in taint_keys(chain.core, second), "the breaker let a second node be tainted"
        if (serving := chain.serving("other")) != other_pods:
            pytest.fail("\n".join([f"pods left the node the breaker holds: {other_pods} became {serving}",
                                    *eviction_evidence(chain, r, "other", tainted_at), *node_evidence(chain, second)]))
        assert not chain.gone(first) and not chain.gone(second)
        time.sleep(1)
    watch.stop()
    watch.assert_held(may_remove=set())
    assert r.metric("nodemedic_evictions_total", outcome="evicted") == 0


def repair_policy(namespace: str) -> str:
    """A GPU's fatal error that neither the drain nor a reboot clears: the ladder replaces the node."""
    return f"""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: gpu-fatal-error
  condition: {{type: GPUFatalError, status: "True", for: 1s}}
  taint: {{key: nodemedic.io/gpu-fatal-error, value: "true", effect: NoSchedule}}
  evict: true
  recoverAfter: 10m
  repair:
  - {{action: reboot, wait: 2m}}
  - {{action: replace, wait: 10m}}
  - {{action: person}}
strategies:
- name: RemovePodsViolatingNodeTaints
evictor: {{nodeFit: true, namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 300s, initialBackoff: 200ms, maxBackoff: 1s}}
repair: {{maxUnhealthyPercent: 100}}
autoscaler: {SHIPPED_AUTOSCALER}
"""


def test_a_node_that_a_reboot_does_not_heal_is_replaced_through_its_nodeclaim(
    chain: Chain, processes: list,
) -> None:
    # Reserved capacity: a NodePool whose disruption budget lets Karpenter take away none of its nodes (an emptied
    # node stays, drained, forever): the case a repair ladder is for. A client's NodeClaim delete still goes through.
    assert chain.cluster.owned is not None
    karpenter.apply_node_pools(chain.cluster.owned.api(), (karpenter.NodePool(name=chain.pool, budget_nodes="0"),))
    chain.deploy("train", 2, "1500m", min_available=1)
    before = chain.placed("train", 2)
    (sick,) = set(before.values())  # 3 CPU of requests: one 4-CPU node
    claim = next(o.name for o in chain.core.read_node(sick).metadata.owner_references or []
                 if o.kind == "NodeClaim")
    watch = PoolWatch(chain.core, chain.pool, {(chain.namespace, "train"): 1}).start()
    processes.append(watch)
    agent = repairing_agent(chain.tmp, chain.cluster.kubeconfig, sick)
    processes.append(agent)
    r = chain.remediator(repair_policy(chain.namespace), processes)
    t0 = time.monotonic()
    mark = Moments(t0)
    marks = mark.at

    set_condition(chain.core, sick, "GPUFatalError", "True", reason="XidFatal", message="Xid 79: fallen off the bus")
    wait_until(lambda: mark("taint", "nodemedic.io/gpu-fatal-error" in taint_keys(chain.core, sick)), timeout=30,
               what="the gpu-fatal-error taint")
    after = chain.serving_when("train", lambda p: len(p) == 2 and sick not in p.values(), 180,
                               "the pods drained onto a node Karpenter added")
    mark("drained, pods running on a new node", True)
    wait_until(lambda: mark("reboot asked", (s := ladder(chain.core, sick)) and s["action"] == "reboot"),
               timeout=30, what="the reboot asked for once the node is drained")
    wait_until(agent.exited, timeout=60, what="the agent gone with its node's reboot")
    agent.start_again()
    done = wait_until(lambda: mark("reboot done (new boot id)", (a := answer(chain.core, sick)) is not None
                                   and a.reason == "Done" and a), timeout=60, what="the agent proving the reboot")
    assert "rebooted: boot id" in done.message, done.message
    # The GPU error stays (the test keeps the condition): after the reboot's wait, the NodeClaim is deleted.
    state = wait_until(lambda: mark("replace asked", (s := ladder(chain.core, sick)) and s["action"] == "replace"
                                    and s), timeout=200, what="the replace step", interval=2.0)
    assert state["history"][0]["result"].startswith("GPUFatalError=True"), state
    wait_until(lambda: mark("old node gone", chain.gone(sick)), timeout=NODE_GONE, what=f"Karpenter removing {sick}")
    watch.stop()
    final = chain.placed("train", 2)
    assert sick not in final.values() and set(final.values()) <= set(after.values()) | set(watch.added)
    watch.assert_held(may_remove={sick})
    print(f"\n{sick} (NodeClaim {claim}) with a fatal GPU error; seconds after the condition:")
    for what, t in sorted(marks.items(), key=lambda kv: kv[1]):
        print(f"  {t:6.1f}  {what}")
    print(f"pods now on {sorted(set(final.values()))}")
    wait_until(lambda: r.metric("nodemedic_repair_steps_finished_total", action="replace", result="repaired") == 1,
               timeout=30, what="the replace counted as the repair")
    assert r.metric("nodemedic_repair_steps_finished_total", action="reboot", result="persisted") == 1


def test_a_dark_karpenter_node_is_replaced_through_its_nodeclaim_and_its_pods_run_elsewhere_without_a_person(
    chain: Chain, processes: list,
) -> None:
    # A pool whose budget lets Karpenter take none of its nodes by itself (its own node repair is off): what frees
    # the pods is nodemedic deleting the dark node's NodeClaim, after darkNodes.replaceAfter.
    assert chain.cluster.owned is not None
    karpenter.apply_node_pools(chain.cluster.owned.api(), (karpenter.NodePool(name=chain.pool, budget_nodes="0"),))
    chain.deploy("web", 2, "1500m")
    before = chain.placed("web", 2)
    (dark,) = set(before.values())  # 3 CPU of requests: one 4-CPU node
    claim = next(o.name for o in chain.core.read_node(dark).metadata.owner_references or []
                 if o.kind == "NodeClaim")
    r = chain.remediator(f"""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
evictor: {{nodeFit: true, namespaces: {{include: [{chain.namespace}]}}}}
repair: {{maxUnhealthyPercent: 100}}
darkNodes: {{replaceAfter: 1m}}
autoscaler: {SHIPPED_AUTOSCALER}
""", processes)
    t0 = time.monotonic()
    mark = Moments(t0)
    marks = mark.at

    def ready() -> str:
        return next((c.status for c in chain.core.read_node_status(dark).status.conditions or []
                     if c.type == "Ready"), "absent")

    # Dark: its Lease renewals and status never reach the API server (hack/kcp/partition.py), as for a dead machine.
    api = chain.cluster.owned.api()
    partition.install(api)
    partition.cut(api, dark)
    wait_until(lambda: mark("Ready=Unknown", ready() == "Unknown"), timeout=120, what=f"{dark} Ready=Unknown")
    seen = wait_until(lambda: mark("remediator: dark", next((n for n in (r.plan().get("darkNodes") or {}).get(
        "nodes", []) if n["node"] == dark and n["seen"] == "dark"), None)), timeout=60, what="the node dark")
    assert f"its NodeClaim {claim} is deleted at" in seen["why"], seen
    event = wait_until(lambda: mark("NodeClaim deleted", [e for e in nodemedic_events(
        chain.core, "default", "NodemedicDarkNodeReplaced") if e.involved_object.name == dark]),
        timeout=120, what="the NodeClaim deleted (NodemedicDarkNodeReplaced)")
    wait_until(lambda: mark("node gone", chain.gone(dark)), timeout=NODE_GONE, what=f"Karpenter removing {dark}")
    partition.mend(api, dark)
    after = chain.placed("web", 2, timeout=180)
    mark("pods Running elsewhere", True)
    assert dark not in after.values(), after
    assert r.metric("nodemedic_fences_total", evidence="nodeclaim") == 1
    assert r.metric("nodemedic_fences_total", evidence="person") == 0
    print(f"\n{dark} (NodeClaim {claim}) dark; seconds after:\n" + "\n".join(
        f"  {t:6.1f}  {what}" for what, t in sorted(marks.items(), key=lambda kv: kv[1])))
    print(f"Event: {event[0].message}\npods now on {sorted(set(after.values()))}")
