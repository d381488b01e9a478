"""nodemedic as users install it: the chart as it ships (values only for the image and its pull policy) on a cluster
with a real node (kubelet, kube-proxy, containerd, runc; hack/kcp/realnode.py) running the image built from the
Dockerfile. The agent is a DaemonSet pod on the real node with the shipped agent config, reading the machine's real
/dev/kmsg; the remediator's pods run there as the non-root user. Then the chain through the real node: a kernel line
written to /dev/kmsg, the condition on the real Node, the taint, a real container evicted through the Eviction API
and its replacement running elsewhere.

One real node runs on a machine at a time, so one worker runs this module (xdist group). Every agent reading
/dev/kmsg sees every line written to it; no other test writes there."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from kcp import image, paths, realnode
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import cordon, deployment, events_once, new_namespace, running_on, taint_keys
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real_node")]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "nodemedic"
NAMESPACE = "nodemedic"
KWOK_NODES = ["kwok-node-0", "kwok-node-1"]
TAINT = "nodemedic.io/kernel-deadlock"


def helm(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([str(paths.binary("helm")), *args, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def kubectl(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([str(paths.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def pods(core: client.CoreV1Api, component: str) -> list[client.V1Pod]:
    return [p for p in core.list_namespaced_pod(NAMESPACE,
                                                label_selector=f"app.kubernetes.io/component={component}").items
            if p.metadata.deletion_timestamp is None]


def ready(pod: client.V1Pod) -> bool:
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                 for c in pod.status.conditions or [])


def container_cgroup(pod: client.V1Pod, controller: str) -> Path:
    """The cgroup (cgroupfs driver, cgroup v1) of the pod's first container on the real node."""
    container_id = pod.status.container_statuses[0].container_id.split("://", 1)[1]
    found = list(Path("/sys/fs/cgroup", controller, "kubepods").glob(f"**/pod{pod.metadata.uid}/{container_id}"))
    assert len(found) == 1, f"no single cgroup for {pod.metadata.name}'s container: {found}"
    return found[0]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, float]]:
    """The real-node cluster with the chart installed as it ships, every nodemedic pod Ready. The kwok nodes are
    cordoned while it installs, so the remediator's replicas run on the real node, where containers are real."""
    with _started(f"pytest-{os.getpid()}-real-{secrets.token_hex(2)}", len(KWOK_NODES), real_nodes=1) as cluster:
        core = client.CoreV1Api(cluster.api)
        cordon(core, KWOK_NODES, True)
        t0 = time.monotonic()
        repository, tag = image.reference().rsplit(":", 1)
        helm(cluster, "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
             f"--set=image.repository={repository}", f"--set=image.tag={tag}", "--set=image.pullPolicy=Never")
        wait_until(lambda: (a := [p for p in pods(core, "agent") if p.spec.node_name == realnode.NAME])
                   and ready(a[0]), timeout=120, what=f"the agent's DaemonSet pod Ready on {realnode.NAME}")
        wait_until(lambda: len(r := pods(core, "remediator")) == 2 and all(map(ready, r)), timeout=120,
                   what="the remediator's two pods Ready")
        took = time.monotonic() - t0
        cordon(core, KWOK_NODES, False)
        yield cluster, took
        helm(cluster, "uninstall", "nodemedic", f"--namespace={NAMESPACE}", "--wait", "--timeout=120s")
    assert realnode.traces() == [], "hack/cluster down left the real node's traces behind"


