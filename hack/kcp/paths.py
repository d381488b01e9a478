"""Where the control plane's binaries and state live. Nothing here is inside the repository."""

from __future__ import annotations

import os
from pathlib import Path

from hack.kcp import versions


def cache_root() -> Path:
    """Build cache root; override with NODEMEDIC_CACHE (CI and developers share the default)."""
    env = os.environ.get("NODEMEDIC_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "nodemedic"


def kubernetes_dir() -> Path:
    return cache_root() / "bin" / f"kubernetes-v{versions.KUBERNETES}"


def etcd_dir() -> Path:
    return cache_root() / "bin" / f"etcd-v{versions.ETCD}"


def kwok_dir() -> Path:
    return cache_root() / "bin" / f"kwok-v{versions.KWOK}"


def kubectl_dir() -> Path:
    return cache_root() / "bin" / f"kubectl-v{versions.KUBECTL}"


def descheduler_dir() -> Path:
    return cache_root() / "bin" / f"descheduler-v{versions.DESCHEDULER}"


def helm_dir() -> Path:
    return cache_root() / "bin" / f"helm-v{versions.HELM}"


def karpenter_dir() -> Path:
    return cache_root() / "bin" / f"karpenter-v{versions.KARPENTER}"


def actionlint_dir() -> Path:
    return cache_root() / "bin" / f"actionlint-v{versions.ACTIONLINT}"


def metrics_server_dir() -> Path:
    return cache_root() / "bin" / f"metrics-server-v{versions.METRICS_SERVER}"


def prometheus_dir() -> Path:
    return cache_root() / "bin" / f"prometheus-{versions.PROMETHEUS}"


def coredns_dir() -> Path:
    return cache_root() / "bin" / f"coredns-v{versions.COREDNS}"


def kube_router_dir() -> Path:
    return cache_root() / "bin" / f"kube-router-v{versions.KUBE_ROUTER}"


def images_dir() -> Path:
    """The nodemedic image's archive and buildah's storage (hack/kcp/image.py)."""
    return cache_root() / "images"


def go_cache() -> Path:
    return cache_root() / "go-build"


def binary(name: str) -> Path:
    """Absolute path of one control-plane binary by its name."""
    where = {
        "kube-apiserver": kubernetes_dir(),
        "kube-controller-manager": kubernetes_dir(),
        "kube-scheduler": kubernetes_dir(),
        "kubelet": kubernetes_dir(),
        "kube-proxy": kubernetes_dir(),
        "etcd": etcd_dir(),
        "kwok": kwok_dir(),
        "kubectl": kubectl_dir() / "bin",
        "descheduler": descheduler_dir(),
        "helm": helm_dir(),
        "karpenter": karpenter_dir(),
        "actionlint": actionlint_dir(),
        "metrics-server": metrics_server_dir(),
        "prometheus": prometheus_dir(),
        "promtool": prometheus_dir(),
        "coredns": coredns_dir(),
        "kube-router": kube_router_dir(),
    }
    return where[name] / name


def state_root() -> Path:
    """Parent of the per-cluster state directories (certs, etcd data, logs, kubeconfig)."""
    env = os.environ.get("NODEMEDIC_STATE")
    return Path(env) if env else cache_root() / "clusters"
