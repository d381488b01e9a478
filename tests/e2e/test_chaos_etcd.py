"""Chaos 3: etcd restarted under a running remediator, alone and with the API server.

(a) etcd alone, down 10 s: the API server's etcd client resumes its own watches, so the remediator's watches ride
    it out: no 410, no LIST (both counted and reported).
(b) etcd restarted with the API server (the control-plane host restarting): the new API server builds its watch
    cache from a fresh list, so a watch resuming from an older resourceVersion is answered 410 Gone. Each of the
    remediator's informers must relist exactly once per 410 (never in a loop) and resume watching.
After each, the remediator still acts on what the watches bring: a node's new condition becomes a taint, and a new
pod on that node is evicted. LISTs are counted per resource in the API server's audit log.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.audit_log import audit_calls, evictions, remediator_calls
from tests.e2e.chaos import Figures, audited_cluster
from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import set_condition, start_remediator, taint_keys
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

TAINT = "nodemedic.io/kernel-deadlock"
WATCHED = ("nodes", "pods", "poddisruptionbudgets", "priorityclasses")
POLICY = """
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 1s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
  evict: true
  recoverAfter: 10m
evictor:
  namespaces: {include: [chaos]}
limits: {ownerCooldown: 0s}
safety: {maxTaintedNodes: 10, maxTaintedNodesPercent: 100}
"""


def late_pod(cluster: LocalCluster, name: str, node: str) -> None:
    """A pod bound to `node` directly (the scheduler would keep it off the tainted node), owned so that it may be
    evicted: by a ReplicaSet that selects none of its pods, so that nothing else deletes or replaces it."""
    owner = client.AppsV1Api(cluster.api).create_namespaced_replica_set("chaos", {
        "metadata": {"name": f"{name}-owner"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"none": "x"}},
                 "template": {"metadata": {"labels": {"none": "x"}},
                              "spec": {"containers": [{"name": "c", "image": "registry.invalid/c:1"}]}}}})
    client.CoreV1Api(cluster.api).create_namespaced_pod("chaos", {
        "metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{name}-owner", "uid": owner.metadata.uid}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.invalid/c:1"}]}})


def test_after_an_etcd_restart_each_expired_watch_relists_once_and_resumes(tmp_path: Path, figures: Figures) -> None:
    with audited_cluster(3) as cluster:  # kwok-node-2 stays healthy: the evicted pods must fit somewhere
        assert cluster.owned is not None
        plane = cluster.owned
        core = client.CoreV1Api(cluster.api)
        core.create_namespace({"metadata": {"name": "chaos"}})
        wait_until(lambda: core.list_namespaced_service_account("chaos").items, timeout=30, what="chaos/default SA")
        r = start_remediator(tmp_path, cluster.kubeconfig, POLICY, name="r1", lease_namespace="chaos")
        try:
            wait_until(lambda: r.metric("nodemedic_leader") == 1, timeout=30, what="r1 leads")
            for phase, components, node in (("a", ["etcd"], "kwok-node-0"),
                                            ("b", ["kube-apiserver", "etcd"], "kwok-node-1")):
                relisted_before = r.log().count('"watch expired, relisting"')
                t_stop = time.time()
                for component in components:
                    plane.stop_component(component)
                wait_until(lambda t=t_stop: time.time() - t >= 10, timeout=15, what="10 s down", interval=0.5)
                assert r.proc.poll() is None, "the remediator died while the control plane was away"
                for component in reversed(components):
                    plane.start_component(component, timeout=120)
                t_up = time.time()
                what = " and ".join(components)
                figures(f"({phase}) {what} down", round(t_up - t_stop, 1), "s")

                # Resumed: a condition set now becomes a taint, and a pod placed on the node now is evicted.
                set_condition(core, node, "KernelDeadlock", "True", reason="TaskHung")
                wait_until(lambda n=node: TAINT in taint_keys(core, n), timeout=60, what="the taint after the restart")
                figures(f"({phase}) taint after the control plane came back", time.time() - t_up, "s")
                late_pod(cluster, f"late-{phase}", node)
                wait_until(lambda p=f"late-{phase}", t=t_up: p in [
                    c.name for c in evictions(remediator_calls(audit_calls(cluster, t)))],
                           timeout=60, what="the new pod's eviction (the pod watch resumed)")

                calls = remediator_calls(audit_calls(cluster, since=t_stop))
                lists = Counter(c.resource for c in calls if c.verb == "list")
                relists = r.log().count('"watch expired, relisting"') - relisted_before
                figures(f"({phase}) watches answered 410 Gone", relists)
                figures(f"({phase}) LISTs after the restart", " ".join(f"{res}={lists.get(res, 0)}" for res in WATCHED))
                assert all(lists.get(res, 0) <= 1 for res in WATCHED), lists
                # Every LIST but the Migrations': the remediator lists those once at its first cycle
                # (control/migrations.py), which here may come during the outage, and that is no relist of a watch.
                watched = sum(n for res, n in lists.items() if res != "migrations")
                assert lists.get("migrations", 0) <= 1, lists
                assert watched == relists, f"{lists} LISTs for {relists} expired watches"
                if phase == "b":
                    assert relists >= 1, "no watch was told 410 Gone: the scenario did not exercise the relist"
        finally:
            r.stop()
