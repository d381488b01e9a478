"""Dark kwok nodes and a real remediator: three of five nodes going dark at once are a partition, not three dead
machines: nothing is fenced even where a person confirmed, and the alert fires in a real Prometheus; one dark node
a person confirms off is fenced, and unfenced once it is back and its agent reports. A node goes dark here the way
it does for the control plane: its Lease renewals and status never reach the API server (hack/kcp/partition.py), so
the node lifecycle controller marks it Ready=Unknown after the grace period."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp import partition
from nodemedic_common.fence_contract import CONFIRM_ANNOTATION, OUT_OF_SERVICE_KEY
from tests.e2e.conftest import LocalCluster
from tests.e2e.remediator_harness import (
    alerting_prometheus,
    nodemedic_events,
    pool_scope,
    start_remediator,
    taint_keys,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


# The other tests' remediators share this cluster and most plan for every node: the test's nodes carry the default
# safety.excludeLabel, so none of them fences a node a person confirmed here; this test's remediator excludes by
# another label and acts on them.
ISOLATED = {"nodemedic.io/exclude": "true"}


def policy(pool: list[str]) -> str:
    return f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
repair: {{maxUnhealthyPercent: 100}}
darkNodes: {{agentSilence: 30s, replaceAfter: null}}
safety: {{excludeLabel: e2e.nodemedic.io/not-this-test}}
{pool_scope(pool)}
"""


def ready(core: client.CoreV1Api, node: str) -> str:
    return next((c.status for c in core.read_node_status(node).status.conditions or [] if c.type == "Ready"), "absent")


def partitioned(cluster: LocalCluster) -> partition.Api:
    assert cluster.owned is not None, "a partition needs the control plane these tests start (its admin client)"
    api = cluster.owned.api()
    partition.install(api)
    return api


def test_three_of_five_nodes_dark_at_once_are_a_partition_nothing_is_fenced_and_the_alert_fires(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(5, labels=ISOLATED)
    dark = pool[:3]
    api = partitioned(cluster)
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(pool), name="r-dark", lease_namespace=namespace)
    processes.append(r)
    server = alerting_prometheus(tmp_path, r)
    processes.append(server)
    t0 = time.monotonic()
    for n in dark:
        partition.cut(api, n)
    wait_until(lambda: all(ready(core, n) == "Unknown" for n in dark), timeout=120,
               what=f"{dark} Ready=Unknown (node-monitor-grace-period 40 s)")
    t_unknown = time.monotonic() - t0
    halted = wait_until(lambda: (r.plan().get("darkNodes") or {}).get("halted"), timeout=60,
                        what="the remediator's partition halt")
    assert list(halted) == ["cluster"] and halted["cluster"].startswith("3 of 5 nodes in cluster are dark"), halted
    # People confirm every one of them off: still, a partition is not three dead machines.
    for n in dark:
        core.patch_node(n, {"metadata": {"annotations": {CONFIRM_ANNOTATION: time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + " by e2e"}}})
    firing = wait_until(lambda: [a["labels"] for a in server.alerts()
                                 if a["labels"]["alertname"] == "NodemedicManyNodesDark"], timeout=90,
                        what="NodemedicManyNodesDark firing in Prometheus", interval=1.0)
    assert firing == [{"alertname": "NodemedicManyNodesDark", "group": "cluster", "severity": "critical"}], firing
    plan = r.plan()["darkNodes"]
    assert plan["fence"] == [] and sorted(n["node"] for n in plan["nodes"] if n.get("halted")) == dark, plan
    assert not any(OUT_OF_SERVICE_KEY in taint_keys(core, n) for n in pool)
    assert r.metric("nodemedic_fences_total") == 0
    for n in dark:
        partition.mend(api, n)
    events = wait_until(lambda: (e := [e for e in nodemedic_events(core, "default", "NodemedicManyNodesDark")
                                       if e.involved_object.name in dark]) and len(e) == 3 and e, timeout=30,
                        what="a NodemedicManyNodesDark Event on each dark node")
    print(f"\n3 of 5 nodes dark: Ready=Unknown {t_unknown:.0f} s after; alert {firing[0]}\nEvent: {events[0].message}")
    for n in plan["nodes"]:
        print(f"  {n['node']}: {n['seen']}: {n['why']}")


