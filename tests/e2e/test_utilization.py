"""LowNodeUtilization and HighNodeUtilization against the real control plane: the remediator evicts, the real
kube-scheduler places the replacements, and the cluster ends where the strategy meant it to."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import (
    REMEDIATOR,
    cordon,
    deployment,
    place_on_first,
    start_remediator,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

CONSOLIDATING = "nodemedic.io/consolidating"


def policy(namespace: str, strategy: str) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
evictor:
  namespaces: {{include: [{namespace}]}}
strategies:
{strategy}
limits: {{ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}}
"""


def requested_cpu(core: client.CoreV1Api, node: str) -> int:
    """Millicores requested by the live pods on `node` (what both the scheduler and the strategies count)."""
    total = 0
    for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node}").items:
        if p.metadata.deletion_timestamp is not None or p.status.phase in ("Succeeded", "Failed"):
            continue
        for c in p.spec.containers:
            cpu = ((c.resources and c.resources.requests) or {}).get("cpu", "0")
            total += int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
    return total


def placement(core: client.CoreV1Api, namespace: str, app: str) -> dict[str, int]:
    """node -> number of live pods of `app` on it."""
    out: dict[str, int] = {}
    for p in core.list_namespaced_pod(namespace, label_selector=f"app={app}").items:
        if p.metadata.deletion_timestamp is None and p.spec.node_name:
            out[p.spec.node_name] = out.get(p.spec.node_name, 0) + 1
    return out


def test_low_node_utilization_moves_pods_off_the_hot_node_onto_the_underutilized_ones(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(3)
    hot, cold = pool[0], pool[1:]
    # 8 x 900m on one 7910m node: 91 % cpu; the other two are empty.
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("web", 8, pool,
                                                                                                cpu="900m")),
                                        wait_running(core, namespace, "web", 8)))
    assert placement(core, namespace, "web") == {hot: 8}
    strategy = """- name: LowNodeUtilization
  args:
    thresholds: {cpu: 20}
    targetThresholds: {cpu: 50}"""
    # `plan` first: the same four moves, and nothing written.
    (tmp_path / "plan-policy.yaml").write_text(policy(namespace, strategy))
    before = {p.metadata.name: p.metadata.resource_version for p in core.list_namespaced_pod(namespace).items}
    out = subprocess.run([*REMEDIATOR, "plan", "--policy", str(tmp_path / "plan-policy.yaml"), "--kubeconfig",
                          str(cluster.kubeconfig), "--json"], capture_output=True, text=True, timeout=60, check=True)
    planned = json.loads(out.stdout)["evictions"]
    assert [(e["strategy"], e["node"]) for e in planned] == [("LowNodeUtilization", hot)] * 4, planned
    assert all(any(n in e["reason"] for n in cold) for e in planned), "each move names the node it counts on"
    assert {p.metadata.name: p.metadata.resource_version for p in core.list_namespaced_pod(namespace).items} == before

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, strategy), name="lnu",
                         lease_namespace=namespace)
    processes.append(r)

    # Down to target (<= 50 % = 3955m): four pods must go; kube-scheduler puts them on the cold nodes.
    final = wait_until(lambda: (p := placement(core, namespace, "web")) and sum(p.values()) == 8
                       and p.get(hot) == 4 and len(wait_running(core, namespace, "web", 8)) == 8 and p,
                       timeout=90, what="web relieved to 4 pods on the hot node, 8 running")
    assert set(final) == set(pool), final
    assert requested_cpu(core, hot) * 100 / 7910 <= 50
    for node in cold:
        assert requested_cpu(core, node) * 100 / 7910 <= 50, "a destination must stay at or under its target"
    # Balanced now: further cycles plan nothing, and exactly four evictions were made.
    wait_until(lambda: r.plan()["evictions"] == [] and r.metric("nodemedic_evictions_total",
                                                                 outcome="evicted") == 4,
               timeout=30, what="a quiet plan after four evictions")
    events = [e for e in core.list_namespaced_event(namespace, field_selector="reason=NodemedicEvicted").items
              if e.reporting_component == "nodemedic-remediator"]
    assert len(events) == 4 and all("LowNodeUtilization" in e.message for e in events), [e.message for e in events]


