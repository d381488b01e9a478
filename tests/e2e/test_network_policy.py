"""The chart's NetworkPolicy enforced by a real implementation: kube-router's network policy controller alone
(`--run-firewall`, neither its router nor its service proxy), built from the Go module proxy, on the real node
(hack/kcp/realnode.py: kubelet, containerd, the bridge CNI). The chart is installed as it ships (its policy off at
first), the remediator's pods on the real node; beside them three clients: a scraper (the default
`networkPolicy.scrapers`: a `app.kubernetes.io/name: prometheus` pod in namespace `monitoring`), an impostor (the same
label in another namespace) and an outsider, each asking the remediator's /healthz. Without the policy all three
get an answer; with the policy the chart renders, only the scraper does, and an address in
`networkPolicy.apiServerCIDRs` is admitted.

The API server's pod proxy reaches the pod in every case here: this API server runs in the real node's own host
network, and a node's own traffic to its pods is always admitted (so are the kubelet's probes); on a cluster whose
API server is off the node, its address is the `apiServerCIDRs` ipBlock, which the outsider's address stands for.

One real node runs on a machine at a time, so this module shares the xdist group of the other real-node tests."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from hack.kcp import image, paths, realnode
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import new_namespace
from tests.waiting import wait_until

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "nodemedic"
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real_node")]

# The one version the Go module proxy lists; only its firewall runs, on this machine, for this test.
SERVICE_RANGE = "10.0.0.0/24"  # hack/kcp/controlplane.py's --service-cluster-ip-range
RELEASE_NAMESPACE = "nodemedic"


def kube_router() -> Path:
    """The kube-router binary `hack/cluster build` made (a component of its own: about 10 minutes cold)."""
    binary = paths.binary("kube-router")
    if not binary.is_file():
        pytest.fail(f"{binary} not found: run `hack/cluster build` (it builds kube-router from the Go module proxy)",
                    pytrace=False)
    return binary


def kube_router_chains() -> list[str]:
    return [line for line in subprocess.run(["iptables", "-S"], capture_output=True, text=True,
                                            check=True).stdout.splitlines() if "KUBE-ROUTER" in line]


def kube_router_ipsets() -> list[str]:
    return [s for s in subprocess.run(["ipset", "list", "-n"], capture_output=True, text=True,
                                      check=True).stdout.split() if s.startswith("KUBE-")]


@pytest.fixture(scope="module")
def enforced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """The real-node cluster with kube-router enforcing NetworkPolicies on the real node; afterwards none of its
    chains or ipsets is left on the machine."""
    if shutil.which("ipset") is None:
        pytest.fail("ipset not found: kube-router's policies need it (`hack/cluster build` installs it)", pytrace=False)
    binary = kube_router()
    try:
        with _started(f"pytest-{os.getpid()}-netpol-{secrets.token_hex(2)}", 1, real_nodes=1) as cluster:
            log = tmp_path_factory.mktemp("kube-router") / "kube-router.log"
            with log.open("w") as out:
                process = subprocess.Popen(
                    [str(binary), "--run-firewall=true", "--run-router=false", "--run-service-proxy=false",
                     f"--kubeconfig={cluster.kubeconfig}", f"--hostname-override={realnode.NAME}",
                     f"--service-cluster-ip-range={SERVICE_RANGE}", "--health-port=0", "--iptables-sync-period=5s"],
                    stdout=out, stderr=subprocess.STDOUT)
            try:
                wait_until(lambda: process.poll() is not None or kube_router_chains(), timeout=60,
                           what="kube-router's chains in the filter table")
                assert process.poll() is None, log.read_text()[-3000:]
                yield cluster
            finally:
                process.terminate()
                process.wait(30)
                # Removes most of its chains and ipsets; its service proxy's clean-up then fails here (no IPVS).
                subprocess.run([str(binary), "--cleanup-config"], capture_output=True, timeout=60, check=False)
    finally:
        # The real node's own clean-up has removed every KUBE-* chain left, so no rule holds the ipsets any more.
        for name in kube_router_ipsets():
            subprocess.run(["ipset", "destroy", name], capture_output=True, timeout=30, check=False)
    assert kube_router_chains() == [] and kube_router_ipsets() == []


def chart(*values: str, namespace: str) -> list[dict[str, Any]]:
    args = [a for v in values for a in ("--set", v)]
    done = subprocess.run([str(paths.binary("helm")), "template", "nodemedic", str(CHART), "-n", namespace, *args],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def pod(name: str, labels: dict[str, str], command: list[str]) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": realnode.NAME, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": image.reference(), "imagePullPolicy": "Never",
                                     "command": command}]}}


def running(core: client.CoreV1Api, namespace: str, name: str) -> str:
    """The pod's IP once it runs."""
    return str(wait_until(lambda: (p := core.read_namespaced_pod(name, namespace)).status.phase == "Running"
                          and p.status.pod_ip, timeout=120, what=f"{namespace}/{name} Running"))


