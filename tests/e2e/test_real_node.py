"""nodemedic as users install it: the chart as it ships (values only for the image and its pull policy) on a cluster
with a real node (kubelet, kube-proxy, containerd, runc; hack/kcp/realnode.py) running the image built from the
Dockerfile. The agent is a DaemonSet pod on the real node with the shipped agent config, reading the machine's real
/dev/kmsg; the remediator's pods run there as the non-root user. Then, in this order (each test leaves the cluster
as the next one expects, and says so when it does not find it that way):
- the agent's probes against the real containerd and kubelet: both stopped and started again;
- the agent's kube-proxy and cluster DNS checks against the real kube-proxy and CoreDNS (behind the kube-dns
  Service): both stopped and started again;
- the chain through the real node: a kernel line written to /dev/kmsg, the condition on the real Node, the taint, a
  real container evicted through the Eviction API and its replacement running elsewhere; then `helm upgrade` with
  shorter quiet periods, which the running remediator reloads from its ConfigMap volume, and the taint goes once
  the condition clears;
- a broken policy through `helm upgrade`: refused with an Event and a metric, the last good policy keeps acting;
- `remediator.mode: cronjob`: kube-controller-manager's Job evicts what `nodemedic-remediator plan` predicted;
- `kubectl nodemedic` on what happens to each node;
- metrics-server (the pinned one) serving the real node's and its agent pod's usage, read from the real kubelet;
- a real Prometheus scraping the nodemedic pods on the real node, the shipped alerts evaluating without error.

One real node runs on a machine at a time, so one worker runs this module (xdist group). Every agent reading
/dev/kmsg sees every line written to it; no other test writes there."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from agent.checks import cluster_dns, runtime
from agent.checks import kube_proxy as kube_proxy_check
from agent.checks import kubelet as kubelet_check
from hack.kcp import coredns, image, metrics_server, paths, prometheus, realnode
from hack.kcp.api import ApiError
from remediator.state.quantity import parse_quantity
from tests import chart_monitoring
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.real_node_harness import CHART, KWOK_NODES, NAMESPACE, SHIPPED_POLICY, helm, pods, ready
from tests.e2e.remediator_harness import (
    cordon,
    deployment,
    events_once,
    new_namespace,
    nodemedic_events,
    place_on_first,
    running_on,
    taint_keys,
    wait_running,
)
from tests.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real_node")]

ROOT = Path(__file__).resolve().parents[2]
TAINT = "nodemedic.io/kernel-deadlock"
# The shipped agent config, except that its repair commands may not reach this machine's own systemctl (the shipped
# policy's ladders ask for a reboot of a drained node; tests/e2e/test_repair_real_node.py gives the agent this
# machine's stand-ins instead). Everything else as it ships.
SHIPPED_AGENT_CONFIG = (ROOT / "deploy" / "agent" / "default.yaml").read_text().replace(
    "    reboot: [systemctl, reboot]\n", "    reboot: null\n").replace(
    "      kubelet: [systemctl, restart, kubelet]\n", "      kubelet: null\n").replace(
    "      containerd: [systemctl, restart, containerd]\n", "      containerd: null\n").replace(
    "      crio: [systemctl, restart, crio]\n", "      crio: null\n")
# The agent's runtime check: a probe every 30 s, each allowed 5 s (agent/checks/runtime.py, README "Detection"); the
# kubelet and kube-proxy checks: a probe every 30 s while settled, then the failures that confirm it at the recheck
# pace (agent/services/healthz.py): 30 + 2 x 5 s; back to False at the first good probe, within 30 s of the component
# answering again, which a component just started may take up to STARTS_SERVING_S to do. Cluster DNS: three failed
# lookups 30 s apart, each allowed 2 s (agent/checks/cluster_dns.py). A few seconds on top for the status write.
RUNTIME_DETECTION_S = 30 + 5 + 5
STARTS_SERVING_S = 30


def _healthz_detection_s(config: kubelet_check.Config | kube_proxy_check.Config) -> float:
    return (config.timing.interval + (config.failure_threshold - 1) * config.recheck_interval).total_seconds() + 5


KUBELET_DETECTION_S = _healthz_detection_s(kubelet_check.Config())
KUBELET_RECOVERY_S = STARTS_SERVING_S + kubelet_check.Config().timing.interval.total_seconds() + 5
KUBE_PROXY_DETECTION_S = _healthz_detection_s(kube_proxy_check.Config())
KUBE_PROXY_RECOVERY_S = STARTS_SERVING_S + kube_proxy_check.Config().timing.interval.total_seconds() + 5
_DNS = cluster_dns.Config()
DNS_DETECTION_S = 3 * _DNS.timing.interval.total_seconds() + _DNS.request_timeout.total_seconds() + 5
CLUSTER_NAME = "kubernetes.default.svc.cluster.local"


def kubectl(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([str(paths.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def why_not_running(cluster: LocalCluster, core: client.CoreV1Api, namespace: str) -> str:
    """What a failed wait for a pod on the real node prints: the pods' state, the namespace's Events, the real Node's
    Ready condition and the kubelet's and containerd's last lines about them (a run under load once timed out here
    with nothing to go on)."""
    lines = []
    for p in core.list_namespaced_pod(namespace).items:
        waiting = [(c.name, c.state.waiting.reason, c.state.waiting.message) for c in p.status.container_statuses or []
                   if c.state and c.state.waiting]
        lines.append(f"pod {p.metadata.name} on {p.spec.node_name}: {p.status.phase}; "
                     f"{[(c.type, c.status, c.reason) for c in p.status.conditions or []]}; waiting {waiting}")
    for e in core.list_namespaced_event(namespace).items:
        lines.append(f"event {e.involved_object.name} {e.type} {e.reason}: {e.message}")
    ready = condition(core, realnode.NAME, "Ready")
    lines.append(f"{realnode.NAME} Ready={ready.status} {ready.reason}: {ready.message}")
    assert cluster.owned is not None
    names = [p.metadata.name for p in core.list_namespaced_pod(namespace).items] + [namespace]
    for component in ("kubelet", "containerd"):
        log = cluster.owned.log_dir / f"{component}.log"
        text = log.read_text(errors="replace").splitlines() if log.exists() else [f"({log} missing)"]
        about = [line for line in text if any(n in line for n in names)] or text
        lines += [f"{component}: {line[:400]}" for line in about[-15:]]
    return "\n".join(lines)


def condition(core: client.CoreV1Api, node: str, type_: str) -> client.V1NodeCondition:
    return next(c for c in core.read_node_status(node).status.conditions or [] if c.type == type_)


def set_condition_since(core: client.CoreV1Api, node: str, type_: str, status: str, since: dt.timedelta) -> None:
    """A condition as an agent would have written it `since` ago (so a rule's `for` has already passed)."""
    now = dt.datetime.now(dt.UTC)
    core.patch_node_status(node, {"status": {"conditions": [{
        "type": type_, "status": status, "reason": "E2E", "message": "written by the real-node test",
        "lastHeartbeatTime": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastTransitionTime": (now - since).strftime("%Y-%m-%dT%H:%M:%SZ")}]}})


def leader(cluster: LocalCluster) -> client.V1Pod:
    core = client.CoreV1Api(cluster.api)
    holders = {lease.spec.holder_identity
               for lease in client.CoordinationV1Api(cluster.api).list_namespaced_lease(NAMESPACE).items}
    found = [p for p in pods(core, "remediator") if p.metadata.name in holders]
    assert len(found) == 1, f"no single remediator pod holds the lease: holders {holders}"
    return found[0]


def metric(pod: client.V1Pod, name: str, labels: str = "") -> float:
    """One sample of the pod's /metrics, read over the pod network from this machine (the real node's host)."""
    with urllib.request.urlopen(f"http://{pod.status.pod_ip}:8080/metrics", timeout=5) as answer:
        text = answer.read().decode()
    wanted = f"{name}{{{labels}}}" if labels else name
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(wanted + " ")]
    return values[0] if values else 0.0


def upgrade(cluster: LocalCluster, tmp: Path, *, policy: str | None = None, agent_config: str | None = None,
            values: str | None = None) -> None:
    """`helm upgrade` of the release, keeping the install's values, with a changed policy, agent config or values."""
    args = ["upgrade", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--reuse-values"]
    for key, text in (("remediator.policy", policy), ("agent.config", agent_config)):
        if text is not None:
            path = tmp / f"{key}-{secrets.token_hex(2)}.yaml"
            path.write_text(text)
            args.append(f"--set-file={key}={path}")
    if values is not None:
        (path := tmp / f"values-{secrets.token_hex(2)}.yaml").write_text(values)
        args.append(f"--values={path}")
    helm(cluster, *args)


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
    # kwok_metrics: the kwok nodes' resource metrics come from kwok (hack/kcp/kwok-metrics.yaml), for metrics-server.
    with _started(f"pytest-{os.getpid()}-real-{secrets.token_hex(2)}", len(KWOK_NODES), real_nodes=1,
                  kwok_metrics=True) as cluster:
        core = client.CoreV1Api(cluster.api)
        cordon(core, KWOK_NODES, True)
        t0 = time.monotonic()
        repository, tag = image.reference().rsplit(":", 1)
        agent_config = tmp_path_factory.mktemp("real-node") / "agent.yaml"
        agent_config.write_text(SHIPPED_AGENT_CONFIG)
        assert "systemctl" not in SHIPPED_AGENT_CONFIG.split("repair:", 1)[1].split("#", 1)[0], "a repair command left"
        helm(cluster, "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
             f"--set=image.repository={repository}", f"--set=image.tag={tag}", "--set=image.pullPolicy=Never",
             f"--set-file=agent.config={agent_config}")
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


def cri_disabled_containerd(work: Path) -> subprocess.Popen[bytes]:
    """A second containerd beside the node's, with every address its own and the CRI plugin off: its gRPC server
    answers a CRI call the way it answers any unknown service."""
    config = work / "containerd.toml"
    config.write_text(f"""version = 2
root = "{work / 'root'}"
state = "{work / 'state'}"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "{work / 'c.sock'}"
[ttrpc]
  address = "{work / 'c.sock.ttrpc'}"
[debug]
  address = ""
""")
    proc = subprocess.Popen(["containerd", f"--config={config}"], stdout=subprocess.DEVNULL,
                            stderr=(work / "containerd.log").open("wb"))
    wait_until(lambda: (work / "c.sock").is_socket() or (proc.poll() is not None and pytest.fail(
        (work / "containerd.log").read_text()[-2000:])), timeout=30, what="the second containerd's socket")
    return proc


def test_the_agent_pod_probes_the_real_containerd_and_kubelet_and_counts_their_restarts(
        installed: tuple[LocalCluster, float]) -> None:
    cluster, _ = installed
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    # The hand-written HTTP/2 client and containerd's gRPC server: what it parses from the CRI Version answer is what
    # containerd's own client reads from its version service (`ctr version`, the raw version string) and what the
    # kubelet, speaking gRPC through grpc-go, reports (its version parsed as semver: "1.6.20~ds1" -> "1.6.20").
    answer = asyncio.run(runtime.probe(realnode.SOCKET))
    name, version = answer.split(" ", 1)
    ctr = subprocess.run(["ctr", f"--address={realnode.SOCKET}", "version"], capture_output=True, text=True,
                         timeout=30, check=True).stdout
    server = ctr.split("Server:", 1)[1]
    assert re.search(rf"^\s*Version:\s*{re.escape(version)}$", server, re.M), (answer, ctr)
    kubelet_view = core.read_node(realnode.NAME).status.node_info.container_runtime_version
    semver = re.match(r"\d+\.\d+\.\d+", version)
    assert semver and kubelet_view == f"{name}://{semver.group()}", (answer, kubelet_view)
    healthy = condition(core, realnode.NAME, "ContainerRuntimeUnhealthy")
    assert (healthy.status, healthy.message) == ("False", f"{answer} answers CRI Version on {realnode.SOCKET}")
    # A gRPC error: containerd without its CRI plugin answers trailers-only (grpc-status 12, Unimplemented).
    work = Path(tempfile.mkdtemp(prefix="nm-ctrd-", dir="/tmp"))  # short: a unix socket path holds 107 bytes
    second = cri_disabled_containerd(work)
    try:
        with pytest.raises(runtime.ProbeError, match="trailers-only"):
            asyncio.run(runtime.probe(work / "c.sock"))
    finally:
        second.terminate()
        second.wait(timeout=30)
        shutil.rmtree(work)

    # containerd frozen (SIGSTOP: its socket still accepts connections, nothing answers, as a hung runtime) and the
    # kubelet stopped, at once; pods keep running (their shims outlive containerd, the kubelet leaves them be). Then
    # containerd restarted and the kubelet started: one restart each.
    containerd = next(p for p in cluster.owned.processes if p.name == "containerd")
    t0 = time.monotonic()
    os.kill(containerd.pid, signal.SIGSTOP)
    cluster.owned.stop_component("kubelet")
    try:
        down = wait_until(lambda: (r := condition(core, realnode.NAME, "ContainerRuntimeUnhealthy")).status == "True"
                          and r, timeout=RUNTIME_DETECTION_S, what="ContainerRuntimeUnhealthy=True")
        t_runtime = time.monotonic() - t0
        kubelet_down = wait_until(lambda: (r := condition(core, realnode.NAME, "KubeletUnhealthy")).status == "True"
                                  and r, timeout=KUBELET_DETECTION_S, what="KubeletUnhealthy=True")
        t_kubelet = time.monotonic() - t0
    finally:
        os.kill(containerd.pid, signal.SIGCONT)
        cluster.owned.stop_component("containerd")
        t1 = time.monotonic()
        cluster.owned.start_component("containerd")
        cluster.owned.start_component("kubelet")
    assert (down.reason, down.message) == (
        "ContainerRuntimeUnhealthy", f"{realnode.SOCKET} did not answer a CRI Version call within 5s"), down
    assert kubelet_down.reason == "KubeletUnhealthy", kubelet_down.message
    wait_until(lambda: condition(core, realnode.NAME, "ContainerRuntimeUnhealthy").status == "False",
               timeout=RUNTIME_DETECTION_S, what="ContainerRuntimeUnhealthy=False again")
    t_runtime_back = time.monotonic() - t1
    wait_until(lambda: condition(core, realnode.NAME, "KubeletUnhealthy").status == "False",
               timeout=KUBELET_RECOVERY_S, what="KubeletUnhealthy=False again")
    t_kubelet_back = time.monotonic() - t1
    # Restarts are counted from the processes' start times in the host's /proc, seen through the pod's host mount.
    def counted_once(type_: str, subject: str) -> client.V1NodeCondition:
        found = condition(core, realnode.NAME, type_)
        assert found.message.startswith(f"{subject} restarted 1 time"), f"{found.reason}: {found.message}"
        return found

    for type_, subject in (("FrequentContainerRuntimeRestart", "container runtime"),
                           ("FrequentKubeletRestart", "kubelet")):
        counted = wait_until(lambda t=type_, s=subject: counted_once(t, s), timeout=RUNTIME_DETECTION_S,
                             what=f"{type_} counting one restart")
        assert counted.status == "False"
    wait_until(lambda: next(c for c in core.read_node_status(realnode.NAME).status.conditions
                            if c.type == "Ready").status == "True", timeout=60, what=f"{realnode.NAME} Ready again")
    agent = next(p for p in pods(core, "agent") if p.spec.node_name == realnode.NAME)
    assert agent.status.container_statuses[0].restart_count == 0
    print(f"\nCRI Version through the agent's HTTP/2 client: {answer!r}; kubelet: {kubelet_view!r}\n"
          f"containerd frozen, kubelet stopped: ContainerRuntimeUnhealthy=True after {t_runtime:.1f}s, "
          f"KubeletUnhealthy=True after {t_kubelet:.1f}s; containerd restarted, kubelet started: False again "
          f"after {t_runtime_back:.1f}s and "
          f"{t_kubelet_back:.1f}s; {condition(core, realnode.NAME, 'FrequentContainerRuntimeRestart').message}")


def test_the_agent_pod_watches_the_real_kube_proxy_and_the_cluster_dns_through_it(
        installed: tuple[LocalCluster, float]) -> None:
    cluster, _ = installed
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    # The path the agent's lookup takes, asked from this machine's network namespace (the node's): the kube-dns
    # Service's address, kube-proxy's DNAT to CoreDNS on the node's address, CoreDNS answering from the API server.
    timeout = dt.timedelta(seconds=2)
    assert asyncio.run(cluster_dns.ask(coredns.SERVICE_IP, 53, CLUSTER_NAME, timeout)) is None
    dns = wait_until(lambda: (c := condition(core, realnode.NAME, "ClusterDNSUnreachable")) and c,
                     timeout=DNS_DETECTION_S, what="ClusterDNSUnreachable on the real Node")
    proxy = condition(core, realnode.NAME, "KubeProxyUnhealthy")
    assert (dns.status, dns.reason, dns.message) == (
        "False", "ClusterDNSIsHealthy", f"{coredns.SERVICE_IP} answer for {CLUSTER_NAME}"), dns
    assert (proxy.status, proxy.reason) == ("False", "KubeProxyIsHealthy"), proxy
    # The journal monitors: on this machine's journal if it has one; without one, nothing at all on the Node.
    has_journal = any(any(Path(d).glob("*/*.journal")) for d in ("/var/log/journal", "/run/log/journal"))
    on_node = {c.type for c in core.read_node_status(realnode.NAME).status.conditions}
    assert ({"ServiceRestartLooping", "DiskBadBlock"} <= on_node) == has_journal, (has_journal, sorted(on_node))

    # kube-proxy stopped (its rules stay, so the DNS path still works) and CoreDNS stopped, at once.
    t0 = time.monotonic()
    cluster.owned.stop_component("kube-proxy")
    cluster.owned.stop_component("coredns")
    try:
        assert asyncio.run(cluster_dns.ask(coredns.SERVICE_IP, 53, CLUSTER_NAME, timeout)) is not None
        proxy_down = wait_until(lambda: (c := condition(core, realnode.NAME, "KubeProxyUnhealthy")).status == "True"
                                and c, timeout=KUBE_PROXY_DETECTION_S, what="KubeProxyUnhealthy=True")
        t_proxy = time.monotonic() - t0
        dns_down = wait_until(lambda: (c := condition(core, realnode.NAME, "ClusterDNSUnreachable")).status == "True"
                              and c, timeout=DNS_DETECTION_S, what="ClusterDNSUnreachable=True")
        t_dns = time.monotonic() - t0
    finally:
        t1 = time.monotonic()
        cluster.owned.start_component("kube-proxy")
        cluster.owned.start_component("coredns")
    assert proxy_down.reason == "KubeProxyUnhealthy", proxy_down
    refused = "ConnectionRefusedError: [Errno 111] Connect call failed ('127.0.0.1', 10256)"
    assert refused in proxy_down.message, proxy_down
    assert dns_down.message.startswith(f"DNS A {CLUSTER_NAME}: {coredns.SERVICE_IP}: "), dns_down
    wait_until(lambda: condition(core, realnode.NAME, "KubeProxyUnhealthy").status == "False",
               timeout=KUBE_PROXY_RECOVERY_S, what="KubeProxyUnhealthy=False again")
    t_proxy_back = time.monotonic() - t1
    wait_until(lambda: condition(core, realnode.NAME, "ClusterDNSUnreachable").status == "False",
               timeout=DNS_DETECTION_S, what="ClusterDNSUnreachable=False again")
    t_dns_back = time.monotonic() - t1
    restarts = wait_until(lambda: (c := condition(core, realnode.NAME, "FrequentKubeProxyRestart")).message.startswith(
        "kube-proxy restarted 1 time") and c, timeout=KUBE_PROXY_RECOVERY_S, what="one kube-proxy restart counted")
    assert restarts.status == "False"
    print(f"\nkube-proxy and CoreDNS stopped: KubeProxyUnhealthy=True after {t_proxy:.1f}s, ClusterDNSUnreachable=True "
          f"after {t_dns:.1f}s ({dns_down.message}); started again: False after {t_proxy_back:.1f}s and "
          f"{t_dns_back:.1f}s; {restarts.message}")


def quicker(policy: str, agent_config: str) -> tuple[str, str]:
    """The shipped policy and agent config with the kernel-deadlock quiet periods shortened (10 minutes each, too long
    for a test): the rule's recoverAfter to 20 s, the kernel monitor's logMonitorRecoverAfter to 1 minute (the
    least the agent accepts)."""
    rule = re.compile(r"(- name: kernel-deadlock\n(?:  .*\n)*?  recoverAfter: )10m")
    assert rule.search(policy), "the shipped kernel-deadlock rule no longer has recoverAfter: 10m"
    assert "logMonitorRecoverAfter: 10m" in agent_config
    return rule.sub(r"\g<1>20s", policy, count=1), agent_config.replace("logMonitorRecoverAfter: 10m",
                                                                       "logMonitorRecoverAfter: 1m")


def test_a_kernel_line_on_the_real_node_taints_it_its_real_pod_runs_elsewhere_and_the_taint_goes_once_it_clears(
        installed: tuple[LocalCluster, float], tmp_path: Path) -> None:
    cluster, _ = installed
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    namespace = f"work-{secrets.token_hex(3)}"
    new_namespace(core, namespace)
    work = deployment("work", 1, [realnode.NAME, *KWOK_NODES])
    work["spec"]["template"]["spec"]["containers"][0].update(image=image.pause_reference(), imagePullPolicy="Never")
    cordon(core, KWOK_NODES, True)
    try:
        apps.create_namespaced_deployment(namespace, work)
        try:
            # A real sandbox and container on a machine the rest of the suite loads: seconds alone, up to a minute
            # under load.
            placed = wait_until(lambda: (r := running_on(core, namespace, "work")) and r, timeout=120,
                                what="the work pod Running on the real node")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{why_not_running(cluster, core, namespace)}") from None
    finally:
        cordon(core, KWOK_NODES, False)
    assert set(placed.values()) == {realnode.NAME}
    deadlock = condition(core, realnode.NAME, "KernelDeadlock")
    assert deadlock.status == "False", (
        f"KernelDeadlock already True before this test's line ({deadlock.message}): the agent replays the kernel log "
        "of the last 5 minutes (the shipped kernel monitor's lookback), so a hung-task line written by an earlier run "
        "of this test within 5 minutes is seen again; wait and rerun")

    task = f"nm-e2e-{secrets.token_hex(3)}"
    line = f"INFO: task {task}:4242 blocked for more than 120 seconds."
    t0 = time.monotonic()
    Path("/dev/kmsg").write_text(f"<3>{line}\n")
    deadlock = wait_until(lambda: (c := condition(core, realnode.NAME, "KernelDeadlock")).status == "True" and c,
                          timeout=60, what="KernelDeadlock=True on the real Node, set by the agent pod")
    t_condition = time.monotonic()
    assert task in deadlock.message, deadlock.message
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
    core.delete_namespace(namespace)

    # The shipped quiet periods are ten minutes: `helm upgrade` shortens them. The agent's DaemonSet rolls (its
    # config is in the pod template's checksum); the remediator reads the new policy from its ConfigMap volume,
    # where the kubelet swaps the `..data` link, and keeps running: no restart, the same pods.
    before = {p.metadata.uid for p in pods(core, "remediator")}
    reloads = metric(leader(cluster), "nodemedic_policy_reloads_total", 'result="ok"')
    policy, agent_config = quicker(SHIPPED_POLICY, SHIPPED_AGENT_CONFIG)
    t_upgrade = time.monotonic()
    upgrade(cluster, tmp_path, policy=policy, agent_config=agent_config)
    wait_until(lambda: metric(leader(cluster), "nodemedic_policy_reloads_total", 'result="ok"') == reloads + 1,
               timeout=60, what="the leader's policy reload counted")
    t_reloaded = time.monotonic()
    def cleared() -> client.V1NodeCondition:
        c = condition(core, realnode.NAME, "KernelDeadlock")
        agents = [(p.metadata.name, p.spec.node_name, p.status.phase, p.metadata.creation_timestamp.isoformat())
                  for p in pods(core, "agent")]
        assert c.status == "False", f"{c.status} {c.reason} since {c.last_transition_time}: {c.message}; {agents}"
        return c

    recovered = wait_until(cleared, timeout=90, what="KernelDeadlock=False from the new agent pod (1 minute "
                                                     "without a new line)")
    t_clear = time.monotonic()
    assert recovered.reason == "TaskHungRecovered" or recovered.reason.endswith("Recovered"), recovered.reason
    wait_until(lambda: TAINT not in taint_keys(core, realnode.NAME), timeout=60,
               what=f"{TAINT} removed 20 s after KernelDeadlock cleared (the reloaded recoverAfter)")
    t_untainted = time.monotonic()
    remediators = pods(core, "remediator")
    assert {p.metadata.uid for p in remediators} == before, "the policy change restarted the remediator"
    assert all(p.status.container_statuses[0].restart_count == 0 for p in remediators)
    print(f"helm upgrade → policy reloaded {t_reloaded - t_upgrade:.1f}s → KernelDeadlock False "
          f"{t_clear - t_upgrade:.1f}s ({recovered.reason}) → taint removed {t_untainted - t_clear:.1f}s later")


def test_a_broken_policy_is_refused_with_an_event_and_a_metric_and_the_last_good_one_keeps_acting(
        installed: tuple[LocalCluster, float], tmp_path: Path) -> None:
    cluster, _ = installed
    core = client.CoreV1Api(cluster.api)
    before = {p.metadata.uid for p in pods(core, "remediator")}
    good, _ = quicker(SHIPPED_POLICY, SHIPPED_AGENT_CONFIG)
    upgrade(cluster, tmp_path, policy=good)  # as the test before left it; again, so this test stands alone
    rejected = metric(leader(cluster), "nodemedic_policy_reloads_total", 'result="error"')
    broken = good.replace("maxTaintedNodes: 3", "maxTaintedNodes: lots", 1)
    assert broken != good
    upgrade(cluster, tmp_path, policy=broken)
    wait_until(lambda: metric(leader(cluster), "nodemedic_policy_reloads_total", 'result="error"') >= rejected + 1,
               timeout=60, what="the broken policy counted as rejected")
    event = wait_until(lambda: next((e for e in nodemedic_events(core, NAMESPACE, "NodemedicPolicyRejected")
                                     if "maxTaintedNodes" in e.message), None),
                       timeout=30, what="a NodemedicPolicyRejected Event naming the field")
    assert event.type == "Warning" and event.involved_object.kind == "Lease", event
    assert re.search(r"policy\.yaml:\d+", event.message), event.message  # file and line
    # The last good policy keeps acting: a kwok node whose KernelDeadlock is True (for longer than the rule's `for`)
    # is tainted, and the taint goes 20 s after the condition clears: the reloaded recoverAfter, not the shipped 10m.
    node = KWOK_NODES[1]
    set_condition_since(core, node, "KernelDeadlock", "True", dt.timedelta(minutes=5))
    wait_until(lambda: TAINT in taint_keys(core, node), timeout=30,
               what=f"{TAINT} on {node} under the last good policy")
    set_condition_since(core, node, "KernelDeadlock", "False", dt.timedelta(0))
    t0 = time.monotonic()
    wait_until(lambda: TAINT not in taint_keys(core, node), timeout=60, what=f"{TAINT} removed from {node}")
    took = time.monotonic() - t0
    assert took >= 15, f"the taint went {took:.1f}s after the condition cleared: before the good policy's 20s"
    assert {p.metadata.uid for p in pods(core, "remediator")} == before
    print(f"\nrefused: {event.message}\ntaint removed {took:.1f}s after the condition cleared (recoverAfter 20s)")


def test_cronjob_mode_runs_a_job_on_the_real_node_that_evicts_what_plan_predicted(
        installed: tuple[LocalCluster, float], tmp_path: Path) -> None:
    cluster, _ = installed
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    batch = client.BatchV1Api(cluster.api)
    good, _ = quicker(SHIPPED_POLICY, SHIPPED_AGENT_CONFIG)
    # A schedule that does not fire while the scene is set and planned.
    mode = f"""remediator:
  mode: cronjob
  cronJob: {{schedule: "{{schedule}}"}}
  nodeSelector: {{kubernetes.io/hostname: {realnode.NAME}}}
"""
    upgrade(cluster, tmp_path, policy=good, values=mode.replace("{schedule}", "0 0 1 1 *"))
    wait_until(lambda: not pods(core, "remediator"), timeout=60, what="the remediator Deployment's pods gone")
    namespace = new_namespace(core, f"cron-{secrets.token_hex(3)}")
    sick, other = KWOK_NODES
    # Both pods on one kwok node: the other one is cordoned while they are created and placed.
    place_on_first(core, [sick, other], lambda: apps.create_namespaced_deployment(
        namespace, deployment("work", 2, KWOK_NODES)) and wait_running(core, namespace, "work", 2))
    placed = running_on(core, namespace, "work")
    assert set(placed.values()) == {sick}, placed
    set_condition_since(core, sick, "KernelDeadlock", "True", dt.timedelta(minutes=5))

    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(good)
    planned = subprocess.run([str(ROOT / ".venv" / "bin" / "nodemedic-remediator"), "plan", "--json",
                              f"--policy={policy_file}", f"--kubeconfig={cluster.kubeconfig}"],
                             capture_output=True, text=True, timeout=60, check=False)
    assert planned.returncode == 0, planned.stderr
    plan = json.loads(planned.stdout)
    predicted = sorted(e["name"] for e in plan["evictions"] if e["namespace"] == namespace)
    on_sick = [(c.type, c.status, c.reason) for c in core.read_node_status(sick).status.conditions]
    assert [t["node"] for t in plan["taints"]["add"]] == [sick], (plan["taints"], on_sick, planned.stdout[-3000:])
    assert predicted, f"plan predicts no eviction: {plan}"

    t0 = time.monotonic()
    upgrade(cluster, tmp_path, values=mode.replace("{schedule}", "* * * * *"))
    job = wait_until(lambda: next((j for j in batch.list_namespaced_job(NAMESPACE).items
                                   if (j.status.succeeded or 0) + (j.status.failed or 0) > 0), None),
                     timeout=150, what="a Job of the CronJob, made by kube-controller-manager, finished")
    t_job = time.monotonic()
    assert job.status.succeeded == 1, f"the Job failed: {job.status}"
    assert job.metadata.owner_references[0].kind == "CronJob"
    ran = core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name={job.metadata.name}").items
    assert [p.spec.node_name for p in ran] == [realnode.NAME]
    assert ran[0].status.container_statuses[0].state.terminated.exit_code == 0
    evicted = events_once(core, namespace, "NodemedicEvicted", len(predicted))
    assert sorted(e.involved_object.name for e in evicted) == predicted
    assert TAINT in taint_keys(core, sick)
    upgrade(cluster, tmp_path, values=mode.replace("{schedule}", "0 0 1 1 *"))  # no further run during teardown
    print(f"\nplan predicted {predicted}; the CronJob's Job {job.metadata.name} ran on {ran[0].spec.node_name} "
          f"{t_job - t0:.1f}s after the schedule was set and evicted {sorted(e.involved_object.name for e in evicted)}")


def nodemedic(cluster: LocalCluster, *args: str) -> str:
    """`kubectl nodemedic ARGS`, as a user runs it: kubectl finds the plugin the package installs on the PATH."""
    env = dict(os.environ, PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               KUBECONFIG=str(cluster.kubeconfig))
    done = subprocess.run([str(paths.binary("kubectl")), "nodemedic", "-n", NAMESPACE, *args], env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kubectl nodemedic {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def test_kubectl_nodemedic_says_what_happens_to_each_node_and_why(
        installed: tuple[LocalCluster, float], tmp_path: Path) -> None:
    cluster, _ = installed
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    good, _ = quicker(SHIPPED_POLICY, SHIPPED_AGENT_CONFIG)
    # Back from the CronJob test to the Deployment that serves /status, /plan and /why, pinned to the real node.
    upgrade(cluster, tmp_path, policy=good, values=f"remediator:\n  mode: deployment\n"
                                                  f"  nodeSelector: {{kubernetes.io/hostname: {realnode.NAME}}}\n")
    wait_until(lambda: len(r := pods(core, "remediator")) == 2 and all(map(ready, r)), timeout=120,
               what="the remediator's two pods Ready again")
    for ns in [n.metadata.name for n in core.list_namespace().items if n.metadata.name.startswith("cron-")]:
        core.delete_namespace(ns)  # the CronJob test's work pods: the second kwok node is to be empty
    sick, empty = KWOK_NODES
    # Tainted and draining: KernelDeadlock on the first kwok node (the CronJob test left it so; set again so this
    # test stands alone) and a Deployment whose pods are bound to it past the scheduler, so evictions go on.
    set_condition_since(core, sick, "KernelDeadlock", "True", dt.timedelta(minutes=5))
    namespace = new_namespace(core, f"why-{secrets.token_hex(3)}")
    stuck = deployment("stuck", 1, KWOK_NODES)
    stuck["spec"]["template"]["spec"]["nodeName"] = sick
    del stuck["spec"]["template"]["spec"]["affinity"]  # so node fit finds it another node: evicted, not protected
    apps.create_namespaced_deployment(namespace, stuck)
    # Held by the breaker (3 nodes: the shipped 10 % rounds down to 0, the floor lets 1 be tainted) and empty of
    # all but DaemonSet pods, so a node autoscaler may remove it.
    wait_until(lambda: not [p for p in core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={empty}").items
                            if not any(o.kind == "DaemonSet" for o in p.metadata.owner_references or [])],
               timeout=90, what=f"{empty} empty of all but DaemonSet pods")
    set_condition_since(core, empty, "KernelDeadlock", "True", dt.timedelta(minutes=4))

    def leading() -> str | None:  # a rolled replica releases the Lease: wait for the next to take it
        holders = {lease.spec.holder_identity
                   for lease in client.CoordinationV1Api(cluster.api).list_namespaced_lease(NAMESPACE).items}
        return next((p.metadata.name for p in pods(core, "remediator") if p.metadata.name in holders), None)

    holder = wait_until(leading, timeout=60, what="a remediator pod holding the Lease")

    def told() -> str | None:
        out = nodemedic(cluster, "status")
        tainted = re.search(rf"^  {sick}\s+{TAINT}:NoSchedule\s", out, re.M)  # written on the Node, not only planned
        return out if "breaker     OPEN" in out and tainted and "stuck-" in out else None

    status = wait_until(told, timeout=90, what="status showing the taint, the breaker and the draining")
    assert status.splitlines()[0].startswith(f"leader      {holder} (Lease {NAMESPACE}/nodemedic-remediator")
    assert re.search(rf"^  hold\s+{TAINT}\s+{empty}\s+circuit breaker: 1/1 nodes tainted", status, re.M), status
    why_sick = nodemedic(cluster, "why", sick)
    assert "rule kernel-deadlock applies: KernelDeadlock=True for" in why_sick
    assert f"{TAINT}:NoSchedule since" in why_sick and "it stays while KernelDeadlock=True" in why_sick
    assert re.search(rf"(evicting {namespace}/stuck-\S+ \(RemovePodsViolatingNodeTaints\)|{namespace}/stuck-\S+ waits: "
                     rf"owner cool-down)", why_sick), why_sick
    why_empty = nodemedic(cluster, "why", empty)
    assert f"{TAINT} is held back: circuit breaker: 1/1 nodes tainted" in why_empty
    assert "only DaemonSet and mirror pods run here: a node autoscaler may remove the node as empty" in why_empty
    why_well = nodemedic(cluster, "why", realnode.NAME)
    assert "rule kernel-deadlock does not apply: KernelDeadlock is False, not True" in why_well
    assert not re.search(r"^  plan ", why_well, re.M), why_well  # nothing planned for it
    assert "pod(s) keep a node autoscaler from removing the node as empty" in why_well
    check = nodemedic(cluster, "check", realnode.NAME)
    assert check.startswith(f"{realnode.NAME}: agent ") and " is Running" in check.splitlines()[0]
    assert re.search(r"^  KernelDeadlock\s+False\s+\S+\s+agent\s", check, re.M), check
    print(f"\n$ kubectl nodemedic status\n{status}\n$ kubectl nodemedic why {sick}\n{why_sick}\n"
          f"$ kubectl nodemedic why {empty}\n{why_empty}\n$ kubectl nodemedic why {realnode.NAME}\n{why_well}\n"
          f"$ kubectl nodemedic check {realnode.NAME}\n{check}")
    for node in KWOK_NODES:
        set_condition_since(core, node, "KernelDeadlock", "False", dt.timedelta(0))


def test_metrics_server_serves_the_real_nodes_usage_read_from_its_kubelet(
        installed: tuple[LocalCluster, float]) -> None:
    cluster, _ = installed
    assert cluster.owned is not None
    core = client.CoreV1Api(cluster.api)
    metrics_server.start(cluster.owned)  # stopped with the cluster
    api = cluster.owned.api()
    (agent,) = [p for p in pods(core, "agent") if p.spec.node_name == realnode.NAME]

    def served() -> tuple[dict, dict] | None:
        nodes = {i["metadata"]["name"]: i for i in api.get("/apis/metrics.k8s.io/v1beta1/nodes")["items"]}
        try:
            pod = api.get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods/{agent.metadata.name}")
        except ApiError as e:
            assert e.status == 404, e
            return None
        return (nodes[realnode.NAME], pod) if realnode.NAME in nodes else None

    node, pod = wait_until(served, timeout=90, what=f"metrics.k8s.io serving {realnode.NAME} and its agent pod",
                           interval=1.0)
    (container,) = pod["containers"]
    print(f"\nmetrics-server v0.9.0 from the real kubelet: node {realnode.NAME} {node['usage']}, "
          f"agent pod {agent.metadata.name} {container['usage']} (window {pod['window']})")
    assert parse_quantity(node["usage"]["cpu"]) > 0 and parse_quantity(node["usage"]["memory"]) > 256 << 20
    # The agent's working set is tens of MiB (README: 26 MiB RSS on this node); the pod's own container.
    assert container["name"] == agent.spec.containers[0].name
    assert 5 << 20 < parse_quantity(container["usage"]["memory"]) < 512 << 20


def test_prometheus_scrapes_the_nodemedic_pods_on_the_real_node_and_the_shipped_alerts_evaluate(
        installed: tuple[LocalCluster, float], tmp_path: Path) -> None:
    """The pods as the chart's ServiceMonitors would have them scraped (job: the Service's name; namespace, pod and
    node labels), the chart's shipped PrometheusRule loaded: every alert evaluates against the real series, and none
    of the ones about a broken install (no leader, an agent not reporting) is pending or firing."""
    cluster, _ = installed
    core = client.CoreV1Api(cluster.api)
    scrape = []
    for component in ("agent", "remediator"):
        found = [p for p in pods(core, component) if p.spec.node_name == realnode.NAME and ready(p)]
        assert found, f"no {component} pod Ready on {realnode.NAME}"
        port = next(c.container_port for c in found[0].spec.containers[0].ports if c.name == "metrics")
        scrape.append({"job_name": f"nodemedic-{component}", "static_configs": [
            {"targets": [f"{p.status.pod_ip}:{port}"],
             "labels": {"namespace": NAMESPACE, "pod": p.metadata.name, "node": p.spec.node_name}} for p in found]})
    rules = chart_monitoring.write_rules(tmp_path / "rules.yaml",
                                         chart_monitoring.rule_groups(chart_monitoring.shipped()))
    server = prometheus.start(tmp_path / "prometheus", scrape, [rules])
    try:
        up = wait_until(lambda: (now := server.targets_up()) and set(now.values()) == {"up"} and now, timeout=60,
                        what="Prometheus scraping every nodemedic pod on the real node", interval=1.0)
        evaluated = wait_until(lambda: (now := server.rules()) and all(r["health"] != "unknown" for r in now)
                               and server.query('max(nodemedic_leader{job="nodemedic-remediator"})') and now,
                               timeout=60, what="every rule evaluated once, the leader gauge scraped", interval=1.0)
        # A rule evaluated before the gauge's first scrape saw no leader (NodemedicNoLeader pending, as Prometheus
        # should say then): the alerts are read after a whole evaluation round that had the gauge.
        seen = {r["name"]: r.get("lastEvaluation") for r in server.rules()}
        evaluated = wait_until(lambda: (now := server.rules()) and all(r.get("lastEvaluation") != seen[r["name"]]
                                                                       for r in now) and now,
                               timeout=30, what="a rule evaluation after the leader gauge was scraped", interval=0.5)
        (leader_gauge,) = server.query('sum(nodemedic_leader{job="nodemedic-remediator"})')
        conditions = server.query('count by (status) (nodemedic_agent_condition_status{job="nodemedic-agent"} == 1)')
        alerts = [(a["labels"]["alertname"], a["state"]) for a in server.alerts("firing") + server.alerts("pending")]
    finally:
        server.stop()
    print(f"\nPrometheus on the real node's pods: targets {sorted(up)}; rules "
          f"{[(r['name'], r['health']) for r in evaluated]}; leaders {leader_gauge['value'][1]}; agent conditions by "
          f"status {[(c['metric']['status'], c['value'][1]) for c in conditions]}; alerts {alerts}")
    assert [(r["name"], r.get("lastError")) for r in evaluated if r["health"] != "ok"] == []
    assert {r["name"] for r in evaluated} == chart_monitoring.alert_names(
        chart_monitoring.rule_groups(chart_monitoring.shipped()))
    assert leader_gauge["value"][1] == "1"  # of two replicas, one leads
    assert not {name for name, _ in alerts} & {"NodemedicNoLeader", "NodemedicAgentNotReporting"}, alerts

