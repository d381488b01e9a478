"""GPU presence from a fixture /sys/bus/pci/devices, /dev/nvidia* and /proc."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.checks.gpu import FABRIC, MISSING, Config, GPUCheck, validate
from agent.host import HostRoot
from agent.model import Observation, Status

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)


class Host:
    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "dev").mkdir()
        (root / "proc").mkdir()

    def pci(self, bdf: str, *, vendor: str = "0x10de", pci_class: str = "0x030200", driver: str = "nvidia") -> None:
        device = self.root / "sys/bus/pci/devices" / bdf
        device.mkdir(parents=True)
        (device / "vendor").write_text(vendor + "\n")
        (device / "class").write_text(pci_class + "\n")
        drivers = self.root / "sys/bus/pci/drivers" / driver
        drivers.mkdir(parents=True, exist_ok=True)
        (device / "driver").symlink_to(drivers)

    def unplug(self, bdf: str) -> None:
        device = self.root / "sys/bus/pci/devices" / bdf
        for child in device.iterdir():
            child.unlink()
        device.rmdir()

    def dev(self, *names: str, under: str = "dev") -> None:
        (self.root / under).mkdir(parents=True, exist_ok=True)
        for name in names:
            (self.root / under / name).write_text("")

    def process(self, pid: int, comm: str) -> None:
        (self.root / "proc" / str(pid)).mkdir()
        (self.root / "proc" / str(pid) / "comm").write_text(comm[:15] + "\n")  # TASK_COMM_LEN - 1


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def observe(check: GPUCheck) -> Observation:
    return asyncio.run(check.observe(NOW))


def statuses(observation: Observation) -> dict[str, tuple[Status, str]]:
    return {c.type: (c.status, c.reason) for c in observation.conditions}


def test_a_node_without_nvidia_gpus_reports_nothing(host: Host) -> None:
    host.pci("0000:00:02.0", vendor="0x8086", pci_class="0x030000", driver="i915")
    host.dev("null", "nvme0")

    assert observe(GPUCheck(Config(), HostRoot(host.root))).conditions == ()


def test_every_gpu_with_its_device_node_is_healthy(host: Host) -> None:
    for i in range(2):
        host.pci(f"0000:{0x3b + i:02x}:00.0")
        host.pci(f"0000:{0x3b + i:02x}:00.1", pci_class="0x040300", driver="snd_hda_intel")  # its audio function
    host.dev("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm")

    assert statuses(observe(GPUCheck(Config(), HostRoot(host.root)))) == {MISSING: (Status.FALSE, "AllGPUsPresent")}


def test_a_gpu_the_driver_did_not_take_is_missing(host: Host) -> None:
    host.pci("0000:3b:00.0")
    host.pci("0000:3c:00.0")
    host.dev("nvidia0", "nvidiactl")

    observation = observe(GPUCheck(Config(), HostRoot(host.root)))

    assert statuses(observation) == {MISSING: (Status.TRUE, "GPUWithoutDeviceNode")}
    assert "0000:3b:00.0, 0000:3c:00.0" in observation.conditions[0].message


def test_a_gpu_that_left_the_bus_is_named(host: Host) -> None:
    host.pci("0000:3b:00.0")
    host.pci("0000:3c:00.0")
    host.dev("nvidia0", "nvidia1")
    check = GPUCheck(Config(), HostRoot(host.root))
    observe(check)
    host.unplug("0000:3c:00.0")

    observation = observe(check)

    assert statuses(observation) == {MISSING: (Status.TRUE, "GPUGoneFromBus")}
    assert "0000:3c:00.0" in observation.conditions[0].message


def test_device_nodes_made_by_a_driver_container_count(host: Host) -> None:
    host.pci("0000:3b:00.0")
    host.dev("nvidia0", under="run/nvidia/driver/dev")

    assert statuses(observe(GPUCheck(Config(), HostRoot(host.root)))) == {MISSING: (Status.FALSE, "AllGPUsPresent")}


def test_gpus_passed_through_to_virtual_machines_are_left_out(host: Host) -> None:
    host.pci("0000:3b:00.0", driver="vfio-pci")

    assert observe(GPUCheck(Config(), HostRoot(host.root))).conditions == ()


@pytest.mark.parametrize(("running", "expected"), [
    ("nv-fabricmanager", (Status.FALSE, "FabricManagerRunning")),
    ("nvidia-persiste", (Status.TRUE, "FabricManagerNotRunning")),
], ids=["fabric-manager-running", "only-persistenced"])
def test_nvswitches_need_the_fabric_manager(host: Host, running: str, expected: tuple[Status, str]) -> None:
    host.pci("0000:3b:00.0")
    host.pci("0000:c6:00.0", pci_class="0x068000")
    host.dev("nvidia0", "nvidia-nvswitch0")
    host.process(1, "systemd")
    host.process(4242, running)

    assert statuses(observe(GPUCheck(Config(), HostRoot(host.root))))[FABRIC] == expected


def test_validation_names_the_bad_fields() -> None:
    assert validate(Config(device_dirs=("dev",), fabric_manager_process="")) == [
        "device_dirs[0]: must be an absolute path",
        "fabric_manager_process: must be a process name (its /proc/<pid>/comm)"]
