"""nodemedic on the real node (hack/kcp/realnode.py) as tests/e2e/test_repair_real_node.py sets it up, for the repair
benchmark: the chart with the image, the agent's repair commands aimed at this machine's stand-in for systemctl, and
the remediator as a host process with the chart's remediator ServiceAccount token.

Why each piece is so:
- The agent pod restarts the kubelet with `hack/cluster node-service restart kubelet --state-dir ...`
  (hack/kcp/nodeservice.py: these machines have no systemd) through the shipped nsenter prefix, aimed at the
  control plane's etcd instead of PID 1: PID 1 of these VMs is not the host's init, and its namespaces cannot be
  opened even by root. Reboots are refused (`reboot: null`): the benchmark's ladder never asks for one.
- The remediator runs on the host (the chart's replicas at 0): its pods would otherwise live on the only node that
  runs containers, the one whose kubelet the benchmark stops. It authenticates as the chart's remediator
  ServiceAccount, so the ValidatingAdmissionPolicy that guards the repair annotation lets it write.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hack.bench.lib import child
from hack.kcp import paths, realnode
from hack.kcp.api import Api, ApiError
from hack.kcp.controlplane import Cluster
from hack.kcp.measure import wait
from hack.kcp.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
CHART = ROOT / "deploy" / "helm" / "nodemedic"
SHIPPED_AGENT_CONFIG = ROOT / "deploy" / "agent" / "default.yaml"
NAMESPACE = "nodemedic"
AGENT_PODS = "app.kubernetes.io%2Fcomponent%3Dagent"  # label selector, URL-encoded
REMEDIATOR_DEPLOYMENT = "nodemedic-remediator"


def tool(cluster: Cluster, name: str, *args: str, timeout: float = 300) -> str:
    """helm or kubectl against the cluster; RuntimeError with its stderr when it fails."""
    done = subprocess.run([str(paths.binary(name)), f"--kubeconfig={cluster.kubeconfig}", *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: {done.stderr[-3000:]}")
    return done.stdout


def agent_config(cluster: Cluster, heartbeat: str | None = None) -> str:
    """The shipped agent config with this machine's kubelet restart (see the module docstring), and `heartbeat`
    instead of the shipped one where given."""
    doc = yaml.safe_load(SHIPPED_AGENT_CONFIG.read_text())
    if heartbeat is not None:
        doc["heartbeat"] = heartbeat
    hack = [sys.executable, str(ROOT / "hack" / "cluster")]
    etcd = next(p.pid for p in cluster.processes if p.name == "etcd")
    prefix = doc["repair"]["hostCommandPrefix"]
    if prefix[:3] != ["nsenter", "--target", "1"]:
        raise RuntimeError(f"the shipped hostCommandPrefix changed: {prefix}")
    doc["repair"]["hostCommandPrefix"] = ["nsenter", "--target", str(etcd), *prefix[3:]]
    doc["repair"]["commands"] = {
        "restart": {"kubelet": [*hack, "node-service", "restart", "kubelet", "--state-dir", str(cluster.state_dir)],
                    "containerd": None, "crio": None},
        "reboot": None,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def cordon(api: Api, nodes: list[str], on: bool) -> None:
    for n in nodes:
        api.request("PATCH", f"/api/v1/nodes/{n}", {"spec": {"unschedulable": on}},
                    content_type="application/strategic-merge-patch+json")


def agent_ready(api: Api) -> bool:
    """The agent's pod on the real node is Running with every container ready."""
    for p in api.get(f"/api/v1/namespaces/{NAMESPACE}/pods?labelSelector={AGENT_PODS}")["items"]:
        statuses = p["status"].get("containerStatuses") or []
        if p["spec"].get("nodeName") == realnode.NAME and statuses and all(c.get("ready") for c in statuses):
            return True
    return False


