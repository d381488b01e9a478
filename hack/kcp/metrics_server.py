"""metrics-server (the pinned one, hack/kcp/versions.py) serving `metrics.k8s.io` for a cluster started with kwok
metrics (`Cluster.up(kwok_metrics=True)`): it reads a real node's resource metrics from its kubelet (the port in the
Node's status) and every kwok node's emulated ones from kwok's port (a kwok Node's status names no port), verifying
both certificates against the cluster CA, and kube-apiserver's aggregation layer proxies the API to it, as in a real
cluster.

The APIService names an ExternalName Service whose `externalName` is `localhost`: kube-apiserver (aggregator routing
off, its default) resolves such a Service to `https://<externalName>:<port>`, so it reaches metrics-server on the
loopback interface, where a ClusterIP would not route and an Endpoints address may not be a loopback one.
"""

from __future__ import annotations

import base64
import os
import ssl
import time

from hack.kcp import paths, pki
from hack.kcp.api import ApiError
from hack.kcp.controlplane import Cluster
from hack.kcp.ports import free_port

APISERVICE = "v1beta1.metrics.k8s.io"
SERVICE, NAMESPACE = "metrics-server", "kube-system"
# Its shortest scrape period: two scrapes make the first CPU rate, so usage is served ~10 s after start.
RESOLUTION = "10s"


def start(cluster: Cluster, timeout: float = 90.0) -> None:
    """Start metrics-server beside the cluster (stopped by `down`), register it, and return once the APIService is
    Available (metrics-server is ready only after its first scrape of every node)."""
    if not cluster.kwok_metrics:
        raise RuntimeError("the cluster was started without kwok metrics: metrics-server would read the kwok nodes' "
                           "metrics from their address, 127.0.0.1, on the kubelet port")
    binary = paths.binary("metrics-server")
    if not binary.exists():
        raise RuntimeError(f"metrics-server is not built ({binary} missing): run `hack/cluster build`")
    cert, key = pki.server_cert(cluster.pki_dir, "metrics-server", SERVICE,
                                f"DNS:{SERVICE}.{NAMESPACE}.svc,DNS:localhost,IP:127.0.0.1")
    ca = cluster.pki_dir / "ca.crt"
    port = cluster.ports["metrics_server"] = free_port()
    kubeconfig = str(cluster.kubeconfig)
    cluster.start_process("metrics-server", [
        str(binary), f"--kubeconfig={kubeconfig}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}",
        f"--tls-cert-file={cert}", f"--tls-private-key-file={key}",
        "--kubelet-use-node-status-port", f"--kubelet-port={cluster.ports['kwok']}",
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-certificate-authority={ca}", f"--metric-resolution={RESOLUTION}", "--kubelet-request-timeout=5s",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez",
    ], env=dict(os.environ), health_url=f"https://127.0.0.1:{port}/readyz", timeout=timeout,
        tls=ssl.create_default_context(cafile=str(ca)))
    register(cluster, port, timeout)


def register(cluster: Cluster, port: int, timeout: float) -> None:
    api = cluster.api()
    api.post(f"/api/v1/namespaces/{NAMESPACE}/services", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": SERVICE, "namespace": NAMESPACE},
        "spec": {"type": "ExternalName", "externalName": "localhost", "ports": [{"port": port, "name": "https"}]}})
    api.post("/apis/apiregistration.k8s.io/v1/apiservices", {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": APISERVICE},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                 "versionPriority": 100, "service": {"namespace": NAMESPACE, "name": SERVICE, "port": port},
                 "caBundle": base64.b64encode((cluster.pki_dir / "ca.crt").read_bytes()).decode()}})
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            status = api.get(f"/apis/apiregistration.k8s.io/v1/apiservices/{APISERVICE}").get("status") or {}
        except ApiError as e:
            last = e
        else:
            last = next((c for c in status.get("conditions", []) if c.get("type") == "Available"), None)
            if isinstance(last, dict) and last.get("status") == "True":
                return
        time.sleep(0.2)
    raise TimeoutError(f"APIService {APISERVICE} not Available after {timeout:.0f}s: {last}")
