"""The chart's optional second scheduler on the real node: kube-scheduler (the pinned version's image) with the
configuration its init container writes with `nodemedic-remediator scheduler-config` from the chart's policy; the
zone article's Deployment D selects it by schedulerName and lands within skew 1 across three zones, through a
rolling update."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp import image, nodes, realnode
from tests.e2e import zone_example as ex
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.real_node_harness import CHART, KWOK_NODES, NAMESPACE, SHIPPED_POLICY, helm, pods, ready
from tests.e2e.remediator_harness import cordon
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real_node")]

PROFILE = "nodemedic-spread"
POLICY = SHIPPED_POLICY + f"""
scheduler:
  profile: {PROFILE}
  defaultConstraints:
  - {{maxSkew: 1, topologyKey: {ex.ZONE}, whenUnsatisfiable: ScheduleAnyway}}
  - {{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}}
"""


@pytest.fixture(scope="module")
def with_second_scheduler(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The real-node cluster with the chart installed with its second scheduler, every pod of it Ready on the real
    node (the kwok nodes are cordoned while it installs)."""
    tmp = tmp_path_factory.mktemp("second-scheduler")
    (policy := tmp / "policy.yaml").write_text(POLICY)
    with _started(f"pytest-{os.getpid()}-real-{secrets.token_hex(2)}", len(KWOK_NODES), real_nodes=1) as cluster:
        core = client.CoreV1Api(cluster.api)
        cordon(core, KWOK_NODES, True)
        repository, tag = image.reference().rsplit(":", 1)
        scheduler_repository, scheduler_tag = image.scheduler_reference().rsplit(":", 1)
        helm(cluster, "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
             f"--set=image.repository={repository}", f"--set=image.tag={tag}", "--set=image.pullPolicy=Never",
             f"--set-file=remediator.policy={policy}", "--set=secondScheduler.enabled=true",
             f"--set=secondScheduler.image.repository={scheduler_repository}",
             f"--set=secondScheduler.image.tag={scheduler_tag}", "--set=secondScheduler.image.pullPolicy=Never")
        wait_until(lambda: (s := pods(core, "scheduler")) and all(map(ready, s)) and s, timeout=180,
                   what="the second scheduler's pod Ready")
        cordon(core, KWOK_NODES, False)
        yield cluster
        helm(cluster, "uninstall", "nodemedic", f"--namespace={NAMESPACE}", "--wait", "--timeout=120s")
    assert realnode.traces() == [], "hack/cluster down left the real node's traces behind"


def test_the_charts_second_scheduler_keeps_the_example_within_skew_1(with_second_scheduler: LocalCluster,
                                                                      tmp_path: Path) -> None:
    cluster = with_second_scheduler
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    [scheduler] = pods(core, "scheduler")
    assert scheduler.spec.node_name == realnode.NAME and scheduler.spec.containers[0].image == \
        image.scheduler_reference()
    lease = client.CoordinationV1Api(cluster.api).read_namespaced_lease("nodemedic-scheduler", NAMESPACE)
    assert lease.spec.holder_identity.startswith(scheduler.metadata.name), lease.spec.holder_identity
    print(f"zone-example chart second scheduler: pod {scheduler.metadata.name} Ready on {scheduler.spec.node_name} "
          f"({scheduler.spec.containers[0].image}), Lease {NAMESPACE}/nodemedic-scheduler held by "
          f"{lease.spec.holder_identity}")
    tag = secrets.token_hex(3)
    pool = [f"zone-{tag}-{z}" for z in nodes.ZONES]
    for name, zone in zip(pool, nodes.ZONES, strict=True):
        manifest = nodes.node_manifest(name, zone, labels={ex.TAG: tag})
        core.create_node(manifest)
    wait_until(lambda: all(any(c.type == "Ready" and c.status == "True" for c in core.read_node(n).status.conditions
                               or []) for n in pool), timeout=30, what=f"kwok to make {pool} Ready")
    namespace = f"zone-{tag}"
    core.create_namespace({"metadata": {"name": namespace}})
    wait_until(lambda: core.list_namespaced_service_account(namespace).items, timeout=30, what="default SA")
    try:
        ex.place_services(apps, core, namespace, pool)
        before = ex.placed_d(apps, core, namespace, tag, scheduler=PROFILE)
        ex.show("chart's second scheduler placed", before)
        after = ex.rolling_update(apps, core, namespace, tag)
        ex.show("chart's second scheduler after a rolling update", after)
        scheduled_by = {e.reporting_component for e in core.list_namespaced_event(
            namespace, field_selector="reason=Scheduled").items if e.involved_object.name.startswith("svc-d-")}
        assert scheduled_by == {PROFILE}, scheduled_by
        assert ex.skew(before) <= 1 and ex.skew(after) <= 1
    finally:
        core.delete_namespace(namespace)
        for n in pool:
            core.delete_node(n)
