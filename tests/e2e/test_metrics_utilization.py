"""LowNodeUtilization on measured usage (`metricsUtilization`) from the real sources: metrics-server (the pinned one)
serving `metrics.k8s.io` through kube-apiserver's aggregation layer, and a real Prometheus. Both read kwok's emulation
of each node's kubelet resource metrics (hack/kcp/kwok-metrics.yaml), where a pod uses what its
`kwok.x-k8s.io/usage-*` annotations say. One node is hot by usage but not by requests: with requests (the default)
nothing moves; with metricsUtilization nodemedic's `plan` and a real `run --once`, and descheduler v0.36.0 with the
same DeschedulerPolicy against the same API, relieve it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client

from hack.kcp import controlplane, descheduler, metrics_server, paths, prometheus
from hack.kcp.nodes import ALLOCATABLE, RESOURCE_METRICS_PATH
from remediator.state.quantity import parse_quantity
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import deployment, new_namespace, place_on_first
from tests.waiting import wait_until

# One xdist worker runs the whole module: its tests share one cluster with the metrics API registered.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("metrics_utilization")]

NODES = ["kwok-node-0", "kwok-node-1", "kwok-node-2"]
HOT, COLD = NODES[0], NODES[1:]
GI = 1 << 30
# kwok nodes offer 7910m of cpu and 31Gi of memory. Every node runs a DaemonSet pod of "system daemons" using 300m and
# 1Gi and requesting nothing (a node with no pod reports no usage, and metrics-server drops a node whose usage is 0).
# kwok-node-0 also runs four pods requesting 500m each (25 %: by requests no node is over the 50 % target, and
# descheduler's and nodemedic's LowNodeUtilization do nothing), but they use 1400m each: the node uses 5900m (75 %).
# Relieving it to the 50 % target (3955m) takes two of them: 4500m, then 3100m. The requests are large enough for
# kube-scheduler's default scoring to prefer the cold nodes for the replacements: at 100m, NodeResourcesFit (+1 for a
# cold node) and NodeResourcesBalancedAllocation (+1 for the hot one) tied all three nodes, and a replacement went
# back to the hot node at random.
POD_CPU, POD_MEMORY = 1400, 1 * GI
POD_REQUEST = "500m"
DAEMON_CPU, DAEMON_MEMORY = 300, 1 * GI
PODS, EXPECTED_EVICTIONS = 4, 2
NODE_USAGE = {HOT: (PODS * POD_CPU + DAEMON_CPU, PODS * POD_MEMORY + DAEMON_MEMORY),
              COLD[0]: (DAEMON_CPU, DAEMON_MEMORY), COLD[1]: (DAEMON_CPU, DAEMON_MEMORY)}
IDLE_USAGE = {n: (DAEMON_CPU, DAEMON_MEMORY) for n in NODES}
ALLOCATABLE_CORES = int(ALLOCATABLE["cpu"].removesuffix("m")) / 1000
# What the Prometheus source asks: each node's CPU busy fraction, from the kubelet resource metrics Prometheus scrapes
# (the instance label is the node's name, as Prometheus's Kubernetes node discovery sets it).
CPU_QUERY = f"sum by (instance) (rate(node_cpu_usage_seconds_total[20s])) / {ALLOCATABLE_CORES}"


def descheduler_policy(*, measured: bool) -> dict:
    args: dict = {"thresholds": {"cpu": 20, "memory": 20}, "targetThresholds": {"cpu": 50, "memory": 50}}
    doc: dict = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
                 "profiles": [{"name": "usage",
                               "pluginConfig": [{"name": "DefaultEvictor", "args": {}},
                                                {"name": "LowNodeUtilization", "args": args}],
                               "plugins": {"balance": {"enabled": ["LowNodeUtilization"]}}}]}
    if measured:
        args["metricsUtilization"] = {"source": "KubernetesMetrics"}
        doc["metricsProviders"] = [{"source": "KubernetesMetrics"}]
    return doc


@dataclass
class Measured:
    """The module's cluster and the two real sources of measured usage beside it."""

    cluster: LocalCluster
    prometheus: prometheus.Prometheus
    targets: Path  # Prometheus's file discovery of the kubelets (`discover`)


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Measured]:
    """A cluster of its own (three kwok nodes emulating their kubelet metrics, nothing else running) with
    metrics-server registered, the system-daemon pods on every node, and Prometheus scraping every node's resource
    metrics."""
    with _started(f"pytest-{os.getpid()}-metrics-{secrets.token_hex(2)}", len(NODES), kwok_metrics=True) as started:
        owned = started.owned
        assert owned is not None
        daemons(client.AppsV1Api(started.api))
        try:
            metrics_server.start(owned)
        except Exception as e:  # noqa: BLE001 - a start-up failure fails the tests with its message
            pytest.fail(f"metrics-server failed to start: {e}", pytrace=False)
        workdir = tmp_path_factory.mktemp("prometheus")
        targets = workdir / "kubelets.json"
        discover(started, targets)
        server = prometheus.start(workdir, [{
            "job_name": "kubelet-resource", "scheme": "https", "scrape_interval": "2s",
            "tls_config": {"ca_file": str(owned.pki_dir / "ca.crt")},
            "file_sd_configs": [{"files": [str(targets)]}]}], [])
        try:
            yield Measured(started, server, targets)
        finally:
            server.stop()


