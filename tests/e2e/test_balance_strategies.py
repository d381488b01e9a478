"""RemovePodsViolatingTopologySpreadConstraint and RemoveDuplicates against the real control plane: the
remediator evicts, the real kube-scheduler places the replacements, and the workload ends within maxSkew across
zones, or without two replicas on one node while another node could take one."""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    deployment,
    events_once,
    place_on_first,
    pods_of,
    start_remediator,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ZONE = "topology.kubernetes.io/zone"
TAG = "nodemedic.io/e2e-spread"


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


def zone_spread_deployment(name: str, replicas: int, tag: str) -> dict:
    """`replicas` pods on the nodes labelled `TAG=tag`, spread over zones with maxSkew 1 (DoNotSchedule)."""
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1",
                                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                         "nodeSelector": {TAG: tag},
                         "topologySpreadConstraints": [{
                             "maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                             "labelSelector": {"matchLabels": labels}, "matchLabelKeys": ["pod-template-hash"]}]}}}}


def per_zone(core: client.CoreV1Api, namespace: str, app: str) -> Counter[str]:
    """zone -> Running pods of `app` there."""
    zones = {n.metadata.name: n.metadata.labels.get(ZONE, "") for n in core.list_node().items}
    return Counter(zones[p.spec.node_name] for p in pods_of(core, namespace, app) if p.status.phase == "Running")


def test_topology_spread_evens_out_a_zone_that_came_back(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    # The zone article's story: zone-c has no node while the workload scales to 6 (3 in a, 3 in b, as maxSkew
    # allows over the two zones there are), then zone-c's node comes back: skew 3 over three zones.
    tag = secrets.token_hex(3)
    pool = node_pool(2, labels={TAG: tag})  # zone-a, zone-b
    apps.create_namespaced_deployment(namespace, zone_spread_deployment("web", 6, tag))
    wait_running(core, namespace, "web", 6)
    assert per_zone(core, namespace, "web") == Counter({"zone-a": 3, "zone-b": 3})
    back = node_pool(1, labels={TAG: tag, ZONE: "zone-c"})
    assert core.read_node(back[0]).metadata.labels[ZONE] == "zone-c" and back[0] not in pool

    strategy = "- name: RemovePodsViolatingTopologySpreadConstraint\n  args: {constraints: [DoNotSchedule]}"
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, strategy), name="tsc",
                         lease_namespace=namespace)
    processes.append(r)

    # kube-scheduler (its own PodTopologySpread filter) places the replacements: 2 per zone.
    wait_until(lambda: len(wait_running(core, namespace, "web", 6)) == 6
               and per_zone(core, namespace, "web") == Counter({"zone-a": 2, "zone-b": 2, "zone-c": 2}),
               timeout=90, what="web spread 2/2/2 over the three zones")
    wait_until(lambda: r.plan()["evictions"] == [] and r.metric("nodemedic_evictions_total",
                                                                 outcome="evicted") == 2,
               timeout=30, what="a quiet plan after two evictions")
    counts = per_zone(core, namespace, "web")
    assert max(counts.values()) - min(counts.values()) <= 1
    events = events_once(core, namespace, "NodemedicEvicted", 2)
    assert len(events) == 2 and all("RemovePodsViolatingTopologySpreadConstraint" in e.message for e in events), \
        [e.message for e in events]


def test_remove_duplicates_spreads_replicas_stacked_on_one_node(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(3)
    place_on_first(core, pool, lambda: (apps.create_namespaced_deployment(namespace, deployment("dup", 3, pool)),
                                        wait_running(core, namespace, "dup", 3)))
    assert Counter(wait_running(core, namespace, "dup", 3).values()) == Counter({pool[0]: 3})

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace, "- name: RemoveDuplicates"),
                         name="dup", lease_namespace=namespace)
    processes.append(r)

    # 3 replicas over 3 nodes that can take them: at most one per node once kube-scheduler placed the two evicted.
    wait_until(lambda: (on := wait_running(core, namespace, "dup", 3)) and sorted(Counter(on.values()).values())
               == [1, 1, 1], timeout=90, what="one dup replica per node")
    wait_until(lambda: r.plan()["evictions"] == [] and r.metric("nodemedic_evictions_total",
                                                                 outcome="evicted") == 2,
               timeout=30, what="a quiet plan after two evictions")
    assert set(wait_running(core, namespace, "dup", 3).values()) == set(pool)
    events = events_once(core, namespace, "NodemedicEvicted", 2)
    assert len(events) == 2 and all("RemoveDuplicates" in e.message for e in events), [e.message for e in events]
