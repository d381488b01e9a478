"""Benchmark: a node that goes dark, with Kubernetes alone and with nodemedic, in one run.

The real node (hack/kcp/realnode.py) runs a one-replica StatefulSet `db` and a one-replica Deployment `web`, both
with Kubernetes' default tolerations (the unreachable taint tolerated 300 s); then every service and container of the
node stops (`hack/cluster node-reboot --power-button`: a machine that died, powered on again when the benchmark says
so). Timed from that moment, per arm:
* Kubernetes alone (no remediator): Ready=Unknown, the unreachable taint, the pods evicted (Terminating), `web`'s
  replacement Running on another node, `db-0` Running on another node (never: a StatefulSet makes no second pod of an
  identity while the first is Terminating), watched for `--window` seconds.
* nodemedic: the remediator on the host (the chart's ServiceAccount), `darkNodes.agentSilence: 30s` with the agent's
  heartbeat at 10 s (the shipped 6m and 5m judge a node dark up to 6 minutes after its agent's last write). The node
  judged dark, then a person's `kubectl nodemedic fence --confirm` the moment the alert says evidence is missing (a
  person who answers at once: add your on-call time), the out-of-service taint, both pods Running elsewhere.
The node is powered on between the arms and its pods cleaned up. One run per arm (each takes minutes); prints the
timelines and one table with the ratio nodemedic / Kubernetes alone where both have a figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from hack.bench.lib import real_node
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.report import machine
from hack.bench.lib.table import Column, table
from hack.bench.lib.timeline import Timeline, seconds
from hack.kcp import build, image, nodes, realnode, versions
from hack.kcp.api import Api, ApiError
from hack.kcp.controlplane import Cluster
from hack.kcp.measure import wait

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = "bench-dark-node"
KWOK_NODES = [nodes.node_name(i) for i in range(2)]
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
UNREACHABLE = "node.kubernetes.io/unreachable"
BOOT_ID = Path("/var/lib/nodemedic-bench/boot_id")
POLL = 0.5
POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
repair: {maxUnhealthyPercent: 100}
darkNodes: {agentSilence: 30s}
"""

UNKNOWN = "Ready=Unknown"
TAINTED = f"taint {UNREACHABLE}"
EVICTED = "pods evicted (Terminating)"
DARK = "nodemedic: dark, evidence needed"
CONFIRMED = "a person: fence --confirm"
FENCED = f"taint {OUT_OF_SERVICE}"
WEB = "web (Deployment) Running elsewhere"
DB = "db-0 (StatefulSet) Running elsewhere"
MOMENTS = (UNKNOWN, TAINTED, EVICTED, DARK, CONFIRMED, FENCED, WEB, DB)


def say(msg: str) -> None:
    print(msg, flush=True)


def workloads(namespace: str) -> list[tuple[str, dict[str, Any]]]:
    spec = {"containers": [{"name": "app", "image": image.pause_reference(), "imagePullPolicy": "Never",
                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
            "terminationGracePeriodSeconds": 5,
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                       "values": [realnode.NAME, *KWOK_NODES]}]}]}}}}

    def of(kind: str, name: str, **extra: Any) -> dict[str, Any]:
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}, **extra,
                         "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}
    return [("statefulsets", of("StatefulSet", "db", serviceName="db")), ("deployments", of("Deployment", "web"))]


def pods(api: Api, namespace: str) -> list[dict[str, Any]]:
    return list(api.get(f"/api/v1/namespaces/{namespace}/pods")["items"])


def running_elsewhere(ps: list[dict[str, Any]], app: str, first: set[str]) -> bool:
    return any(p["metadata"]["labels"].get("app") == app and p["metadata"]["uid"] not in first
               and p["status"].get("phase") == "Running" and p["spec"].get("nodeName") != realnode.NAME
               and not p["metadata"].get("deletionTimestamp") for p in ps)


