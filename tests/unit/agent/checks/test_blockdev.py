"""Block device state and I/O error counters, read from a fixture /sys/block."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks import blockdev
from agent.checks.blockdev import BlockDeviceCheck, Config, load_udev_device_info
from agent.host import HostRoot
from agent.model import ConditionReport, Observation, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class DeniedHost(HostRoot):
    """A host root where some files raise PermissionError (tests run as root, so chmod would not)."""

    denied: frozenset[str] = frozenset()

    def read_text(self, host_path: str) -> str:
        if host_path in self.denied:
            raise PermissionError(13, "Permission denied", host_path)
        return super().read_text(host_path)


def device(root: Path, name: str, state: str | bytes | None = "running\n", ioerr: str | bytes | None = "0x0\n") -> None:
    base = root / "sys/block" / name / "device"
    base.mkdir(parents=True, exist_ok=True)
    for file, value in (("state", state), ("ioerr_cnt", ioerr)):
        if isinstance(value, bytes):
            (base / file).write_bytes(value)
        elif value is not None:
            (base / file).write_text(value)


def observe(check: BlockDeviceCheck, now: dt.datetime = NOW) -> Observation:
    return asyncio.run(check.observe(now))


def only(observation: Observation) -> ConditionReport:
    (report,) = observation.conditions
    return report


def no_udev(name: str) -> Mapping[str, str]:
    return {}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    device(tmp_path, "sda")
    return tmp_path


def test_healthy_devices_report_false_and_virtual_devices_are_skipped(root: Path) -> None:
    device(root, "loop0", state="offline\n")
    device(root, "dm-0", state="offline\n")
    device(root, "zram0", state="offline\n")
    (root / "sys/block/vda").mkdir()  # virtio: no state, no ioerr_cnt
    check = BlockDeviceCheck(Config(), HostRoot(root), device_info=no_udev)
    report = only(observe(check))
    assert (check.name, check.condition_types, report.type) == ("blockdev", ("DiskHardwareError",),
                                                                 "DiskHardwareError")
    assert (report.status, report.reason) == (Status.FALSE, "NoDiskHardwareErrors")
    assert report.message == "no offline device and no recent I/O errors (devices: sda, vda)"


@pytest.mark.parametrize(("state", "status"), [
    ("running", Status.FALSE),
    ("offline", Status.TRUE),
    ("blocked", Status.TRUE),
    ("transport-offline", Status.TRUE),
    ("live", Status.FALSE),
    ("dead", Status.TRUE),
    ("quiesce", Status.FALSE),
], ids=["scsi-running", "scsi-offline", "scsi-blocked", "scsi-transport-offline", "nvme-live", "nvme-dead",
        "scsi-quiesce-is-transient"])
def test_the_device_state_decides_the_condition(root: Path, state: str, status: Status) -> None:
    device(root, "sdb", state=f"{state}\n")
    report = only(observe(BlockDeviceCheck(Config(), HostRoot(root), device_info=no_udev)))
    assert report.status is status
    if status is Status.TRUE:
        assert (report.reason, report.message) == ("DiskDeviceOffline", f"sdb is {state}")


def test_an_offline_disk_recovers_when_it_runs_again(root: Path) -> None:
    check = BlockDeviceCheck(Config(), HostRoot(root), device_info=no_udev)
    device(root, "sda", state="offline\n")
    assert only(observe(check)).status is Status.TRUE
    device(root, "sda", state="running\n")
    assert only(observe(check, NOW + MINUTE)).status is Status.FALSE


def test_rising_io_errors_raise_an_event_and_hold_the_condition_for_the_quiet_period(root: Path) -> None:
    config = Config(io_error_quiet_period=dt.timedelta(minutes=30))
    check = BlockDeviceCheck(config, HostRoot(root), device_info=lambda name: {"ID_MODEL": "QEMU_HARDDISK"})
    device(root, "sda", ioerr="0x3\n")
    baseline = observe(check)  # errors from before the agent looked have no time: a baseline
    assert (only(baseline).status, baseline.events) == (Status.FALSE, ())

    device(root, "sda", ioerr="0x1a\n")
    rose = observe(check, NOW + MINUTE)
    assert [(e.reason, e.message) for e in rose.events] == [
        ("DiskIOError", "sda (QEMU_HARDDISK): I/O error count rose from 3 to 26")]
    report = only(rose)
    assert (report.status, report.reason) == (Status.TRUE, "DiskIOErrors")

    held = observe(check, NOW + 30 * MINUTE)
    assert (only(held).status, only(held).message, held.events) == (Status.TRUE, report.message, ())
    assert only(observe(check, NOW + 32 * MINUTE)).status is Status.FALSE


def test_a_counter_that_goes_down_is_a_new_baseline_not_an_error(root: Path) -> None:
    check = BlockDeviceCheck(Config(), HostRoot(root), device_info=no_udev)
    device(root, "sda", ioerr="0x10\n")
    observe(check)
    device(root, "sda", ioerr="0x0\n")  # the device was re-probed
    assert only(observe(check, NOW + MINUTE)).status is Status.FALSE
    device(root, "sda", ioerr="0x1\n")
    assert only(observe(check, NOW + 2 * MINUTE)).status is Status.TRUE


@pytest.mark.parametrize(("state", "ioerr", "denied", "fragment"), [
    ("running\n", "zz\n", "", "ioerr_cnt is not a hex number"),
    ("\n", "0x0\n", "", "state is empty"),
    (b"\xff\xfe", "0x0\n", "", "cannot read state"),
    ("running\n", "0x0\n", "/sys/block/sda/device/ioerr_cnt", "cannot read ioerr_cnt: [Errno 13] Permission denied"),
], ids=["garbage-counter", "empty-state", "binary-state", "permission-denied"])
def test_bad_sensor_data_makes_the_condition_unknown(
        root: Path, state: str | bytes, ioerr: str, denied: str, fragment: str) -> None:
    device(root, "sda", state=state, ioerr=ioerr)
    host = DeniedHost(root, denied=frozenset({denied} - {""}))
    report = only(observe(BlockDeviceCheck(Config(), host, device_info=no_udev)))
    assert (report.status, report.reason) == (Status.UNKNOWN, "DiskStateUnknown")
    assert fragment in report.message


def test_a_known_problem_wins_over_an_unreadable_neighbour(root: Path) -> None:
    device(root, "sda", state="offline\n")
    device(root, "sdb", ioerr="garbage\n")
    report = only(observe(BlockDeviceCheck(Config(), HostRoot(root), device_info=no_udev)))
    assert report.status is Status.TRUE
    assert "sdb: ioerr_cnt is not a hex number" in report.message


def test_a_host_root_without_sys_block_is_unknown(tmp_path: Path) -> None:
    report = only(observe(BlockDeviceCheck(Config(), HostRoot(tmp_path), device_info=no_udev)))
    assert report.status is Status.UNKNOWN
    assert report.message.startswith("cannot list block devices")


def test_udev_enrichment_is_off_for_a_fixture_root_and_loads_or_explains_itself_on_the_real_root(
        tmp_path: Path) -> None:
    assert BlockDeviceCheck(Config(), HostRoot(tmp_path)).enrichment.startswith("off (host root is")
    info, why = load_udev_device_info()
    assert (info is not None and why == "pyudev") or (info is None and why.startswith("unavailable"))
    if info is not None:
        assert info("no-such-device-xyz") == {}


def test_udev_enrichment_is_on_when_the_agents_udev_database_is_the_host_roots(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The DaemonSet mounts the host's /run/udev at the agent's /run/udev: the same directory as <host-root>/run/udev.
    own = tmp_path / "container-run-udev-data"
    own.mkdir()
    (tmp_path / "host/run/udev").mkdir(parents=True)
    (tmp_path / "host/run/udev/data").symlink_to(own)
    monkeypatch.setattr(blockdev, "UDEV_DATA", own)

    check = BlockDeviceCheck(Config(), HostRoot(tmp_path / "host"))

    assert check.enrichment == "pyudev" or check.enrichment.startswith("unavailable")


def test_udev_is_loaded_only_once_a_device_needs_describing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "container-run-udev-data"
    own.mkdir()
    (tmp_path / "host/run/udev").mkdir(parents=True)
    (tmp_path / "host/run/udev/data").symlink_to(own)
    monkeypatch.setattr(blockdev, "UDEV_DATA", own)
    loads: list[str] = []

    def udev() -> tuple[blockdev.DeviceInfo, str]:
        loads.append("udev")
        return (lambda name: {"ID_MODEL": "QEMU_HARDDISK"}), "pyudev"

    monkeypatch.setattr(blockdev, "load_udev_device_info", udev)
    device(tmp_path / "host", "sda")
    check = BlockDeviceCheck(Config(), HostRoot(tmp_path / "host"))

    assert only(observe(check)).status is Status.FALSE
    assert loads == []  # a healthy node never loads pyudev and libudev
    device(tmp_path / "host", "sda", state="offline\n")
    assert only(observe(check)).message == "sda (QEMU_HARDDISK) is offline"
    observe(check)
    assert loads == ["udev"] and check.enrichment == "pyudev"


def test_a_missing_libudev_degrades_to_sysfs_only_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyudev  # noqa: PLC0415 - only to break it

    def no_libudev() -> None:
        raise ImportError("Unable to find libudev")

    monkeypatch.setattr(pyudev, "Context", no_libudev)
    assert load_udev_device_info() == (None, "unavailable (Unable to find libudev)")
    check = BlockDeviceCheck(Config(), HostRoot(Path("/")))
    assert check.enrichment == "unavailable (Unable to find libudev)"


@pytest.mark.parametrize(("config", "errors"), [
    (Config(), []),
    (Config(ignore_prefixes=("loop", "")), ["ignorePrefixes[1]: must be a non-empty device name prefix, got ''"]),
    (Config(problem_states=("Offline",)), ["problemStates[0]: must be a lower-case sysfs state, got 'Offline'"]),
    (Config(problem_states=("running",)), ["problemStates[0]: 'running' is the healthy state"]),
    (Config(io_error_quiet_period=dt.timedelta(0)), ['ioErrorQuietPeriod: must be positive, got 0s']),
], ids=["defaults", "empty-prefix", "upper-case-state", "healthy-state", "zero-quiet-period"])
def test_validate_reports_each_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