def test_a_dark_node_with_a_persons_confirmation_is_fenced_and_unfenced_when_it_returns(
        cluster: LocalCluster, core: client.CoreV1Api, namespace: str, node_pool: Callable[..., list[str]],
        tmp_path: Path, processes: list) -> None:
    pool = node_pool(5, labels=ISOLATED)
    node = pool[0]
    api = partitioned(cluster)
    r = start_remediator(tmp_path, cluster.kubeconfig, policy(pool), name="r-fence", lease_namespace=namespace)
    processes.append(r)
    partition.cut(api, node)
    wait_until(lambda: ready(core, node) == "Unknown", timeout=120, what=f"{node} Ready=Unknown")
    wait_until(lambda: any(n["node"] == node and n.get("needsEvidence")
                           for n in (r.plan().get("darkNodes") or {}).get("nodes", [])),
               timeout=60, what="the node dark, waiting for evidence")
    assert OUT_OF_SERVICE_KEY not in taint_keys(core, node)
    core.patch_node(node, {"metadata": {"annotations": {CONFIRM_ANNOTATION: time.strftime(
        "%Y-%m-%dT%H:%M:%SZ", time.gmtime()) + " by e2e"}}})
    wait_until(lambda: OUT_OF_SERVICE_KEY in taint_keys(core, node), timeout=30, what="the out-of-service taint")
    # The partition heals: Ready again. No agent runs on a kwok node, so nothing reports for it: the taint stays.
    partition.mend(api, node)
    wait_until(lambda: ready(core, node) == "True", timeout=60, what=f"{node} Ready again")
    wait_until(lambda: any(n["node"] == node and n["seen"] == "returning"
                           for n in (r.plan().get("darkNodes") or {}).get("nodes", [])),
               timeout=30, what="the node returning, its agent not reported")
    assert OUT_OF_SERVICE_KEY in taint_keys(core, node)
    # Its agent reports (a condition written with a fresh heartbeat, as the agent's reporter writes them), in a later
    # second than the node's return: API times are whole seconds, and a write in the same second may have come first.
    back = next(c.last_transition_time for c in core.read_node_status(node).status.conditions if c.type == "Ready")
    wait_until(lambda: time.time() >= back.timestamp() + 1, timeout=5, what="a second after the node's return")
    # Stamped by the clock the wait read: time.gmtime() alone reads C's time(), the kernel's coarse clock, which
    # still says the second before for a few milliseconds after time.time() has passed it.
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time()))
    core.patch_node_status(node, {"status": {"conditions": [{
        "type": "KernelDeadlock", "status": "False", "reason": "KernelHasNoDeadlock", "message": "e2e agent",
        "lastTransitionTime": now, "lastHeartbeatTime": now}]}})
    try:
        wait_until(lambda: OUT_OF_SERVICE_KEY not in taint_keys(core, node), timeout=30, what="the taint removed")
    except AssertionError as e:
        conditions = [(c.type, c.status, c.last_heartbeat_time, c.last_transition_time)
                      for c in core.read_node_status(node).status.conditions]
        raise AssertionError(f"{e}\nplan: {r.plan().get('darkNodes')}\nconditions: {conditions}\n"
                             f"log: {r.log()[-3000:]}") from None
    annotations = core.read_node(node).metadata.annotations or {}
    assert CONFIRM_ANNOTATION not in annotations and "nodemedic.io/fence" not in annotations, annotations
    assert r.metric("nodemedic_fences_total", evidence="person") == 1 and r.metric("nodemedic_unfences_total") == 1