def discover(cluster: LocalCluster, targets: Path) -> None:
    """Prometheus's targets: every node whose metrics-path annotation sends a scraper to kwok's emulation, scraped
    at the node's address on kwok's port, with the node's name as the instance label (what Prometheus's Kubernetes
    node discovery sets; Debian's Prometheus is built without that discovery, so the test writes the file the
    file-based discovery reads, and Prometheus picks up each change)."""
    assert cluster.owned is not None
    port = cluster.owned.ports["kwok"]
    found = []
    for node in client.CoreV1Api(cluster.api).list_node().items:
        path = (node.metadata.annotations or {}).get(RESOURCE_METRICS_PATH)
        address = next((a.address for a in node.status.addresses or [] if a.type == "InternalIP"), None)
        if path and address:
            found.append({"targets": [f"{address}:{port}"],
                          "labels": {"instance": node.metadata.name, "__metrics_path__": path}})
    tmp = targets.with_suffix(".tmp")
    tmp.write_text(json.dumps(found))
    tmp.rename(targets)  # whole, never half-written, when Prometheus reads it


def daemons(apps: client.AppsV1Api) -> None:
    apps.create_namespaced_daemon_set("kube-system", {
        "metadata": {"name": "system-daemons"},
        "spec": {"selector": {"matchLabels": {"app": "system-daemons"}}, "template": {
            "metadata": {"labels": {"app": "system-daemons"}, "annotations": usage(DAEMON_CPU, DAEMON_MEMORY)},
            "spec": {"containers": [{"name": "daemons", "image": "registry.invalid/daemons:1"}]}}}})


def usage(cpu_milli: int, memory: int) -> dict[str, str]:
    """The annotations kwok's usage emulation reads (hack/kcp/kwok-metrics.yaml)."""
    return {"kwok.x-k8s.io/usage-cpu": f"{cpu_milli}m", "kwok.x-k8s.io/usage-memory": f"{memory // (1 << 20)}Mi"}


def node_usage(cluster: LocalCluster) -> dict[str, tuple[int, int]]:
    """node -> (cpu millicores, memory bytes) as metrics.k8s.io serves them now."""
    assert cluster.owned is not None
    items = cluster.owned.api().get("/apis/metrics.k8s.io/v1beta1/nodes")["items"]
    return {i["metadata"]["name"]: (round(parse_quantity(i["usage"]["cpu"]) * 1000),
                                    round(parse_quantity(i["usage"]["memory"]))) for i in items}


def pod_cpu(cluster: controlplane.Cluster, namespace: str) -> dict[str, int]:
    """pod -> cpu millicores as metrics.k8s.io serves them now."""
    items = cluster.api().get(f"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods")["items"]
    return {i["metadata"]["name"]: round(sum(parse_quantity(c["usage"]["cpu"]) for c in i["containers"]) * 1000)
            for i in items}


def near(got: dict[str, tuple[int, int]], want: dict[str, tuple[int, int]]) -> bool:
    """Every node measured within 3 % of the cpu and memory its pods' annotations add up to (a CPU rate over two
    scrapes is not exact)."""
    return set(got) == set(want) and all(
        abs(got[n][0] - want[n][0]) <= 0.03 * want[n][0] and abs(got[n][1] - want[n][1]) <= 0.03 * want[n][1]
        for n in want)