def kubectl(cluster: LocalCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(paths.binary("kubectl")), f"--kubeconfig={cluster.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=60, check=False)


def reaches(cluster: LocalCluster, client_pod: str, address: str) -> bool:
    """Whether `client_pod` ("namespace/name") gets an HTTP answer (any status) from the remediator at `address`."""
    namespace, name = client_pod.split("/")
    probe = ("import urllib.error, urllib.request\n"
             f"try:\n    urllib.request.urlopen('http://{address}/healthz', timeout=3)\n    print('reached')\n"
             "except urllib.error.HTTPError:\n    print('reached')\n"  # an answer, whatever its status
             "except OSError as e:\n    print('refused', e)")
    done = kubectl(cluster, "exec", "-n", namespace, name, "--", "python3", "-c", probe)
    assert done.returncode == 0, done.stderr
    return done.stdout.startswith("reached")


def through_the_proxy(cluster: LocalCluster, namespace: str, pod: str, port: int) -> bool:
    done = kubectl(cluster, "get", "--raw", f"/api/v1/namespaces/{namespace}/pods/{pod}:{port}/proxy/healthz",
                   "--request-timeout=10s")
    return done.returncode == 0 and done.stdout.strip() == "ok"


def cordoned(core: client.CoreV1Api, nodes: list[str], on: bool) -> None:
    for node in nodes:
        core.patch_node(node, {"spec": {"unschedulable": on}})


def installed_remediator(cluster: LocalCluster, core: client.CoreV1Api, namespace: str) -> client.V1Pod:
    """The chart as it ships in `namespace` (one remediator replica, the NetworkPolicy off for now, the agent on no
    node: its shipped repair commands would reboot this machine), the kwok node cordoned meanwhile so the remediator
    runs on the real node; its pod once Ready."""
    kwok = [n.metadata.name for n in core.list_node().items if n.metadata.name != realnode.NAME]
    cordoned(core, kwok, True)
    repository, tag = image.reference().rsplit(":", 1)
    try:
        done = subprocess.run([str(paths.binary("helm")), "install", "nodemedic", str(CHART), "-n", namespace,
                               f"--set=image.repository={repository}", f"--set=image.tag={tag}",
                               "--set=image.pullPolicy=Never", "--set=remediator.replicas=1",
                               "--set=networkPolicy.enabled=false",
                               "--set-string=agent.nodeSelector.nodemedic\\.io/e2e-no-agent=true",
                               f"--kubeconfig={cluster.kubeconfig}"],
                              capture_output=True, text=True, timeout=180, check=False)
        assert done.returncode == 0, done.stderr[-3000:]

        def ready_remediator() -> client.V1Pod | None:
            for p in core.list_namespaced_pod(namespace, label_selector="app.kubernetes.io/component=remediator").items:
                if p.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                       for c in p.status.conditions or []):
                    return p
            return None

        pod = wait_until(ready_remediator, timeout=180, what="the chart's remediator pod Ready on the real node")
    finally:
        cordoned(core, kwok, False)
    assert pod.spec.node_name == realnode.NAME
    return pod


def test_only_the_scrapers_and_the_listed_addresses_reach_the_remediator_s_port(enforced: LocalCluster) -> None:
    core = client.CoreV1Api(enforced.api)
    namespace = new_namespace(core, RELEASE_NAMESPACE)
    new_namespace(core, "monitoring")
    rendered = chart(namespace=namespace)
    deployment = next(d for d in rendered if d["kind"] == "Deployment")["spec"]["template"]
    port = next(p["containerPort"] for p in deployment["spec"]["containers"][0]["ports"] if p["name"] == "metrics")
    remediator = installed_remediator(enforced, core, namespace)
    idle = ["sleep", "3600"]
    core.create_namespaced_pod("monitoring", pod("scraper", {"app.kubernetes.io/name": "prometheus"}, idle))
    core.create_namespaced_pod(namespace, pod("impostor", {"app.kubernetes.io/name": "prometheus"}, idle))
    core.create_namespaced_pod(namespace, pod("outsider", {}, idle))
    address = f"{remediator.status.pod_ip}:{port}"
    outsider_ip = running(core, namespace, "outsider")
    running(core, namespace, "impostor")
    running(core, "monitoring", "scraper")
    clients = {"scraper": "monitoring/scraper", "impostor": f"{namespace}/impostor",
               "outsider": f"{namespace}/outsider"}

    def who_reaches() -> dict[str, bool]:
        return {who: reaches(enforced, c, address) for who, c in clients.items()} | {
            "API server's proxy": through_the_proxy(enforced, namespace, remediator.metadata.name, port)}

    everyone = {"scraper": True, "impostor": True, "outsider": True, "API server's proxy": True}
    wait_until(lambda: who_reaches() == everyone, timeout=60, what="every client reaching the port, no policy yet")

    def apply(policy: dict[str, Any]) -> None:
        done = subprocess.run([str(paths.binary("kubectl")), f"--kubeconfig={enforced.kubeconfig}", "apply", "-f",
                               "-"], input=yaml.safe_dump(policy), capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, done.stderr

    (policy,) = [d for d in rendered if d["kind"] == "NetworkPolicy"]
    apply(policy)
    wait_until(lambda: who_reaches() == {**everyone, "impostor": False, "outsider": False}, timeout=60,
               what="only the scraper and the proxy reaching the port under the chart's default policy")

    (widened,) = [d for d in chart(f"networkPolicy.apiServerCIDRs={{{outsider_ip}/32}}", namespace=namespace)
                  if d["kind"] == "NetworkPolicy"]
    apply(widened)
    wait_until(lambda: who_reaches() == {**everyone, "impostor": False}, timeout=60,
               what="the address in networkPolicy.apiServerCIDRs admitted too, the impostor still not")