MOST_ALLOCATED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      disabled: [{{name: NodeResourcesBalancedAllocation}}, {{name: PodTopologySpread}}]
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{{name: cpu, weight: 1}}, {{name: memory, weight: 1}}]
"""


@pytest.fixture
def bin_packing_cluster() -> Iterator[LocalCluster]:
    """Three kwok nodes and a kube-scheduler that packs (MostAllocated), as HighNodeUtilization needs."""
    with _started(f"pytest-{os.getpid()}-binpack-{secrets.token_hex(2)}", 3,
                  scheduler_config=lambda kubeconfig: MOST_ALLOCATED.format(kubeconfig=kubeconfig)) as started:
        yield started


def test_high_node_utilization_empties_an_underutilized_node_and_taints_it(
    bin_packing_cluster: LocalCluster, tmp_path: Path, processes: list,
) -> None:
    c = bin_packing_cluster
    core, apps = client.CoreV1Api(c.api), client.AppsV1Api(c.api)
    namespace = f"hnu-{secrets.token_hex(3)}"
    core.create_namespace({"metadata": {"name": namespace}})
    wait_until(lambda: core.list_namespaced_service_account(namespace).items, timeout=30, what="default SA")
    nodes = sorted(n.metadata.name for n in core.list_node().items)
    idle, busy, empty = nodes
    apps.create_namespaced_daemon_set(namespace, {
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {"containers": [{"name": "a", "image": "registry.invalid/agent:1",
                                     "resources": {"requests": {"cpu": "50m"}}}]}}}})
    wait_running(core, namespace, "agent", 3)
    # busy: 7 x 900m (80 %); idle: 1 x 900m (11 %); empty: only the DaemonSet pod.
    cordon(core, [idle, empty], True)
    apps.create_namespaced_deployment(namespace, deployment("busy", 7, nodes, cpu="900m"))
    wait_running(core, namespace, "busy", 7)
    cordon(core, [idle, empty], False)
    cordon(core, [busy, empty], True)
    apps.create_namespaced_deployment(namespace, deployment("idle", 1, nodes, cpu="900m"))
    wait_running(core, namespace, "idle", 1)
    cordon(core, [busy, empty], False)
    assert placement(core, namespace, "busy") == {busy: 7} and placement(core, namespace, "idle") == {idle: 1}

    strategy = """- name: HighNodeUtilization
  args:
    thresholds: {cpu: 20}"""
    r = start_remediator(tmp_path, c.kubeconfig, policy(namespace, strategy), name="hnu", lease_namespace=namespace)
    processes.append(r)

    wait_until(lambda: CONSOLIDATING in {t.key for t in core.read_node(idle).spec.taints or []}, timeout=30,
               what=f"{CONSOLIDATING} on {idle}")
    # The replacement runs on the fullest node that has room (MostAllocated), not on the empty one.
    wait_until(lambda: placement(core, namespace, "idle") == {busy: 1} and wait_running(core, namespace, "idle", 1),
               timeout=60, what=f"the idle pod's replacement running on {busy}")
    left = [p for p in core.list_namespaced_pod(namespace, field_selector=f"spec.nodeName={idle}").items
            if p.metadata.deletion_timestamp is None]
    assert [p.metadata.owner_references[0].kind for p in left] == ["DaemonSet"], "only the DaemonSet pod stays"
    owned = json.loads(core.read_node(idle).metadata.annotations["nodemedic.io/owned-taints"])
    assert [(o["key"], o["effect"], o["rules"]) for o in owned] == [
        (CONSOLIDATING, "NoSchedule", ["strategy:HighNodeUtilization"])]
    assert not core.read_node(empty).spec.taints, "an already empty node takes no consolidation slot"
    wait_until(lambda: r.plan()["evictions"] == [] and r.metric("nodemedic_evictions_total",
                                                                 outcome="evicted") == 1,
               timeout=30, what="a quiet plan after one eviction")