def wait_measured(cluster: LocalCluster, want: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """Until metrics-server serves what the pods use now (it scrapes every 10 s; a CPU rate needs two scrapes)."""
    return wait_until(lambda: (got := node_usage(cluster)) and near(got, want) and got, timeout=90,
                      what=f"metrics.k8s.io serving {want}", interval=1.0)


@pytest.fixture
def hot_node(measured: Measured) -> Iterator[tuple[str, dict[str, str]]]:
    """Four one-pod Deployments on kwok-node-0 (one owner per pod: nodemedic's owner cool-down allows one eviction
    per owner and cycle), each pod using 1400m and 1Gi: (namespace, pod -> node), once metrics-server measures it."""
    cluster = measured.cluster
    core, apps = client.CoreV1Api(cluster.api), client.AppsV1Api(cluster.api)
    namespace = f"busy-{secrets.token_hex(3)}"
    new_namespace(core, namespace)

    def create() -> None:
        for i in range(PODS):
            busy = deployment(f"busy-{i}", 1, NODES, cpu=POD_REQUEST)
            busy["spec"]["template"]["metadata"]["annotations"] = usage(POD_CPU, POD_MEMORY)
            apps.create_namespaced_deployment(namespace, busy)
        wait_until(lambda: len(running(core, namespace)) == PODS, timeout=60, what=f"{PODS} Running pods")

    place_on_first(core, NODES, create)
    placed = running(core, namespace)
    assert set(placed.values()) == {HOT}
    wait_measured(cluster, NODE_USAGE)
    # A new container's CPU rate takes metrics-server two scrapes, and the node's may be served before it: a pod
    # without usage is one nodemedic (rightly) will not evict.
    assert cluster.owned is not None
    owned = cluster.owned
    wait_until(lambda: (got := pod_cpu(owned, namespace)) and set(got) == set(placed)
               and all(abs(cpu - POD_CPU) <= 0.03 * POD_CPU for cpu in got.values()) and got, timeout=60,
               what=f"metrics.k8s.io serving the usage of the pods of {namespace}", interval=1.0)
    yield namespace, placed
    core.delete_namespace(namespace)
    wait_until(lambda: not core.list_namespaced_pod(namespace).items, timeout=60, what=f"the pods of {namespace} gone")
    wait_measured(cluster, IDLE_USAGE)


def running(core: client.CoreV1Api, namespace: str) -> dict[str, str]:
    """pod -> node of the namespace's Running pods."""
    return {p.metadata.name: p.spec.node_name for p in core.list_namespaced_pod(namespace).items
            if p.status.phase == "Running" and p.metadata.deletion_timestamp is None}


def nodemedic(*args: str, cluster: LocalCluster) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "remediator", *args, f"--kubeconfig={cluster.kubeconfig}"],
                          check=False, capture_output=True, text=True, timeout=180)


def planned(policy_file: Path, cluster: LocalCluster) -> list[dict]:
    done = nodemedic("plan", f"--policy={policy_file}", "--json", cluster=cluster)
    assert done.returncode == 0, done.stderr[-3000:]
    return list(json.loads(done.stdout)["evictions"])


def write(tmp_path: Path, doc: dict, name: str = "policy.yaml") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=1))  # JSON is YAML: the file is what a user would hand both tools
    return path


