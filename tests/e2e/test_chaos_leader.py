"""Chaos 2: the leading remediator is SIGKILLed in the middle of a multi-pod remediation.

Eight pods of one Deployment run on kwok-node-0 behind a PDB that allows two disruptions at a time, so moving them
takes several evictions spread over time. `plan` is asked first what it would do. Two remediators start (r1 leads,
r2 stands by), the node's KernelDeadlock condition holds, r1 taints the node and evicts two pods, whose replacements
stay Pending while kube-scheduler is stopped: the PDB holds r1 in the middle of the remediation, and it is killed
there with SIGKILL (no Lease release). kube-scheduler starts again. Then:
- r2 leads within the Lease duration of the kill (it counts the lease from its read before r1's last renewal
  landed, and wakes when the lease runs out: remediator/control/leader.py);
- no pod is evicted twice (the API server's audit log: granted evictions per pod);
- every evicted pod is one `plan` named before the kill (to evict now, or deferred behind the PDB).
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client

from tests.e2e.audit_log import audit_calls, evictions, remediator_calls
from tests.e2e.chaos import audited_cluster
from tests.e2e.remediator_harness import (
    REMEDIATOR,
    cordon,
    deployment,
    set_condition,
    start_remediator,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

SICK, OTHERS = "kwok-node-0", ["kwok-node-1", "kwok-node-2", "kwok-node-3"]
PODS = 8
LEASE_DURATION = 6.0  # what start_remediator passes (--lease-duration 6 --renew-deadline 4 --retry-period 1)
RETRY_PERIOD = 1.0
# The standby takes the Lease at its first try after the Lease expired: at most LEASE_DURATION after r1's last renewal
# (which came before the kill) plus one RETRY_PERIOD, seen by a probe polling every 0.05 s and a metrics scrape.
TAKEOVER_BOUND = LEASE_DURATION + RETRY_PERIOD + 0.5
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
limits: {ownerCooldown: 0s, maxNoOfPodsToEvictPerNode: 50, maxNoOfPodsToEvictTotal: 100}
eviction: {retryDeadline: 300s, initialBackoff: 200ms, maxBackoff: 1s}
safety: {maxTaintedNodes: 10, maxTaintedNodesPercent: 100}
"""


def test_a_killed_leader_is_replaced_within_the_lease_and_no_pod_is_evicted_twice_or_outside_the_plan(
        tmp_path: Path, figures: object) -> None:
    with audited_cluster(4) as cluster:
        core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
        core.create_namespace({"metadata": {"name": "chaos"}})
        wait_until(lambda: core.list_namespaced_service_account("chaos").items, timeout=30, what="chaos/default SA")
        cordon(core, OTHERS, True)
        apps.create_namespaced_deployment("chaos", deployment("web", PODS, [SICK, *OTHERS]))
        wait_running(core, "chaos", "web", PODS)
        cordon(core, OTHERS, False)
        policy_api = client.PolicyV1Api(cluster.api)
        policy_api.create_namespaced_pod_disruption_budget("chaos", {
            "metadata": {"name": "web"}, "spec": {"maxUnavailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
        wait_until(lambda: policy_api.read_namespaced_pod_disruption_budget(
            "web", "chaos").status.disruptions_allowed == 2, timeout=30, what="the PDB to allow two disruptions")

        set_condition(core, SICK, "KernelDeadlock", "True", reason="TaskHung")
        policy = tmp_path / "policy.yaml"
        policy.write_text(POLICY)
        at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")  # past `for`
        out = subprocess.run([*REMEDIATOR, "plan", "--policy", str(policy), "--kubeconfig", str(cluster.kubeconfig),
                              "--json", "--now", at], capture_output=True, text=True, check=True, timeout=60).stdout
        plan = json.loads(out)
        predicted = {e["name"] for e in plan["evictions"] + plan["deferred"] if e["node"] == SICK}
        figures("pods plan named before the kill (now + deferred behind the PDB)", len(predicted))
        assert len(predicted) == PODS, plan

        r1 = start_remediator(tmp_path, cluster.kubeconfig, POLICY, name="r1", lease_namespace="chaos",
                              policy_path=policy)
        r2 = None
        try:
            wait_until(lambda: r1.metric("nodemedic_leader") == 1, timeout=30, what="r1 leads")
            # Replacements stay Pending until r1 is dead: its first two evictions use up the PDB, which then holds
            # r1 in the middle of the remediation whatever the machine's load (a kill timed from outside raced r1,
            # which under load had finished all 8 first).
            cluster.owned.stop_component("kube-scheduler")
            r2 = start_remediator(tmp_path, cluster.kubeconfig, POLICY, name="r2", lease_namespace="chaos",
                                  policy_path=policy)
            assert r2.metric("nodemedic_leader") == 0
            wait_until(lambda: r1.metric("nodemedic_evictions_total", outcome="evicted") >= 2, timeout=60,
                       what="r1's second eviction", interval=0.05)
            wait_until(lambda: policy_api.read_namespaced_pod_disruption_budget(
                "web", "chaos").status.disruptions_allowed == 0, timeout=30, what="the PDB used up by r1")
            r1.kill()
            t_kill = time.monotonic()
            done_by_r1 = len(evictions(remediator_calls(audit_calls(cluster))))
            figures("evictions done by r1 before SIGKILL", done_by_r1)
            assert done_by_r1 < PODS, "r1 finished before it was killed: no remediation was interrupted"
            cluster.owned.start_component("kube-scheduler")  # the replacements run now: r2 has the rest to do

            wait_until(lambda: r2.metric("nodemedic_leader") == 1, timeout=LEASE_DURATION + 10,
                       what="r2 to lead", interval=0.05)
            takeover = time.monotonic() - t_kill
            figures("standby leads after the kill", takeover, "s")
            figures("lease duration", LEASE_DURATION, "s")

            wait_until(lambda: not set(wait_running(core, "chaos", "web", PODS, timeout=60).values()) & {SICK},
                       timeout=120, what="every pod off the sick node")
            assert "nodemedic.io/kernel-deadlock" in taint_keys(core, SICK)
            names = [c.name for c in evictions(remediator_calls(audit_calls(cluster)))]
            twice = sorted({n for n in names if names.count(n) > 1})
            outside = sorted(set(names) - predicted)
            figures("evictions in all", len(names))
            figures("evictions done by r2", r2.metric("nodemedic_evictions_total", outcome="evicted"))
            figures("pods evicted twice", len(twice))
            figures("evictions outside the plan", len(outside))

            assert takeover <= TAKEOVER_BOUND, takeover
            assert twice == [] and outside == [], (twice, outside)
            assert set(names) == predicted
        finally:
            r1.stop()
            if r2 is not None:
                r2.stop()
