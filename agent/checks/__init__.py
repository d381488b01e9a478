"""The built-in checks, registered in one explicit place: config name -> (module, check class), one line each.

Each check is a module here with its `Config` (whose fields declare their bounds: agent/bounds.py) and its check
class, whose `name` is its config name; adding one takes its module and its line in `REGISTERED`. What checks share
lives beside this package: `agent/sensors/` (what they read from the host), `agent/services/` (a node service's
healthz and restarts) and `agent/verdicts/` (how readings become a steady condition).

Log monitors (node-problem-detector system-log-monitor JSON) and custom plugin monitors (NPD
custom-plugin-monitor JSON) are built from their own files, not from this table.
"""

from __future__ import annotations

import importlib

from agent.config import CheckSpec

REGISTERED: dict[str, tuple[str, str]] = {
    "cpu": ("cpu", "CPUPressure"),
    "memory": ("memory", "MemoryExhaustion"),
    "disk": ("disk", "DiskExhaustion"),
    "ntp": ("ntp", "NTPProblem"),
    "filesystem": ("filesystem", "FilesystemCheck"),
    "blockdev": ("blockdev", "BlockDeviceCheck"),
    "runtime": ("runtime", "ContainerRuntimeCheck"),
    "kubelet": ("kubelet", "KubeletCheck"),
    "kubeProxy": ("kube_proxy", "KubeProxyCheck"),
    "clusterDNS": ("cluster_dns", "ClusterDNSCheck"),
    "firewall": ("firewall", "FirewallCheck"),
    "gpu": ("gpu", "GPUCheck"),
    "nvml": ("nvml", "NvmlCheck"),
    "limits": ("kernel_limits", "KernelLimits"),
    "zombies": ("zombies", "ZombieCheck"),
    "conntrack": ("conntrack", "ConntrackCheck"),
    "network": ("network", "NetworkCheck"),
    "iostall": ("iostall", "IOStallCheck"),
    "stuckPods": ("stuck_pods", "StuckPods"),
    "zram": ("zram", "ZramCheck"),
    "environ": ("environ", "EnvironCheck"),
}


def _spec(module_name: str, check_class: str) -> CheckSpec:
    module = importlib.import_module(f"{__name__}.{module_name}")
    return CheckSpec(module.Config, getattr(module, check_class))


BUILTIN: dict[str, CheckSpec] = {name: _spec(*where) for name, where in REGISTERED.items()}