def test_the_metrics_api_is_served_by_metrics_server_through_kube_apiserver(measured: Measured) -> None:
    cluster = measured.cluster
    assert cluster.owned is not None
    kubectl = paths.binary("kubectl")
    if not kubectl.exists():
        pytest.fail(f"kubectl is not built ({kubectl} missing): run `make build`", pytrace=False)
    wait_measured(cluster, IDLE_USAGE)
    done = subprocess.run([str(kubectl), f"--kubeconfig={cluster.kubeconfig}", "get", "--raw",
                           "/apis/metrics.k8s.io/v1beta1/nodes"], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    got = {i["metadata"]["name"]: i["usage"] for i in json.loads(done.stdout)["items"]}
    print(f"\nkubectl get --raw /apis/metrics.k8s.io/v1beta1/nodes (metrics-server {metrics_server.APISERVICE}): "
          f"{got}")
    assert set(got) == set(NODES)
    service = cluster.owned.api().get(f"/apis/apiregistration.k8s.io/v1/apiservices/{metrics_server.APISERVICE}")
    assert service["spec"]["service"] == {"namespace": metrics_server.NAMESPACE, "name": metrics_server.SERVICE,
                                          "port": cluster.owned.ports["metrics_server"]}


def test_a_node_hot_by_usage_but_not_by_requests_is_relieved_only_with_metrics_utilization(
        measured: Measured, hot_node: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    cluster = measured.cluster
    by_requests = planned(write(tmp_path, descheduler_policy(measured=False), "requests.yaml"), cluster)
    by_usage = planned(write(tmp_path, descheduler_policy(measured=True), "usage.yaml"), cluster)
    print(f"\nnodemedic plan: by requests {len(by_requests)} evictions, by metrics.k8s.io usage {len(by_usage)}")
    assert by_requests == []
    assert len(by_usage) == EXPECTED_EVICTIONS
    assert {e["node"] for e in by_usage} == {HOT}
    assert all("by metrics.k8s.io usage" in e["reason"] for e in by_usage), by_usage


def test_descheduler_with_the_same_policy_and_api_evicts_as_many_from_the_same_node(
        measured: Measured, hot_node: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    cluster = measured.cluster
    namespace, _ = hot_node
    counts, names = {}, {}
    for measured_usage in (False, True):
        result = descheduler_cycle(cluster, descheduler_policy(measured=measured_usage),
                                   tmp_path / f"descheduler-{measured_usage}")
        evicted = [e for e in result.evictions if e.namespace == namespace]
        counts[measured_usage] = (len(evicted), {e.node for e in evicted})
        names[measured_usage] = sorted(e.name for e in evicted)
    ours = planned(write(tmp_path, descheduler_policy(measured=True)), cluster)
    print(f"\ndescheduler v0.36.0 (dry run) on metrics-server's usage: by requests {counts[False][0]}, by usage "
          f"{counts[True][0]} {names[True]} from {sorted(counts[True][1])}; nodemedic plan by usage {len(ours)} "
          f"{sorted(e['name'] for e in ours)}")
    assert counts[False] == (0, set())
    assert counts[True] == (EXPECTED_EVICTIONS, {HOT})
    assert len(ours) == EXPECTED_EVICTIONS


def descheduler_cycle(cluster: LocalCluster, doc: dict, workdir: Path,
                      attempts: int = 5) -> descheduler.CycleResult:
    """One dry-run descheduler cycle. Its metrics collector lists the nodes from the dry-run mirror, which may not
    hold every node yet at the first collection (the race hack/kcp/descheduler.py describes): the cycle then fails
    with "unable to find node ... in the collected metrics"; such a run is run again, and only such a run."""
    failed: list[str] = []
    for attempt in range(1, attempts + 1):
        try:
            result = descheduler.one_cycle(cluster.kubeconfig, doc, workdir=workdir / str(attempt))
        except descheduler.DeschedulerError as e:
            if "in the collected metrics" not in str(e):
                raise
            failed.append(f"run {attempt}: a node missing from the collected metrics")
            continue
        if failed:
            print(f"\ndescheduler runs discarded: {failed}")
        return result
    raise AssertionError(f"descheduler failed every run: {failed}")


def test_a_real_run_evicts_what_plan_predicted_and_the_scheduler_moves_them_off_the_hot_node(
        measured: Measured, hot_node: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    cluster = measured.cluster
    namespace, before = hot_node
    policy_file = write(tmp_path, descheduler_policy(measured=True))
    predicted = sorted(e["name"] for e in planned(policy_file, cluster))
    done = nodemedic("run", "--once", f"--policy={policy_file}", "--listen=", cluster=cluster)
    assert done.returncode == 0, done.stderr[-3000:]
    core = client.CoreV1Api(cluster.api)
    after = wait_until(lambda: (now := running(core, namespace)) and len(now) == PODS and set(now) != set(before)
                       and now, timeout=60, what="the evicted pods replaced and Running")
    gone = sorted(set(before) - set(after))
    print(f"\nrun --once evicted {gone}; pods per node now "
          f"{ {n: list(after.values()).count(n) for n in NODES} }")
    assert gone == predicted and len(gone) == EXPECTED_EVICTIONS
    assert list(after.values()).count(HOT) == PODS - EXPECTED_EVICTIONS


def prometheus_policy(url: str, namespace: str, query: str) -> dict:
    """LowNodeUtilization on a Prometheus query, the token in a Secret as descheduler reads it."""
    doc = descheduler_policy(measured=False)
    doc["metricsProviders"] = [{"source": "Prometheus", "prometheus": {
        "url": url, "authToken": {"secretReference": {"namespace": namespace, "name": "prom-token"}}}}]
    doc["profiles"][0]["pluginConfig"][1]["args"] = {
        "thresholds": {"MetricResource": 20}, "targetThresholds": {"MetricResource": 50},
        "metricsUtilization": {"source": "Prometheus", "prometheus": {"query": query}}}
    return doc


def token_secret(core: client.CoreV1Api, namespace: str) -> str:
    token = secrets.token_hex(16)
    core.create_namespaced_secret(namespace, {"metadata": {"name": "prom-token"},
                                              "stringData": {"prometheusAuthToken": token}})
    return token


def scores(measured: Measured) -> dict[str, float]:
    """node -> value of CPU_QUERY, asked of Prometheus directly."""
    return {r["metric"]["instance"]: round(float(r["value"][1]), 3) for r in measured.prometheus.query(CPU_QUERY)}


def test_a_node_missing_from_metrics_server_and_from_prometheus_evicts_nothing_and_says_so(
        measured: Measured, hot_node: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    """Without its metrics-path annotation the hot node's metrics are read from the kubelet's own path, which kwok
    does not serve: metrics-server's scrape of it fails, and Prometheus's discovery drops it. Stale samples (older than
    maxAge) are the unit tests' (tests/unit/remediator/state/measured/test_resource_metrics_api.py)."""
    cluster = measured.cluster
    namespace, _ = hot_node
    core = client.CoreV1Api(cluster.api)
    token_secret(core, namespace)
    policies = {"metrics.k8s.io": write(tmp_path, descheduler_policy(measured=True), "usage.yaml"),
                "Prometheus": write(tmp_path, prometheus_policy(measured.prometheus.url, namespace, CPU_QUERY),
                                    "prometheus.yaml")}
    core.patch_node(HOT, {"metadata": {"annotations": {RESOURCE_METRICS_PATH: None}}})
    discover(cluster, measured.targets)
    try:
        wait_until(lambda: HOT not in node_usage(cluster), timeout=60, what=f"metrics-server dropping {HOT}",
                   interval=1.0)
        wait_until(lambda: (now := scores(measured)) and HOT not in now and now, timeout=60,
                   what=f"Prometheus's answer without {HOT}", interval=1.0)
        for source, policy_file in policies.items():
            done = nodemedic("plan", f"--policy={policy_file}", "--json", cluster=cluster)
            assert done.returncode == 0, done.stderr[-3000:]
            print(f"\n{source} without {HOT}: plan {json.loads(done.stdout)['evictions']}")
            assert json.loads(done.stdout)["evictions"] == []
            assert "nodes without fresh usage" in done.stderr and HOT in done.stderr, (source, done.stderr[-2000:])
    finally:
        core.patch_node(HOT, {"metadata": {"annotations": {RESOURCE_METRICS_PATH: f"/metrics/nodes/{HOT}/metrics/"
                                                                                  "resource"}}})
        discover(cluster, measured.targets)
        wait_measured(cluster, NODE_USAGE)


def test_with_a_prometheus_query_on_scraped_kubelet_metrics_plan_and_run_move_one_pod_off_the_hot_node(
        measured: Measured, hot_node: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    cluster = measured.cluster
    namespace, before = hot_node
    core = client.CoreV1Api(cluster.api)
    token = token_secret(core, namespace)
    expected = {n: round(cpu / 1000 / ALLOCATABLE_CORES, 3) for n, (cpu, _) in NODE_USAGE.items()}
    series = wait_until(lambda: (now := scores(measured)) and set(now) == set(NODES)
                        and all(abs(now[n] - expected[n]) <= 0.02 for n in NODES) and now, timeout=60,
                        what=f"Prometheus answering {expected}", interval=1.0)
    sent_before = len(measured.prometheus.queries())
    policy_file = write(tmp_path, prometheus_policy(measured.prometheus.url, namespace, CPU_QUERY))
    predicted = planned(policy_file, cluster)
    done = nodemedic("run", "--once", f"--policy={policy_file}", "--listen=", cluster=cluster)
    assert done.returncode == 0, done.stderr[-3000:]
    assert token not in done.stdout + done.stderr
    sent = measured.prometheus.queries()[sent_before:]
    print(f"\nquery nodemedic sent (Prometheus's query log, {len(sent)} times): {sorted(set(sent))}\n"
          f"series Prometheus returned (instance -> value): {series}\n"
          f"plan: evict {[(e['name'], e['node']) for e in predicted]} ({predicted[0]['reason'] if predicted else ''})")
    assert set(sent) == {CPU_QUERY} and len(sent) >= 2  # plan's and the run's
    assert len(predicted) == 1 and predicted[0]["node"] == HOT
    assert "by Prometheus query" in predicted[0]["reason"]
    after = wait_until(lambda: (now := running(core, namespace)) and len(now) == PODS and set(now) != set(before)
                       and now, timeout=60, what="the evicted pod replaced and Running")
    assert sorted(set(before) - set(after)) == [predicted[0]["name"]]
