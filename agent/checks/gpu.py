"""NVIDIA GPU presence and the NVSwitch fabric, without NVML or DCGM: `GPUMissing`, `NVSwitchFabricDown`.

`GPUMissing` compares three counts that agree on a healthy GPU node:
- NVIDIA GPU functions on the PCI bus: `/sys/bus/pci/devices/*` with `vendor` 0x10de and a display class
  (`class` 0x0300xx VGA or 0x0302xx 3D controller; the GPU's audio and USB functions are other classes).
  Functions bound to `vfio-pci` are handed to virtual machines on purpose and are left out.
- device nodes `/dev/nvidia<N>` (in any of `device_dirs`: a driver container creates them under
  `/run/nvidia/driver/dev`), created by the driver for each GPU it manages;
- the most GPU functions seen since the agent started: a GPU that fell off the bus leaves the PCI bus, so the
  count drops below what was there;
- the Node's own capacity of `capacity_resource` (`nvidia.com/gpu`, set by the device plugin or the node's
  provisioner), divided by `capacity_per_gpu` (the device plugin's time-slicing replicas, or MIG devices per GPU
  with the `single` strategy). It catches a GPU lost before the agent started, which the count since start cannot.
  The check knows nothing of Kubernetes: the reporting side, which reads the Node anyway, hands it a plain
  resource -> count lookup (`attach_capacity`); until then, and for a Node that lists no such resource, there is
  nothing to compare with. Only more GPUs promised than present is a problem: fewer (MIG `mixed`, a device plugin
  still starting) is not.
Fewer device nodes than functions (the driver did not take a GPU), fewer functions than seen before (a GPU left the
bus) or than the Node's capacity promises is True, naming the bus ids. A node with no NVIDIA GPU, and no GPU
capacity, reports nothing, so the type never appears there, and looks again only every `IDLE_INTERVAL`
(agent/sensors/idle.py: 5 min) until it finds one.

`NVSwitchFabricDown`: on HGX-style hosts the NVSwitches (`/dev/nvidia-nvswitch<N>`, or NVIDIA PCI functions of
class 0x0680xx) need the fabric manager daemon (`nv-fabricmanager`) running, or multi-GPU jobs fail to start.
Its process is looked up by name in the host's `/proc`, which needs no systemd bus in a pod.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from agent.bounds import AT_LEAST_ONE, Bounds, absolute_path, bounded, text_form
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.sensors.idle import idle_timing

MISSING = "GPUMissing"
FABRIC = "NVSwitchFabricDown"
NVIDIA_VENDOR = "0x10de"
_GPU_CLASSES = ("0x0300", "0x0302")
_BRIDGE_CLASS = "0x0680"  # NVSwitch
_DEVICE_NODE = re.compile(r"nvidia\d+")
_NVSWITCH_NODE = re.compile(r"nvidia-nvswitch\d+")
_RESOURCE_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?(/[-A-Za-z0-9_.]+)?")
Capacity = Callable[[str], int | None]  # resource name -> the Node's capacity of it; None: not known or not listed


_PROCESS_NAME = text_form("a process name (its /proc/<pid>/comm)", lambda name: bool(name) and "/" not in name)
_RESOURCE = text_form('a resource name such as nvidia.com/gpu, or "" not to compare with the capacity',
                      lambda name: not name or _RESOURCE_NAME.fullmatch(name) is not None)


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    device_dirs: tuple[str, ...] = bounded(("/dev", "/run/nvidia/driver/dev"), Bounds(form=absolute_path))
    fabric_manager_process: str = bounded("nv-fabricmanager", Bounds(form=_PROCESS_NAME))
    # "" = do not compare with the Node's capacity
    capacity_resource: str = bounded("nvidia.com/gpu", Bounds(form=_RESOURCE))
    capacity_per_gpu: int = bounded(1, AT_LEAST_ONE)


@dataclass(frozen=True)
class PciInventory:
    gpus: frozenset[str]  # bus ids of GPU functions the host's driver should own
    nvswitches: frozenset[str]


def read_pci(host: HostRoot) -> PciInventory:
    """Read every round: plain names and `HostRoot.read_text`, not a pathlib object per device and file."""
    gpus, switches = set(), set()
    devices = "/sys/bus/pci/devices"
    try:
        names = os.listdir(host.path(devices))
    except (FileNotFoundError, NotADirectoryError):
        return PciInventory(frozenset(), frozenset())
    for name in names:
        try:
            if host.read_text(f"{devices}/{name}/vendor").strip() != NVIDIA_VENDOR:
                continue
            pci_class = host.read_text(f"{devices}/{name}/class").strip()
        except OSError:  # a device that went away while we looked
            continue
        if pci_class.startswith(_GPU_CLASSES):
            driver = host.path(f"{devices}/{name}/driver")
            if driver.is_symlink() and driver.resolve().name == "vfio-pci":
                continue
            gpus.add(name)
        elif pci_class.startswith(_BRIDGE_CLASS):
            switches.add(name)
    return PciInventory(frozenset(gpus), frozenset(switches))


class GPUCheck:
    name = "gpu"
    condition_types: tuple[str, ...] = (MISSING, FABRIC)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._seen: frozenset[str] = frozenset()  # every GPU bus id seen since start
        self._capacity: Capacity | None = None

    def attach_capacity(self, capacity: Capacity) -> None:
        """The Node's capacity lookup, given by the reporting side once it talks to the API server."""
        self._capacity = capacity

    async def observe(self, now: dt.datetime) -> Observation:
        pci = read_pci(self._host)
        nodes = self._device_nodes()
        self._seen |= pci.gpus
        promised = self._promised()
        reports: list[ConditionReport] = []
        if self._seen or promised:
            reports.append(self._missing(pci.gpus, nodes[0], promised))
        if pci.nvswitches or nodes[1]:
            reports.append(self._fabric(len(pci.nvswitches) or nodes[1]))
        nothing_here = not (self._seen or promised or pci.nvswitches or any(nodes))
        self.timing = idle_timing(self._config.timing) if nothing_here else self._config.timing
        return Observation(self.name, now, conditions=tuple(reports))

    def _device_nodes(self) -> tuple[int, int]:
        """(GPU device nodes, NVSwitch device nodes) in the first device dir that has any."""
        for directory in self._config.device_dirs:
            path = self._host.path(directory)
            try:
                names = [n for n in os.listdir(path) if n.startswith("nvidia")]
            except OSError:
                continue
            gpus = sum(1 for n in names if _DEVICE_NODE.fullmatch(n))
            switches = sum(1 for n in names if _NVSWITCH_NODE.fullmatch(n))
            if gpus or switches:
                return gpus, switches
        return 0, 0

    def _promised(self) -> tuple[int, int] | None:
        """(GPUs the Node's capacity promises, the capacity itself); None when there is nothing to compare with."""
        resource, per_gpu = self._config.capacity_resource, self._config.capacity_per_gpu
        count = self._capacity(resource) if self._capacity is not None and resource else None
        if not count:
            return None
        return -(-count // per_gpu), count  # a partial GPU's worth of capacity still needs a whole GPU

    def _missing(self, present: frozenset[str], device_nodes: int, promised: tuple[int, int] | None,
                 ) -> ConditionReport:
        gone = sorted(self._seen - present)
        if gone:
            return ConditionReport(MISSING, Status.TRUE, "GPUGoneFromBus",
                                   f"GPU {', '.join(gone)} left the PCI bus ({len(present)} of {len(self._seen)} "
                                   "seen are present)")
        if promised is not None and promised[0] > len(present):
            gpus, count = promised
            per_gpu = self._config.capacity_per_gpu
            share = f" ({gpus} GPUs at {per_gpu} per GPU)" if per_gpu > 1 else ""
            on_bus = f": {', '.join(sorted(present))}" if present else ""
            return ConditionReport(MISSING, Status.TRUE, "GPUsBelowNodeCapacity",
                                   f"the Node's capacity is {count} {self._config.capacity_resource}{share} but "
                                   f"{len(present)} NVIDIA GPUs are on the PCI bus{on_bus}")
        if device_nodes < len(present):
            return ConditionReport(MISSING, Status.TRUE, "GPUWithoutDeviceNode",
                                   f"{len(present)} NVIDIA GPUs on the PCI bus ({', '.join(sorted(present))}) but "
                                   f"{device_nodes} /dev/nvidia<N> device nodes: the driver does not manage them all")
        capacity = f", Node capacity {promised[1]} {self._config.capacity_resource}" if promised is not None else ""
        return ConditionReport(MISSING, Status.FALSE, "AllGPUsPresent",
                               f"{len(present)} NVIDIA GPUs on the PCI bus, {device_nodes} device nodes{capacity}")

    def _fabric(self, switches: int) -> ConditionReport:
        wanted = self._config.fabric_manager_process
        if self._process_running(wanted):
            return ConditionReport(FABRIC, Status.FALSE, "FabricManagerRunning",
                                   f"{switches} NVSwitches, {wanted} is running")
        return ConditionReport(FABRIC, Status.TRUE, "FabricManagerNotRunning",
                               f"{switches} NVSwitches but no {wanted} process: multi-GPU jobs cannot start")

    def _process_running(self, comm: str) -> bool:
        for entry in self._host.path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if (entry / "comm").read_text().strip() == comm[:15]:  # the kernel keeps 15 characters
                        return True
                except OSError:
                    continue
        return False