def install(cluster: Cluster, workdir: Path, reference: str, kwok_nodes: list[str], *,
            heartbeat: str | None = None) -> None:
    """The chart with the image `reference` (pullPolicy Never), the agent config above and no remediator replicas;
    returns once the agent's pod is ready on the real node. The kwok nodes are cordoned meanwhile, as in the e2e
    test, so nothing of the chart lands on them."""
    api = cluster.api()
    repository, tag = reference.rsplit(":", 1)
    values = workdir / "values.yaml"
    values.write_text(yaml.safe_dump({
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "agent": {"config": agent_config(cluster, heartbeat)},
        "remediator": {"replicas": 0}}))
    cordon(api, kwok_nodes, True)
    try:
        tool(cluster, "helm", "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
             f"--values={values}")
        wait(lambda: agent_ready(api), 180, "the agent pod ready on the real node", poll=1.0)
    finally:
        cordon(api, kwok_nodes, False)


def uninstall(cluster: Cluster) -> None:
    tool(cluster, "helm", "uninstall", "nodemedic", f"--namespace={NAMESPACE}", "--wait", "--timeout=120s")


def service_account_kubeconfig(cluster: Cluster, path: Path) -> Path:
    """A kubeconfig with a 2-hour token (TokenRequest) of the chart's remediator ServiceAccount."""
    api = cluster.api()
    deploy = api.get(f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{REMEDIATOR_DEPLOYMENT}")
    account = deploy["spec"]["template"]["spec"]["serviceAccountName"]
    token = api.post(f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{account}/token",
                     {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {"audiences": [], "expirationSeconds": 7200}})["status"]["token"]
    ca = base64.b64encode((cluster.pki_dir / "ca.crt").read_bytes()).decode()
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "local", "cluster": {"server": cluster.server, "certificate-authority-data": ca}}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "sa", "context": {"cluster": "local", "user": account}}]}))
    return path


@dataclass
class HostRemediator:
    """`nodemedic-remediator run` as a process of this machine; `stop` ends it (SIGTERM, then SIGKILL)."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:]

    def stop(self) -> None:
        child.stop(self.proc)


def start_remediator(kubeconfig: Path, policy: str, workdir: Path, *, lease_namespace: str,
                     name: str = "remediator-on-the-host") -> HostRemediator:
    """The remediator with `policy`, leading at once (short lease timers, as the e2e tests run it); returns once its
    /healthz answers."""
    policy_file = workdir / f"{name}-policy.yaml"
    policy_file.write_text(policy)
    port = free_port()
    log = workdir / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "remediator", "run", "--policy", str(policy_file), "--kubeconfig", str(kubeconfig),
             "--lease-namespace", lease_namespace, "--listen", f"127.0.0.1:{port}", "--identity", name,
             "--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1"],
            stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1"))
    remediator = HostRemediator(proc, port, log)

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the remediator exited with {proc.returncode}:\n{remediator.tail()}")
        return remediator.healthy()

    try:
        wait(up, 60, "the remediator's /healthz", poll=0.5)
    except BaseException:
        remediator.stop()
        raise
    return remediator


def condition_status(doc: dict[str, Any], type_: str) -> str:
    """The status of the node's condition `type_` ("absent" without one)."""
    found = next((c for c in doc["status"].get("conditions") or [] if c["type"] == type_), None)
    return "absent" if found is None else str(found["status"])


def condition_of(doc: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in doc["status"].get("conditions") or [] if c["type"] == type_), None)


def taint_keys(doc: dict[str, Any]) -> set[str]:
    return {t["key"] for t in doc["spec"].get("taints") or []}


def read_node(api: Api, name: str, *, retries: int = 3) -> dict[str, Any]:
    """The Node, retried briefly: a poll must not fail the run on one dropped connection."""
    for _ in range(retries - 1):
        try:
            return dict(api.get(f"/api/v1/nodes/{name}"))
        except (ApiError, OSError):
            time.sleep(0.5)
    return dict(api.get(f"/api/v1/nodes/{name}"))
