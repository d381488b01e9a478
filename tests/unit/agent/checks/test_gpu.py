"""GPU presence from a fixture /sys/bus/pci/devices, /dev/nvidia* and /proc."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.gpu import FABRIC, MISSING, Config, GPUCheck
from agent.host import HostRoot
from agent.model import Observation, Status
from agent.sensors.idle import IDLE_INTERVAL

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


def test_a_node_without_nvidia_gpus_looks_again_only_every_idle_interval_until_one_appears(host: Host) -> None:
    host.pci("0000:00:02.0", vendor="0x8086", pci_class="0x030000", driver="i915")
    config = Config()
    check = GPUCheck(config, HostRoot(host.root))
    observe(check)
    assert check.timing.interval == IDLE_INTERVAL and check.timing.timeout == config.timing.timeout
    host.pci("0000:3b:00.0")
    host.dev("nvidia0")
    assert statuses(observe(check)) == {MISSING: (Status.FALSE, "AllGPUsPresent")}
    assert check.timing == config.timing
    host.unplug("0000:3b:00.0")  # gone from the bus: a GPU was seen, so the check keeps its own pace
    assert statuses(observe(check))[MISSING][1] == "GPUGoneFromBus" and check.timing == config.timing


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
    assert problems(Config(device_dirs=("dev",), fabric_manager_process="", capacity_resource="nvidia.com/ gpu",
                           capacity_per_gpu=0)) == [
        "deviceDirs[0]: must be an absolute path, got 'dev'",
        "fabricManagerProcess: must be a process name (its /proc/<pid>/comm), got ''",
        "capacityResource: must be a resource name such as nvidia.com/gpu, or \"\" not to compare with the capacity, "
        "got 'nvidia.com/ gpu'",
        "capacityPerGpu: must be at least 1, got 0"]
    assert problems(Config(capacity_resource="")) == []  # "" turns the comparison off


def eight_gpu_host(host: Host, present: int) -> None:
    """`present` of an HGX board's eight GPUs on the bus, each with its device node and its audio function."""
    for i in range(present):
        host.pci(f"0000:{0x18 + 0x10 * i:02x}:00.0")
        host.pci(f"0000:{0x18 + 0x10 * i:02x}:00.1", pci_class="0x040300", driver="snd_hda_intel")
    host.dev(*(f"nvidia{i}" for i in range(present)), "nvidiactl", "nvidia-uvm")


def with_capacity(check: GPUCheck, capacity: dict[str, int]) -> GPUCheck:
    check.attach_capacity(capacity.get)
    return check


@pytest.mark.parametrize(("present", "capacity", "config", "expected"), [
    (8, {"nvidia.com/gpu": 8}, Config(), (Status.FALSE, "AllGPUsPresent")),
    (7, {"nvidia.com/gpu": 8}, Config(), (Status.TRUE, "GPUsBelowNodeCapacity")),
    (0, {"nvidia.com/gpu": 8}, Config(), (Status.TRUE, "GPUsBelowNodeCapacity")),
    (8, {"nvidia.com/gpu": 6}, Config(), (Status.FALSE, "AllGPUsPresent")),
    (8, {"nvidia.com/gpu": 32}, Config(capacity_per_gpu=4), (Status.FALSE, "AllGPUsPresent")),
    (7, {"nvidia.com/gpu": 32}, Config(capacity_per_gpu=4), (Status.TRUE, "GPUsBelowNodeCapacity")),
    (7, {"nvidia.com/gpu": 8}, Config(capacity_resource=""), (Status.FALSE, "AllGPUsPresent")),
    (7, {"nvidia.com/gpu.shared": 8}, Config(), (Status.FALSE, "AllGPUsPresent")),
    (7, {"nvidia.com/gpu.shared": 8}, Config(capacity_resource="nvidia.com/gpu.shared"),
     (Status.TRUE, "GPUsBelowNodeCapacity")),
], ids=["eight-of-eight", "seven-of-eight", "none-of-eight", "fewer-promised-than-present-mig-mixed",
        "time-sliced-four-ways", "time-sliced-one-gpu-short", "comparison-off", "resource-not-listed",
        "renamed-shared-resource"])
def test_the_gpus_on_the_bus_are_compared_with_the_nodes_capacity(
        host: Host, present: int, capacity: dict[str, int], config: Config, expected: tuple[Status, str]) -> None:
    eight_gpu_host(host, present)

    observation = observe(with_capacity(GPUCheck(config, HostRoot(host.root)), capacity))

    assert statuses(observation) == {MISSING: expected}


def test_the_capacity_message_says_what_the_node_promises_and_what_is_on_the_bus(host: Host) -> None:
    eight_gpu_host(host, 7)

    (report,) = observe(with_capacity(GPUCheck(Config(), HostRoot(host.root)), {"nvidia.com/gpu": 8})).conditions

    assert report.message.startswith("the Node's capacity is 8 nvidia.com/gpu but 7 NVIDIA GPUs are on the PCI bus: "
                                     "0000:18:00.0, 0000:28:00.0,")
    assert report.message.endswith("0000:78:00.0")  # the eighth, 0000:88:00.0, is the one missing


def test_a_near_miss_capacity_the_host_meets_and_no_capacity_before_the_node_is_seen(host: Host) -> None:
    eight_gpu_host(host, 7)
    seen: dict[str, int] = {}
    check = with_capacity(GPUCheck(Config(), HostRoot(host.root)), seen)

    assert statuses(observe(check)) == {MISSING: (Status.FALSE, "AllGPUsPresent")}  # the Node not read yet
    seen["nvidia.com/gpu"] = 7
    assert statuses(observe(check)) == {MISSING: (Status.FALSE, "AllGPUsPresent")}
    seen["nvidia.com/gpu"] = 8
    assert statuses(observe(check)) == {MISSING: (Status.TRUE, "GPUsBelowNodeCapacity")}


def test_a_gpu_gone_from_the_bus_is_named_before_the_capacity_shortfall(host: Host) -> None:
    eight_gpu_host(host, 8)
    check = with_capacity(GPUCheck(Config(), HostRoot(host.root)), {"nvidia.com/gpu": 8})
    observe(check)
    host.unplug("0000:88:00.0")

    (report,) = observe(check).conditions

    assert (report.status, report.reason) == (Status.TRUE, "GPUGoneFromBus")
    assert "0000:88:00.0" in report.message


def test_a_node_without_gpus_or_gpu_capacity_still_reports_nothing(host: Host) -> None:
    host.pci("0000:00:02.0", vendor="0x8086", pci_class="0x030000", driver="i915")

    check = with_capacity(GPUCheck(Config(), HostRoot(host.root)), {"cpu": 8, "nvidia.com/gpu": 0})

    assert observe(check).conditions == ()


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
