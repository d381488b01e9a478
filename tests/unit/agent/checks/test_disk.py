"""DiskExhaustion: bytes and inodes per mounted mount point under the host root, I/O pressure in the message."""

from __future__ import annotations

import asyncio
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.disk import Config, DiskExhaustion, Thresholds
from agent.host import HostRoot
from agent.model import Check, CheckTiming, ConditionReport, Observation, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
IO_PSI = "some avg10=3.00 avg60=2.50 avg300=1.00 total=99\nfull avg10=1.00 avg60=1.25 avg300=0.50 total=42\n"


@dataclass(frozen=True)
class FakeStat:
    f_frsize: int = 1 << 20  # 1000 blocks of 1 MiB: a 1 GiB filesystem
    f_blocks: int = 1000
    f_bfree: int = 600
    f_bavail: int = 550  # 50 blocks reserved for root
    f_files: int = 1000
    f_ffree: int = 900


def used(bytes_percent: float = 40.0, inodes_percent: float = 10.0) -> FakeStat:
    """A filesystem with no root reservation at the given fill levels."""
    free = round(1000 * (100 - bytes_percent) / 100)
    return FakeStat(f_bfree=free, f_bavail=free, f_ffree=round(1000 * (100 - inodes_percent) / 100))


class FakeHost:
    """What statvfs answers per mount point, and which points are mounted."""

    def __init__(self, root: Path, stats: dict[str, FakeStat | OSError], mounted: set[str]) -> None:
        self.root, self.stats, self.mounted = root, stats, mounted

    def statvfs(self, path: Path) -> FakeStat:
        answer = self.stats[self._host_path(path)]
        if isinstance(answer, OSError):
            raise answer
        return answer

    def is_mount(self, path: Path) -> bool:
        return self._host_path(path) in self.mounted

    def _host_path(self, path: Path) -> str:
        assert path.is_relative_to(self.root), f"{path} was not looked up under the host root"
        return "/" + str(path.relative_to(self.root)).removeprefix(".")


ALL_MOUNTED = {"/var/lib/kubelet", "/var/lib/containerd"}


def make(tmp_path: Path, stats: dict[str, FakeStat | OSError], mounted: set[str] = ALL_MOUNTED,
         config: Config | None = None, io_psi: str | None = IO_PSI) -> tuple[DiskExhaustion, FakeHost]:
    if io_psi is not None:
        (tmp_path / "proc/pressure").mkdir(parents=True, exist_ok=True)
        (tmp_path / "proc/pressure/io").write_text(io_psi)
    fake = FakeHost(tmp_path, stats, mounted)
    check = DiskExhaustion(config or Config(), HostRoot(tmp_path), statvfs=fake.statvfs, is_mount=fake.is_mount)
    return check, fake


def observe(check: DiskExhaustion, at: dt.datetime = NOW) -> ConditionReport:
    obs: Observation = asyncio.run(check.observe(at))
    assert (obs.check, obs.at, obs.error, obs.events) == ("disk", at, "", ())
    (report,) = obs.conditions
    return report


HEALTHY = {"/": used(), "/var/lib/kubelet": used(), "/var/lib/containerd": used()}


def test_the_check_has_the_shape_the_supervisor_runs(tmp_path: Path) -> None:
    config = Config()
    check: Check = DiskExhaustion(config, HostRoot(tmp_path))
    assert (check.name, check.condition_types, check.timing) == ("disk", ("DiskExhaustion",), config.timing)
    assert config.mounts == ("/", "/var/lib/kubelet", "/var/lib/containerd")
    assert config.thresholds == Thresholds(90.0, 90.0)


@pytest.mark.parametrize(("mount", "fault", "reason"), [
    pytest.param("/", used(bytes_percent=95), "DiskSpaceExhausted", id="root-out-of-space"),
    pytest.param("/var/lib/containerd", used(bytes_percent=90), "DiskSpaceExhausted", id="at-the-threshold-counts"),
    pytest.param("/var/lib/kubelet", used(inodes_percent=97), "InodesExhausted", id="kubelet-out-of-inodes"),
    pytest.param("/", used(bytes_percent=99, inodes_percent=99), "DiskSpaceExhausted", id="bytes-named-before-inodes"),
    pytest.param("/", FakeStat(f_bfree=60, f_bavail=0), "DiskSpaceExhausted", id="root-reserved-blocks-count-as-full"),
])
def test_disk_exhaustion_turns_true_on_a_full_mount_and_false_once_it_is_freed(
        tmp_path: Path, mount: str, fault: FakeStat, reason: str) -> None:
    check, fake = make(tmp_path, dict(HEALTHY))
    assert observe(check).status is Status.FALSE
    fake.stats[mount] = fault
    report = observe(check)
    assert (report.status, report.reason) == (Status.TRUE, reason)
    assert report.message.startswith(mount)
    fake.stats[mount] = used()
    assert (observe(check).status, observe(check).reason) == (Status.FALSE, "DiskSpaceAvailable")


def test_the_message_lists_every_mount_with_io_pressure(tmp_path: Path) -> None:
    check, _ = make(tmp_path, {**HEALTHY, "/var/lib/containerd": FakeStat(f_files=0, f_ffree=0)})
    assert observe(check).message == (
        "/: 40.0% of 1.0 GiB, 10.0% inodes; /var/lib/kubelet: 40.0% of 1.0 GiB, 10.0% inodes; "
        "/var/lib/containerd: 42.1% of 1.0 GiB, no inode limit; io PSI some avg60=2.5% full avg60=1.2%")


