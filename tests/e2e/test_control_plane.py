"""The local control plane behaves like a real cluster: scheduling, PDB-guarded eviction, taints, Leases."""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.e2e.conftest import LocalCluster
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e


def deployment(name: str, replicas: int, *, affinity: dict | None = None) -> dict:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {"name": "app", "image": "registry.invalid/app:1",
                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
                    ],
                    **({"affinity": affinity} if affinity else {}),
                },
            },
        },
    }


def running_pods(core: client.CoreV1Api, ns: str, app: str) -> list[client.V1Pod]:
    pods = core.list_namespaced_pod(ns, label_selector=f"app={app}").items
    return [p for p in pods if p.status.phase == "Running" and p.metadata.deletion_timestamp is None]


def test_deployment_pods_are_placed_by_the_scheduler_on_kwok_nodes_and_run(
    cluster: LocalCluster, core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str
) -> None:
    apps.create_namespaced_deployment(namespace, deployment("web", 6))

    pods = wait_until(lambda: len(running_pods(core, namespace, "web")) == 6 and running_pods(core, namespace, "web"),
                      timeout=60, what="6 Running pods of deployment web")

    kwok_nodes = {n.metadata.name for n in core.list_node().items
                  if (n.metadata.annotations or {}).get("kwok.x-k8s.io/node") == "fake"}
    placed_on = {p.spec.node_name for p in pods}
    assert placed_on <= kwok_nodes, f"pods placed off kwok nodes: {placed_on - kwok_nodes}"
    assert len(placed_on) >= 2, f"the scheduler spread 6 pods over only {placed_on}"
    for p in pods:
        scheduled = next(c for c in p.status.conditions if c.type == "PodScheduled")
        assert scheduled.status == "True"
        assert p.status.pod_ip, f"kwok gave {p.metadata.name} no pod IP"
    events = core.list_namespaced_event(namespace, field_selector="reason=Scheduled").items
    assert any(e.source.component == "default-scheduler" or e.reporting_component == "default-scheduler"
               for e in events), "no Scheduled event from kube-scheduler"


def _evict(core: client.CoreV1Api, ns: str, pod: str) -> None:
    core.create_namespaced_pod_eviction(
        pod, ns, {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod, "namespace": ns}}
    )


def test_eviction_api_honours_a_pod_disruption_budget_and_the_replicaset_replaces_the_pod(
    core: client.CoreV1Api, apps: client.AppsV1Api, policy_api: client.PolicyV1Api, namespace: str
) -> None:
    apps.create_namespaced_deployment(namespace, deployment("db", 2))
    wait_until(lambda: len(running_pods(core, namespace, "db")) == 2, timeout=60, what="2 Running db pods")
    policy_api.create_namespaced_pod_disruption_budget(namespace, {
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
    })

    def pdb_allows(n: int) -> bool:
        pdb = policy_api.read_namespaced_pod_disruption_budget("db", namespace)
        st = pdb.status
        return bool(st and st.observed_generation == pdb.metadata.generation
                    and st.current_healthy == 2 and st.disruptions_allowed == n)

    wait_until(lambda: pdb_allows(0), timeout=30, what="the disruption controller to allow 0 disruptions")
    victim = running_pods(core, namespace, "db")[0].metadata.name
    with pytest.raises(ApiException) as refused:
        _evict(core, namespace, victim)
    assert refused.value.status == 429, refused.value
    assert "disruption budget" in refused.value.body
    assert core.read_namespaced_pod(victim, namespace).metadata.deletion_timestamp is None

    policy_api.patch_namespaced_pod_disruption_budget("db", namespace, {"spec": {"minAvailable": 1}})
    wait_until(lambda: pdb_allows(1), timeout=30, what="the disruption controller to allow 1 disruption")
    _evict(core, namespace, victim)

    def replaced() -> bool:
        names = {p.metadata.name for p in running_pods(core, namespace, "db")}
        return victim not in names and len(names) == 2

    wait_until(replaced, timeout=60, what=f"{victim} to be gone and replaced by the ReplicaSet controller")
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_pod(victim, namespace)
    assert gone.value.status == 404


@pytest.fixture
def two_nodes(cluster: LocalCluster, core: client.CoreV1Api) -> Iterator[tuple[str, str]]:
    """Two fresh kwok nodes of this test alone, so tainting one disturbs no other test."""
    suffix = secrets.token_hex(3)
    names = (f"taint-a-{suffix}", f"taint-b-{suffix}")
    for n in names:
        core.create_node(cluster.node(n, labels={"nodemedic.io/e2e-pool": suffix}))

    def ready() -> bool:
        return all(
            any(c.type == "Ready" and c.status == "True" for c in (core.read_node(n).status.conditions or []))
            for n in names
        )

    wait_until(ready, timeout=30, what=f"kwok to make {names} Ready")
    yield names
    for n in names:
        core.delete_node(n)


def test_a_node_tainted_noschedule_receives_no_new_pods(
    core: client.CoreV1Api, apps: client.AppsV1Api, namespace: str, two_nodes: tuple[str, str]
) -> None:
    tainted, clean = two_nodes
    core.patch_node(tainted, {"spec": {"taints": [{"key": "nodemedic.io/e2e", "value": "x", "effect": "NoSchedule"}]}})
    pool = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(two_nodes)}]}
    ]}}}
    apps.create_namespaced_deployment(namespace, deployment("spread", 6, affinity=pool))
    pods = wait_until(lambda: len(running_pods(core, namespace, "spread")) == 6
                      and running_pods(core, namespace, "spread"), timeout=60, what="6 Running pods")
    assert {p.spec.node_name for p in pods} == {clean}

    only_tainted = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [tainted]}]}
    ]}}}
    apps.create_namespaced_deployment(namespace, deployment("stuck", 1, affinity=only_tainted))

    def unschedulable() -> str | None:
        for p in core.list_namespaced_pod(namespace, label_selector="app=stuck").items:
            for c in p.status.conditions or []:
                if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable":
                    return c.message
        return None

    message = wait_until(unschedulable, timeout=30, what="the scheduler to refuse the tainted node")
    assert "untolerated taint" in message, message
    assert all(p.spec.node_name is None for p in core.list_namespaced_pod(namespace, label_selector="app=stuck").items)


def test_a_lease_can_be_created_and_renewed_with_optimistic_concurrency(
    coordination: client.CoordinationV1Api, namespace: str
) -> None:
    now = dt.datetime.now(dt.UTC)
    lease = coordination.create_namespaced_lease(namespace, {
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "acquireTime": now, "renewTime": now},
    })
    later = now + dt.timedelta(seconds=5)
    lease.spec.renew_time = later
    renewed = coordination.replace_namespaced_lease("leader", namespace, lease)
    assert renewed.spec.renew_time == later
    assert renewed.metadata.resource_version != lease.metadata.resource_version

    lease.spec.holder_identity = "b"  # still carries the stale resourceVersion
    with pytest.raises(ApiException) as conflict:
        coordination.replace_namespaced_lease("leader", namespace, lease)
    assert conflict.value.status == 409
    assert coordination.read_namespaced_lease("leader", namespace).spec.holder_identity == "a"