def place(api: Api, namespace: str) -> set[str]:
    """Both workloads Running on the real node (the kwok nodes cordoned meanwhile); their pods' uids."""
    api.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    wait(lambda: api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts")["items"], 30, "the default SA")
    real_node.cordon(api, KWOK_NODES, True)
    try:
        for resource, body in workloads(namespace):
            api.post(f"/apis/apps/v1/namespaces/{namespace}/{resource}", body)
        wait(lambda: len([p for p in pods(api, namespace) if p["status"].get("phase") == "Running"
                          and p["spec"].get("nodeName") == realnode.NAME]) == 2, 120, "db and web on the real node",
             poll=POLL)
    finally:
        real_node.cordon(api, KWOK_NODES, False)
    return {p["metadata"]["uid"] for p in pods(api, namespace)}


def plan_node(port: int) -> dict[str, Any] | None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/plan", timeout=5) as r:
        doc = json.loads(r.read())
    return next((n for n in (doc.get("darkNodes") or {}).get("nodes", []) if n["node"] == realnode.NAME), None)


def confirm(cluster: Cluster) -> None:
    done = subprocess.run([sys.executable, "-m", "remediator.kubectl.cli", "--kubeconfig", str(cluster.kubeconfig),
                           "fence", realnode.NAME, "--confirm", "--agent-silence", "30s"],
                          capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"kubectl nodemedic fence --confirm: {done.stderr}")


def dark_run(cluster: Cluster, api: Api, tmp: Path, arm: str, *, window: float, port: int | None) -> dict[str, float]:
    namespace = f"dark-{arm}"
    first = place(api, namespace)
    button = tmp / f"power-{arm}"
    say(f"{arm}: db-0 and web Running on {realnode.NAME}; the node goes dark")
    timeline = Timeline()
    subprocess.run([sys.executable, str(ROOT / "hack" / "cluster"), "node-reboot", "--state-dir",
                    str(cluster.state_dir), "--boot-id-file", str(BOOT_ID), "--off-seconds", str(window + 120),
                    "--power-button", str(button), "--delay", "0"], check=True, capture_output=True, timeout=60)
    try:
        while timeline.elapsed() < window and timeline.get(DB) is None:
            doc = real_node.read_node(api, realnode.NAME)
            taints = real_node.taint_keys(doc)
            timeline.mark(UNKNOWN, real_node.condition_status(doc, "Ready") == "Unknown")
            timeline.mark(TAINTED, UNREACHABLE in taints)
            timeline.mark(FENCED, OUT_OF_SERVICE in taints)
            ps = pods(api, namespace)
            timeline.mark(EVICTED, any(p["metadata"]["uid"] in first and p["metadata"].get("deletionTimestamp")
                                       for p in ps))
            timeline.mark(WEB, running_elsewhere(ps, "web", first))
            timeline.mark(DB, running_elsewhere(ps, "db", first))
            if port is not None and timeline.get(CONFIRMED) is None and (n := plan_node(port)) is not None \
                    and timeline.mark(DARK, n.get("needsEvidence")):
                confirm(cluster)
                timeline.mark(CONFIRMED, True)
            time.sleep(POLL)
    finally:
        button.write_text("on\n")
    for what, t in timeline.ordered():
        say(f"  +{t:6.1f}s  {what}")
    if timeline.get(DB) is None:
        left = [f"{p['metadata']['name']} ({_state(p)} on {p['spec'].get('nodeName')})" for p in pods(api, namespace)
                if p["metadata"]["labels"].get("app") == "db"]
        say(f"  +{window:6.1f}s  end of the window: db pods {', '.join(left)}")
    wait(lambda: real_node.condition_status(real_node.read_node(api, realnode.NAME), "Ready") == "True"
         and real_node.agent_ready(api), 240, "the node Ready again, its agent running", poll=1.0)
    api.request("DELETE", f"/api/v1/namespaces/{namespace}")
    wait(lambda: _gone(api, f"/api/v1/namespaces/{namespace}"), 180, f"namespace {namespace} gone", poll=1.0)
    wait(lambda: OUT_OF_SERVICE not in real_node.taint_keys(real_node.read_node(api, realnode.NAME)), 120,
         "no out-of-service taint", poll=1.0)
    return dict(timeline.moments)


def _state(pod: dict[str, Any]) -> str:
    return "Terminating" if pod["metadata"].get("deletionTimestamp") else str(pod["status"].get("phase"))


def _gone(api: Api, path: str) -> bool:
    try:
        api.get(path)
    except ApiError as e:
        return e.status == 404
    return False


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--window", type=float, default=420.0, help="seconds Kubernetes alone is watched (default 420: "
                   "the 300 s toleration, the 40 s grace period and a margin)")
    args = p.parse_args()
    if unbuilt(build.COMPONENTS):
        return 2
    BOOT_ID.parent.mkdir(parents=True, exist_ok=True)
    BOOT_ID.write_text("11111111-2222-4333-8444-555555555555\n")
    reference = image.reference()
    cluster = clean_cluster(CLUSTER)
    results: dict[str, dict[str, float]] = {}
    remediator = None
    with tempfile.TemporaryDirectory(prefix="bench-dark-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            t0 = time.monotonic()
            cluster.up(len(KWOK_NODES), real_nodes=1, timeout=300)
            api = cluster.api()
            real_node.install(cluster, tmp, reference, KWOK_NODES, heartbeat="10s")
            say(f"cluster up with the real node and the chart (image {reference}): {time.monotonic() - t0:.0f}s")
            results["alone"] = dark_run(cluster, api, tmp, "alone", window=args.window, port=None)
            kubeconfig = real_node.service_account_kubeconfig(cluster, tmp / "remediator.kubeconfig")
            remediator = real_node.start_remediator(kubeconfig, POLICY, tmp, lease_namespace=real_node.NAMESPACE)
            results["nodemedic"] = dark_run(cluster, api, tmp, "nodemedic", window=args.window,
                                            port=remediator.port)
        finally:
            if remediator is not None:
                remediator.stop()
            cluster.down()
    alone, ours = results.get("alone", {}), results.get("nodemedic", {})
    rows = []
    for moment in MOMENTS:
        a, o = alone.get(moment), ours.get(moment)
        missing = f"never in {args.window:.0f} s" if moment in (WEB, DB, FENCED) else "-"
        r = ratio(o, a) if o is not None and a is not None else None
        rows.append((moment, seconds(a, missing=missing), seconds(o, missing=missing), format_ratio(r)))
    say(f"\nA node gone dark, seconds after ({machine(f'Kubernetes {versions.KUBERNETES}')}):")
    for line in table([Column("moment"), Column("Kubernetes alone", ">"), Column("nodemedic", ">"),
                       Column("nodemedic / alone", ">")], rows, gap="  "):
        say(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
