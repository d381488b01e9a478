"""The chart as it ships on a cluster with the real node, for test_real_node.py and test_second_scheduler_chart.py:
where the chart and the shipped policy are, its namespace, the kwok nodes beside the real node, helm against the
cluster, the chart's pods by component and whether one is ready."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kubernetes import client

from hack.kcp import paths
from tests.e2e.conftest import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "nodemedic"
NAMESPACE = "nodemedic"
KWOK_NODES = ["kwok-node-0", "kwok-node-1"]
SHIPPED_POLICY = (ROOT / "deploy" / "policy" / "default.yaml").read_text()


def helm(cluster: LocalCluster, *args: str) -> str:
    done = subprocess.run([str(paths.binary("helm")), *args, f"--kubeconfig={cluster.kubeconfig}"],
                          capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, f"helm {' '.join(args)}: {done.stderr[-3000:]}"
    return done.stdout


def pods(core: client.CoreV1Api, component: str) -> list[client.V1Pod]:
    return [p for p in core.list_namespaced_pod(NAMESPACE,
                                                label_selector=f"app.kubernetes.io/component={component}").items
            if p.metadata.deletion_timestamp is None]


def ready(pod: client.V1Pod) -> bool:
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True"
                                                 for c in pod.status.conditions or [])