def test_the_chart_as_it_ships_runs_on_the_real_node(installed: tuple[LocalCluster, float]) -> None:
    cluster, took = installed
    core = client.CoreV1Api(cluster.api)
    print(f"\nhelm install to every nodemedic pod Ready: {took:.1f}s\n"
          + kubectl(cluster, "get", "nodes", "-o", "wide")
          + kubectl(cluster, "get", "pods", "-n", NAMESPACE, "-o", "wide"))
    node = core.read_node(realnode.NAME)
    assert node.status.node_info.container_runtime_version.startswith("containerd://")

    agent = next(p for p in pods(core, "agent") if p.spec.node_name == realnode.NAME)
    spec = agent.spec.containers[0]
    assert agent.spec.host_network and spec.security_context.privileged
    assert spec.image == image.reference()
    # The shipped agent config: its own conditions on the real Node, written by the pod.
    types = {c.type for c in node.status.conditions}
    assert {"KernelDeadlock", "ContainerRuntimeUnhealthy", "KubeletUnhealthy"} <= types, types
    runtime = next(c for c in node.status.conditions if c.type == "ContainerRuntimeUnhealthy")
    kubelet = next(c for c in node.status.conditions if c.type == "KubeletUnhealthy")
    assert (runtime.status, kubelet.status) == ("False", "False"), (runtime.message, kubelet.message)

    memory = container_cgroup(agent, "memory")
    limit = int((memory / "memory.limit_in_bytes").read_text())
    peak = int((memory / "memory.max_usage_in_bytes").read_text())
    rss = next(int(line.split()[1]) for line in (memory / "memory.stat").read_text().splitlines()
               if line.startswith("total_rss "))
    cpu_ns = int((container_cgroup(agent, "cpuacct") / "cpuacct.usage").read_text())
    print(f"agent pod on {realnode.NAME}: RSS {rss / 2**20:.1f} MiB, peak usage {peak / 2**20:.1f} MiB of its "
          f"{limit / 2**20:.0f} MiB limit, CPU {cpu_ns / 1e9:.2f}s since start")
    assert peak < limit and limit == 128 * 2**20

    remediators = pods(core, "remediator")
    assert {p.spec.node_name for p in remediators} == {realnode.NAME}
    for pod in remediators:
        uid = kubectl(cluster, "exec", "-n", NAMESPACE, pod.metadata.name, "--", "id", "-u").strip()
        assert uid == "65532", f"{pod.metadata.name} runs as uid {uid}"
    leases = client.CoordinationV1Api(cluster.api).list_namespaced_lease(NAMESPACE).items
    holders = {lease.spec.holder_identity for lease in leases}
    assert holders & {p.metadata.name for p in remediators}, f"no remediator pod leads: {holders}"


def test_a_kernel_line_on_the_real_node_taints_it_and_its_real_pod_runs_elsewhere(
        installed: tuple[LocalCluster, float]) -> None:
    cluster, _ = installed
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    namespace = f"work-{secrets.token_hex(3)}"
    new_namespace(core, namespace)
    work = deployment("work", 1, [realnode.NAME, *KWOK_NODES])
    work["spec"]["template"]["spec"]["containers"][0].update(image=image.pause_reference(), imagePullPolicy="Never")
    cordon(core, KWOK_NODES, True)
    try:
        apps.create_namespaced_deployment(namespace, work)
        placed = wait_until(lambda: (r := running_on(core, namespace, "work")) and r, timeout=60,
                            what="the work pod Running on the real node")
    finally:
        cordon(core, KWOK_NODES, False)
    assert set(placed.values()) == {realnode.NAME}
    deadlock = next(c for c in core.read_node(realnode.NAME).status.conditions if c.type == "KernelDeadlock")
    assert deadlock.status == "False", (
        f"KernelDeadlock already True before this test's line ({deadlock.message}): the agent replays the kernel log "
        "of the last 5 minutes (the shipped kernel monitor's lookback), so a hung-task line written by an earlier run "
        "of this test within 5 minutes is seen again; wait and rerun")

    task = f"nm-e2e-{secrets.token_hex(3)}"
    line = f"INFO: task {task}:4242 blocked for more than 120 seconds."
    t0 = time.monotonic()
    Path("/dev/kmsg").write_text(f"<3>{line}\n")
    condition = wait_until(lambda: (c := next(c for c in core.read_node(realnode.NAME).status.conditions
                                              if c.type == "KernelDeadlock")).status == "True" and c,
                           timeout=60, what="KernelDeadlock=True on the real Node, set by the agent pod")
    t_condition = time.monotonic()
    assert task in condition.message, condition.message
    wait_until(lambda: TAINT in taint_keys(core, realnode.NAME), timeout=120,
               what=f"{TAINT} on {realnode.NAME} (the shipped rule waits 30s)")
    t_taint = time.monotonic()
    moved = wait_until(lambda: (r := running_on(core, namespace, "work")) and realnode.NAME not in r.values() and r,
                       timeout=120, what="the work pod evicted and its replacement Running on a kwok node")
    t_moved = time.monotonic()
    assert set(moved.values()) <= set(KWOK_NODES)
    evicted = events_once(core, namespace, "NodemedicEvicted", 1)
    assert [e.involved_object.name for e in evicted] == list(placed)
    print(f"\nreal node chain: kernel line → condition {t_condition - t0:.1f}s → taint {t_taint - t_condition:.1f}s "
          f"→ replacement Running on {sorted(moved.values())} {t_moved - t_taint:.1f}s")
    agent = next(p for p in pods(core, "agent") if p.spec.node_name == realnode.NAME)
    assert agent.status.container_statuses[0].restart_count == 0
    print(json.dumps({p.metadata.name: p.status.container_statuses[0].restart_count
                      for p in pods(core, "agent") + pods(core, "remediator")
                      if p.spec.node_name == realnode.NAME}))
