"""The real node's cluster DNS: CoreDNS (built from the Go module proxy, hack/kcp/build.py) as a host process with its
kubernetes plugin, serving `cluster.local` from the API server, behind a `kube-dns` Service as on any cluster.

It listens on the node's address, port 53, and hands names outside the cluster to the machine's own resolver. The
Service (ClusterIP `SERVICE_IP`, no selector) has one EndpointSlice naming that address, so kube-proxy's rules carry
`SERVICE_IP:53` to it, from pods and from the host's network alike, and the kubelet hands `SERVICE_IP` to pods as
their `clusterDNS`. CoreDNS reads the API as the user `system:coredns`, with the read-only ClusterRole upstream's
manifests give it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hack.kcp import paths
from hack.kcp.api import Api, ApiError

SERVICE_IP = "10.0.0.10"  # in the API server's --service-cluster-ip-range (10.0.0.0/24)
READY_PORT = 18181  # CoreDNS's `ready` plugin: 200 once the kubernetes plugin has synced
USER = "system:coredns"
_MANAGED_BY = "nodemedic-hack"  # a label value: no slash


def corefile(node_ip: str, kubeconfig: Path) -> str:
    return f""".:53 {{
    bind {node_ip}
    errors
    ready 127.0.0.1:{READY_PORT}
    kubernetes cluster.local in-addr.arpa ip6.arpa {{
        kubeconfig {kubeconfig} local
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }}
    forward . /etc/resolv.conf
}}
"""


def argv(corefile_path: Path) -> list[str]:
    return [str(paths.binary("coredns")), "-conf", str(corefile_path)]


def objects(node_ip: str) -> list[tuple[str, dict[str, Any]]]:
    """(collection path, object) for the RBAC, the Service and its EndpointSlice."""
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    ports = [{"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]
    return [
        (f"{rbac}/clusterroles", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": USER},
            "rules": [{"apiGroups": [""], "resources": ["endpoints", "services", "pods", "namespaces"],
                       "verbs": ["list", "watch"]},
                      {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"],
                       "verbs": ["list", "watch"]}]}),
        (f"{rbac}/clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": USER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": USER},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER}]}),
        ("/api/v1/namespaces/kube-system/services", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
            "spec": {"clusterIP": SERVICE_IP, "ports": [{**p, "targetPort": 53} for p in ports]}}),
        ("/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices", {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kube-dns-real-node", "namespace": "kube-system",
                         "labels": {"kubernetes.io/service-name": "kube-dns",
                                    "endpointslice.kubernetes.io/managed-by": _MANAGED_BY}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [node_ip], "conditions": {"ready": True}}],
            "ports": ports}),
    ]


def register(api: Api, node_ip: str) -> None:
    """Create the objects (already there, from an earlier start of this cluster: kept)."""
    for path, body in objects(node_ip):
        try:
            api.post(path, body)
        except ApiError as e:
            if e.status != 409:
                raise
