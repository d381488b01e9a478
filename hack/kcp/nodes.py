"""kwok fake nodes with realistic capacity, spread over three zones."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hack.kcp.api import Api, ApiError

ZONES = ("zone-a", "zone-b", "zone-c")
REGION = "local-1"
KWOK_ANNOTATION = "kwok.x-k8s.io/node"
# Where metrics-server reads a node's resource metrics instead of the kubelet's /metrics/resource: kwok serves every
# node's on one port (hack/kcp/kwok-metrics.yaml).
RESOURCE_METRICS_PATH = "metrics.k8s.io/resource-metrics-path"

# An 8-core / 32 GiB machine after kubelet's usual system and kube reservations.
CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
ALLOCATABLE = {"cpu": "7910m", "memory": "31Gi", "pods": "110", "ephemeral-storage": "95Gi"}


def node_name(i: int) -> str:
    return f"kwok-node-{i}"


def node_manifest(
    name: str,
    zone: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    capacity: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "kwok-8x32",
                "topology.kubernetes.io/region": REGION,
                "topology.kubernetes.io/zone": zone,
                "type": "kwok",
                **(labels or {}),
            },
            "annotations": {KWOK_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0", **(annotations or {})},
        },
        "spec": {"taints": taints or []},
        "status": {
            "capacity": dict(capacity or CAPACITY),
            "allocatable": dict(allocatable or ALLOCATABLE),
        },
    }


def with_resource_metrics(manifest: dict[str, Any]) -> dict[str, Any]:
    """The node manifest with the annotation that sends metrics-server to kwok's emulation of its metrics."""
    name = manifest["metadata"]["name"]
    manifest["metadata"]["annotations"][RESOURCE_METRICS_PATH] = f"/metrics/nodes/{name}/metrics/resource"
    return manifest


def create_nodes(api: Api, manifests: list[dict[str, Any]]) -> None:
    def create(m: dict[str, Any]) -> None:
        try:
            api.post("/api/v1/nodes", m)
        except ApiError as e:
            if e.status != 409:  # already there (a re-run of `up`)
                raise

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(create, manifests))


def is_ready(node: dict[str, Any]) -> bool:
    for c in node.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return bool(c.get("status") == "True")
    return False


def wait_ready(api: Api, names: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    want = set(names)
    while True:
        items = api.get("/api/v1/nodes")["items"]
        ready = {n["metadata"]["name"] for n in items if is_ready(n)}
        if want <= ready:
            return
        if time.monotonic() > deadline:
            missing = sorted(want - ready)
            raise TimeoutError(f"{len(missing)} node(s) not Ready after {timeout:.0f}s: {missing[:10]}")
        time.sleep(0.25)


def standard_nodes(count: int, prefix_start: int = 0) -> list[dict[str, Any]]:
    """`count` nodes named kwok-node-<i>, round-robin over the three zones."""
    return [node_manifest(node_name(i), ZONES[i % len(ZONES)]) for i in range(prefix_start, prefix_start + count)]
