"""RemovePodsHavingTooManyRestarts against the real control plane: a Deployment whose two pods on one node
crash-loop while its pods on other nodes are healthy. The remediator evicts the two (descheduler's behaviour) and
names the node (DS-RST-1): a NodemedicCrashLoopNode Event on the Node and the nodemedic_crash_loop_node gauge."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    cordon,
    deployment,
    nodemedic_events,
    pods_of,
    running_on,
    start_remediator,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def policy(namespace: str) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
evictor:
  namespaces: {{include: [{namespace}]}}
strategies:
- name: RemovePodsHavingTooManyRestarts
  args: {{podRestartThreshold: 100, states: [CrashLoopBackOff]}}
limits: {{ownerCooldown: 0s}}
"""


def crash_loop(core: client.CoreV1Api, namespace: str, pod: str, restarts: int) -> None:
    """What the kubelet would write for a container that keeps crashing (kwok leaves a Running pod's status be)."""
    core.patch_namespaced_pod_status(pod, namespace, {"status": {"containerStatuses": [{
        "name": "app", "image": "registry.invalid/app:1", "imageID": "", "ready": False, "started": False,
        "restartCount": restarts, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}})


def on_node(core: client.CoreV1Api, node: str) -> list[client.CoreV1Event]:
    return [e for e in nodemedic_events(core, "default", "NodemedicCrashLoopNode") if e.involved_object.name == node]


def test_a_node_holding_a_healthy_workloads_only_crashing_pods_is_named_and_its_pods_evicted(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str,
    node_pool: Callable[..., list[str]], tmp_path: Path, processes: list,
) -> None:
    pool = node_pool(3)
    bad = pool[0]
    cordon(core, pool[1:], True)  # the first two replicas land on the bad node
    apps.create_namespaced_deployment(namespace, deployment("web", 2, pool))
    wait_running(core, namespace, "web", 2)
    cordon(core, pool[1:], False)
    cordon(core, [bad], True)  # the next two elsewhere
    apps.patch_namespaced_deployment_scale("web", namespace, {"spec": {"replicas": 4}})
    placed = wait_running(core, namespace, "web", 4)
    cordon(core, [bad], False)
    crashing = sorted(p for p, n in placed.items() if n == bad)
    assert len(crashing) == 2 and all(n != bad for p, n in placed.items() if p not in crashing), placed
    for p in crashing:
        crash_loop(core, namespace, p, 150)

    owner = f"ReplicaSet/{pods_of(core, namespace, 'web')[0].metadata.owner_references[0].name}"

    # A dry run names the node in the gauge (an observation) and writes nothing: no Event, no eviction.
    dry = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace), name="crashloop-dry",
                           lease_namespace=namespace, extra=["--dry-run"])
    processes.append(dry)
    wait_until(lambda: dry.metric("nodemedic_crash_loop_node", node=bad, namespace=namespace, owner=owner) == 2.0,
               timeout=30, what=f"nodemedic_crash_loop_node{{node={bad}}} = 2 in the dry run")
    assert {e["name"] for e in dry.plan()["evictions"]} == set(crashing)
    assert dry.plan()["crashLoopNodes"] == [{"node": bad, "namespace": namespace, "owner": owner,
                                             "pods": crashing, "healthyElsewhere": 2}]
    assert not on_node(core, bad), "the dry run wrote an Event"
    assert dry.metric("nodemedic_crash_loop_node", node=pool[1]) == 0.0
    dry.stop()

    r = start_remediator(tmp_path, cluster.kubeconfig, policy(namespace), name="crashloop",
                         lease_namespace=namespace)
    processes.append(r)
    events = wait_until(lambda: on_node(core, bad), timeout=30, what=f"a NodemedicCrashLoopNode Event on {bad}")
    assert events[0].type == "Warning"
    assert events[0].message == (f"2 pod(s) of {namespace}/{owner} restart on {bad} while 2 on other nodes "
                                 f"are healthy")
    wait_until(lambda: {e.involved_object.name for e in nodemedic_events(core, namespace, "NodemedicEvicted")}
               >= set(crashing), timeout=30, what="both crashing pods evicted")
    wait_until(lambda: not set(crashing) & {p.metadata.name for p in pods_of(core, namespace, "web")},
               timeout=60, what="the crashing pods gone")
    # The replacements do not crash: the finding clears, and so does the gauge.
    wait_until(lambda: r.metric("nodemedic_crash_loop_node", node=bad) == 0.0, timeout=30,
               what="the crash-loop gauge cleared once the crashing pods are gone")
    healthy = [p for p in placed if p not in crashing]
    assert set(healthy) <= set(running_on(core, namespace, "web")), "a healthy replica was evicted"
    assert len(on_node(core, bad)) == 1, "announced more than once"