def test_mount_points_that_are_not_mounted_are_skipped_and_named(tmp_path: Path) -> None:
    check, _ = make(tmp_path, {"/": used()}, mounted=set())
    report = observe(check)
    assert report.status is Status.FALSE
    assert "not mounted: /var/lib/kubelet, /var/lib/containerd" in report.message


def test_the_root_filesystem_is_always_checked_even_when_the_root_is_a_plain_directory(tmp_path: Path) -> None:
    check, _ = make(tmp_path, {"/": used(bytes_percent=95)}, mounted=set())
    assert observe(check).status is Status.TRUE


@pytest.mark.parametrize(("io_psi", "in_message"), [
    pytest.param(None, "io PSI unavailable", id="kernel-without-psi"),
    pytest.param("garbage\n", "io PSI unreadable (/proc/pressure/io: unexpected line 'garbage')", id="garbage"),
])
def test_io_pressure_is_context_so_a_bad_psi_file_does_not_make_the_disk_unknown(
        tmp_path: Path, io_psi: str | None, in_message: str) -> None:
    check, _ = make(tmp_path, dict(HEALTHY), io_psi=io_psi)
    report = observe(check)
    assert report.status is Status.FALSE
    assert in_message in report.message


def test_the_message_holds_while_the_finding_holds_and_changes_with_it(tmp_path: Path) -> None:
    check, fake = make(tmp_path, {**HEALTHY, "/": used(bytes_percent=95)})
    first = observe(check)
    fake.stats["/"] = used(bytes_percent=96)
    assert observe(check) == first  # a creeping percentage must not rewrite the Node every interval
    fake.stats["/var/lib/kubelet"] = used(inodes_percent=95)
    second = observe(check)
    assert second.status is Status.TRUE and second != first
    assert "/var/lib/kubelet 95.0% of inodes used" in second.message


@pytest.mark.parametrize(("answer", "in_message"), [
    pytest.param(FileNotFoundError(2, "No such file or directory"), "/var/lib/kubelet: No such file", id="vanished"),
    pytest.param(PermissionError(13, "Permission denied"), "Permission denied", id="denied"),
    pytest.param(FakeStat(f_blocks=-1), "negative count", id="negative-blocks"),
    pytest.param(FakeStat(f_ffree=-5), "negative count", id="negative-free-inodes"),
    pytest.param(FakeStat(f_bfree=2000), "more free than total", id="more-free-than-total"),
    pytest.param(FakeStat(f_files=10, f_ffree=20), "more free than total", id="more-free-inodes-than-total"),
])
def test_bad_statvfs_data_reports_unknown_with_the_cause(
        tmp_path: Path, answer: FakeStat | OSError, in_message: str) -> None:
    check, _ = make(tmp_path, {**HEALTHY, "/var/lib/kubelet": answer})
    report = observe(check)
    assert (report.status, report.reason) == (Status.UNKNOWN, "BadSensorData")
    assert in_message in report.message


def test_a_full_mount_is_reported_even_when_another_cannot_be_read(tmp_path: Path) -> None:
    check, _ = make(tmp_path, {"/": used(bytes_percent=95), "/var/lib/kubelet": OSError(5, "Input/output error"),
                               "/var/lib/containerd": used()})
    report = observe(check)
    assert report.status is Status.TRUE
    assert "unreadable /var/lib/kubelet: Input/output error" in report.message


def test_an_empty_filesystem_of_size_zero_is_not_full(tmp_path: Path) -> None:
    check, _ = make(tmp_path, {**HEALTHY, "/": FakeStat(f_blocks=0, f_bfree=0, f_bavail=0)})
    assert observe(check).status is Status.FALSE


def test_the_default_statvfs_reads_the_real_filesystem_under_the_host_root(tmp_path: Path) -> None:
    check = DiskExhaustion(Config(mounts=("/",), thresholds=Thresholds(100, 100)), HostRoot(tmp_path))
    report = observe(check)
    assert report.status is Status.FALSE
    assert report.message.startswith("/: ")


@pytest.mark.parametrize(("config", "errors"), [
    pytest.param(Config(), [], id="defaults"),
    pytest.param(Config(mounts=()), ['mounts: must not be empty'], id="no-mounts"),
    pytest.param(Config(mounts=("/", "var/lib")), ["mounts[1]: must be an absolute path, got 'var/lib'"],
                 id="relative-mount"),
    pytest.param(Config(mounts=("/data", "/data/")), ["mounts[1]: '/data/' is listed twice, as mounts[0] too"],
                 id="duplicate-mount"),
    pytest.param(Config(thresholds=Thresholds(bytes_percent=0, inodes_percent=150)),
                 ['thresholds.bytesPercent: must be above 0 and at most 100, got 0',
                  'thresholds.inodesPercent: must be above 0 and at most 100, got 150'],
                 id="thresholds-out-of-range"),
    pytest.param(Config(timing=CheckTiming(interval=dt.timedelta(seconds=-5))),
                 ["interval: must be at least 1s (a check's findings reach the Node at most once a second; sampling "
                  "faster only costs CPU), got -5s",
                  'timeout: must not be longer than interval (-5s), got 10s'], id="negative-interval"),
])
def test_validate_reports_every_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
