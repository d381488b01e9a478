"""Karpenter with its kwok cloud provider as a process beside the local control plane: the real node autoscaler.

`start` applies Karpenter's CRDs, a KWOKNodeClass and the NodePools it is given, then starts the binary built by
`hack/cluster build` and records it among the cluster's processes, so `hack/cluster down` stops it (first: it was
started last). The nodes Karpenter launches carry the annotation `kwok.x-k8s.io/node=fake`, which the project's
kwok manages, so they become Ready and run pods through the same stages as the static nodes.

Out of cluster Karpenter reads its kubeconfig only from KUBECONFIG (it has no --kubeconfig flag), needs the namespace
of its leader election named (it has no in-cluster one) and binds its metrics and health ports on every interface:
they are picked free, like the control plane's. Leader election stays on, as Karpenter ships: its Lease
kube-system/karpenter-leader-election, renewed every few seconds, is how nodemedic's `addsNodes: auto` tells a
running Karpenter from CRDs left behind (remediator/state/autoscaler_detection.py). A restarted Karpenter takes the
Lease over once the last one's expires (15s: it is killed, not released).
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from hack.kcp import paths
from hack.kcp.api import Api, ApiError
from hack.kcp.controlplane import Cluster, environ_for
from hack.kcp.ports import free_port

INSTANCE_TYPE = "c-4x-amd64-linux"  # 4 CPU, 8Gi, 64 pods; allocatable 3900m after kwok's kube-reserved 100m
NODEPOOL_LABEL = "karpenter.sh/nodepool"
NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"
LEADER_ELECTION_NAMESPACE = "kube-system"  # where its Lease karpenter-leader-election is kept
CRD_KINDS = ("nodepools.karpenter.sh", "nodeclaims.karpenter.sh", "kwoknodeclasses.karpenter.kwok.sh")


@dataclass(frozen=True)
class NodePool:
    """A NodePool sized for tests: one instance type, consolidation within seconds, every node disruptable at once.

    `consolidation_policy` WhenEmpty leaves packing to nodemedic's HighNodeUtilization (docs/autoscalers.md says why);
    `consolidate_after` "Never" turns Karpenter's consolidation off.
    """

    name: str = "default"
    instance_types: tuple[str, ...] = (INSTANCE_TYPE,)
    consolidation_policy: str = "WhenEmpty"
    consolidate_after: str = "5s"
    budget_nodes: str = "100%"
    cpu_limit: str = "64"
    labels: dict[str, str] = field(default_factory=dict)

    def manifest(self) -> dict[str, Any]:
        return {
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": self.name},
            "spec": {
                "template": {
                    **({"metadata": {"labels": self.labels}} if self.labels else {}),
                    "spec": {
                        "requirements": [
                            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                            {"key": "node.kubernetes.io/instance-type", "operator": "In",
                             "values": list(self.instance_types)},
                            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
                        ],
                        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
                        "expireAfter": "Never",
                    },
                },
                "limits": {"cpu": self.cpu_limit},
                "disruption": {"consolidationPolicy": self.consolidation_policy,
                               "consolidateAfter": self.consolidate_after,
                               "budgets": [{"nodes": self.budget_nodes}]},
            },
        }


@dataclass(frozen=True)
class Options:
    node_pools: tuple[NodePool, ...] = (NodePool(),)
    node_repair: bool = False  # the NodeRepair feature gate (Alpha, off by default upstream)
    log_level: str = "debug"  # debug logs name every consolidation decision
    batch_max_duration: str = "2s"  # shortens the "nominated for a pending pod" shield to 10 s (from 20 s)


def crd_files() -> list[str]:
    return sorted(str(p) for p in (paths.karpenter_dir() / "crds").glob("*.yaml"))


def apply_crds(cluster: Cluster, timeout: float = 60.0) -> None:
    """Server-side apply of the CRDs shipped next to the binary, then wait until the API serves them."""
    files = crd_files()
    if not files:
        raise RuntimeError(f"no Karpenter CRDs under {paths.karpenter_dir() / 'crds'}: run `hack/cluster build`")
    args = [str(paths.binary("kubectl")), "apply", "--server-side", "--force-conflicts"]
    for f in files:
        args += ["-f", f]
    subprocess.run(args, env=environ_for(cluster), check=True, capture_output=True, timeout=60)
    api = cluster.api()
    deadline = time.monotonic() + timeout
    for crd in CRD_KINDS:
        while not _established(api, crd):
            if time.monotonic() > deadline:
                raise TimeoutError(f"CRD {crd} was not Established within {timeout:g}s")
            time.sleep(0.1)


def _established(api: Api, crd: str) -> bool:
    try:
        doc = api.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
    except ApiError:
        return False
    conditions = (doc.get("status") or {}).get("conditions") or []  # null until the API server sets them
    return any(c["type"] == "Established" and c["status"] == "True" for c in conditions)


def apply_node_pools(api: Api, pools: tuple[NodePool, ...]) -> None:
    """The KWOKNodeClass (its schema defaults it Ready) and each NodePool, created or replaced."""
    _apply(api, "/apis/karpenter.kwok.sh/v1alpha1/kwoknodeclasses", "default",
           {"apiVersion": "karpenter.kwok.sh/v1alpha1", "kind": "KWOKNodeClass", "metadata": {"name": "default"}})
    for pool in pools:
        _apply(api, "/apis/karpenter.sh/v1/nodepools", pool.name, pool.manifest())


def _apply(api: Api, collection: str, name: str, body: dict[str, Any]) -> None:
    # Server-side apply (JSON is YAML): creates or updates in one request, whatever exists.
    api.request("PATCH", f"{collection}/{name}?fieldManager=nodemedic-hack&force=true", body,
                content_type="application/apply-patch+yaml")


def start(cluster: Cluster, options: Options = Options(), timeout: float = 60.0) -> None:
    """CRDs, node classes and pools, then the Karpenter process; returns when its /readyz answers."""
    binary = paths.binary("karpenter")
    if not binary.exists():
        raise RuntimeError(f"Karpenter is not built ({binary} missing): run `hack/cluster build`")
    apply_crds(cluster)
    apply_node_pools(cluster.api(), options.node_pools)
    cluster.ports["karpenter_metrics"] = free_port()
    cluster.ports["karpenter_health"] = free_port()
    env = dict(os.environ,
               KUBECONFIG=str(cluster.kubeconfig),
               LEADER_ELECTION_NAMESPACE=LEADER_ELECTION_NAMESPACE,
               METRICS_PORT=str(cluster.ports["karpenter_metrics"]),
               HEALTH_PROBE_PORT=str(cluster.ports["karpenter_health"]),
               LOG_LEVEL=options.log_level,
               BATCH_MAX_DURATION=options.batch_max_duration,
               FEATURE_GATES=f"NodeRepair={'true' if options.node_repair else 'false'}")
    cluster.start_process("karpenter", [str(binary)], env=env,
                          health_url=f"http://127.0.0.1:{cluster.ports['karpenter_health']}/readyz", timeout=timeout)


def stop(cluster: Cluster) -> None:
    """Stop Karpenter and drop it from the cluster's processes (to start it again with other options)."""
    for rec in [p for p in cluster.processes if p.name == "karpenter"]:
        cluster.stop_component(rec.name)
        cluster.processes.remove(rec)
    cluster.save()


def node_claims(api: Api) -> list[dict[str, Any]]:
    return list(api.get(NODECLAIMS)["items"])


def karpenter_nodes(api: Api, pool: str | None = None) -> list[str]:
    """Names of the live nodes Karpenter launched (optionally of one NodePool)."""
    selector = f"{NODEPOOL_LABEL}={pool}" if pool else NODEPOOL_LABEL
    items = api.get(f"/api/v1/nodes?labelSelector={selector}")["items"]
    return sorted(n["metadata"]["name"] for n in items if not n["metadata"].get("deletionTimestamp"))
