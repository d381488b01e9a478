"""The built-in checks, registered in one explicit place: name -> (Config, validate, constructor).

Log monitors (node-problem-detector system-log-monitor JSON) and custom plugin monitors (NPD
custom-plugin-monitor JSON) are built from their own files, not from this table.
"""

from __future__ import annotations

from agent.checks import (
    blockdev,
    conntrack,
    cpu,
    disk,
    environ,
    filesystem,
    gpu,
    iostall,
    kubelet,
    limits,
    memory,
    network,
    ntp,
    runtime,
    stuck_pods,
    zombies,
    zram,
)
from agent.config import CheckSpec

BUILTIN: dict[str, CheckSpec] = {
    "cpu": CheckSpec(cpu.Config, cpu.validate, cpu.CPUPressure),
    "memory": CheckSpec(memory.Config, memory.validate, memory.MemoryExhaustion),
    "disk": CheckSpec(disk.Config, disk.validate, disk.DiskExhaustion),
    "ntp": CheckSpec(ntp.Config, ntp.validate, ntp.NTPProblem),
    "filesystem": CheckSpec(filesystem.Config, filesystem.validate, filesystem.FilesystemCheck),
    "blockdev": CheckSpec(blockdev.Config, blockdev.validate, blockdev.BlockDeviceCheck),
    "runtime": CheckSpec(runtime.Config, runtime.validate, runtime.ContainerRuntimeCheck),
    "kubelet": CheckSpec(kubelet.Config, kubelet.validate, kubelet.KubeletCheck),
    "gpu": CheckSpec(gpu.Config, gpu.validate, gpu.GPUCheck),
    "limits": CheckSpec(limits.Config, limits.validate, limits.KernelLimits),
    "zombies": CheckSpec(zombies.Config, zombies.validate, zombies.ZombieCheck),
    "conntrack": CheckSpec(conntrack.Config, conntrack.validate, conntrack.ConntrackCheck),
    "network": CheckSpec(network.Config, network.validate, network.NetworkCheck),
    "iostall": CheckSpec(iostall.Config, iostall.validate, iostall.IOStallCheck),
    "stuckPods": CheckSpec(stuck_pods.Config, stuck_pods.validate, stuck_pods.StuckPods),
    "zram": CheckSpec(zram.Config, zram.validate, zram.ZramCheck),
    "environ": CheckSpec(environ.Config, environ.validate, environ.EnvironCheck),
}
