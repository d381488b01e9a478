"""I/O stalls from fixture /proc/pressure/io and /proc/diskstats deltas; time comes in as `now`."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.iostall import CONDITION, Config, IOStallCheck, read_diskstats
from agent.host import HostRoot
from agent.model import Observation, Status

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)
SECOND = dt.timedelta(seconds=1)


class Host:
    def __init__(self, root: Path) -> None:
        self.root = root
        for d in ("proc/pressure", "sys/block/nvme0n1", "sys/block/loop0"):
            (root / d).mkdir(parents=True)
        self.psi(0.0)
        self.disks(reads=1000, read_ms=2000, writes=500, write_ms=1500)

    def psi(self, full_avg60: float) -> None:
        (self.root / "proc/pressure/io").write_text(
            f"some avg10=1.00 avg60={full_avg60 + 1:.2f} avg300=1.00 total=100\n"
            f"full avg10=0.00 avg60={full_avg60:.2f} avg300=0.00 total=50\n")

    def disks(self, *, reads: int, read_ms: int, writes: int, write_ms: int, in_flight: int = 0,
              io_ms: int = 3000) -> None:
        # 5.5+ kernels: 17 counters after major, minor, name (discard and flush columns at the end)
        nvme = (f" 259       0 nvme0n1 {reads} 10 80000 {read_ms} {writes} 20 40000 {write_ms} {in_flight} {io_ms} "
                f"{read_ms + write_ms} 0 0 0 0 0 0")
        partition = f" 259       1 nvme0n1p1 {reads} 10 80000 {read_ms} {writes} 20 40000 {write_ms} 0 1 1 0 0 0 0 0 0"
        loop = "   7       0 loop0 5 0 10 99999 0 0 0 0 0 99999 99999 0 0 0 0 0 0"
        (self.root / "proc/diskstats").write_text("\n".join((nvme, partition, loop)) + "\n")


@pytest.fixture
def host(tmp_path: Path) -> Host:
    return Host(tmp_path)


def observe(check: IOStallCheck, now: dt.datetime) -> Observation:
    return asyncio.run(check.observe(now))


def status(observation: Observation) -> tuple[Status, str] | None:
    if not observation.conditions:
        return None
    (report,) = observation.conditions
    assert report.type == CONDITION
    return report.status, report.reason


def test_io_psi_full_sustained_for_the_window_is_a_stall(host: Host) -> None:
    check = IOStallCheck(Config(window=60 * SECOND), HostRoot(host.root))
    host.psi(45.0)

    assert status(observe(check, NOW)) is None  # no full window yet: silent
    assert status(observe(check, NOW + 30 * SECOND)) is None
    stalled = observe(check, NOW + 60 * SECOND)

    assert status(stalled) == (Status.TRUE, "IOStalled")
    assert "io PSI full avg60=45.0%" in stalled.conditions[0].message


def test_a_device_whose_requests_take_seconds_is_a_stall(host: Host) -> None:
    check = IOStallCheck(Config(window=dt.timedelta(0)), HostRoot(host.root))
    observe(check, NOW)
    host.disks(reads=1010, read_ms=2000 + 10 * 2500, writes=510, write_ms=1500 + 10 * 2500)

    stalled = observe(check, NOW + 30 * SECOND)

    assert status(stalled) == (Status.TRUE, "IOStalled")
    assert "nvme0n1 await 2500 ms over 20 requests" in stalled.conditions[0].message
    assert "nvme0n1p1" not in stalled.conditions[0].message  # whole disks only


def test_requests_in_flight_that_never_complete_are_a_stall(host: Host) -> None:
    check = IOStallCheck(Config(window=dt.timedelta(0)), HostRoot(host.root))
    observe(check, NOW)
    host.disks(reads=1000, read_ms=2000, writes=500, write_ms=1500, in_flight=32, io_ms=3000 + 30_000)

    stalled = observe(check, NOW + 30 * SECOND)

    assert status(stalled) == (Status.TRUE, "IOStalled")
    assert "32 requests in flight and completed none in 30s" in stalled.conditions[0].message


@pytest.mark.parametrize(("reads", "read_ms", "writes", "write_ms"), [
    (1100, 2000 + 100 * 5, 600, 1500 + 100 * 20),  # busy and fast
    (1005, 2000 + 5 * 9000, 500, 1500),  # slow, but too few requests to judge
], ids=["busy-fast", "few-slow"])
def test_a_busy_but_healthy_disk_is_not_a_stall(host: Host, reads: int, read_ms: int, writes: int,
                                                write_ms: int) -> None:
    check = IOStallCheck(Config(window=dt.timedelta(0)), HostRoot(host.root))
    observe(check, NOW)
    host.psi(5.0)
    host.disks(reads=reads, read_ms=read_ms, writes=writes, write_ms=write_ms)

    assert status(observe(check, NOW + 30 * SECOND)) == (Status.FALSE, "IOFlowing")


def test_a_short_diskstats_line_is_an_error_naming_the_line(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/diskstats").write_text(" 8 0 sda 1 2 3\n")

    with pytest.raises(ValueError, match="line 1 has not the 14"):
        read_diskstats(HostRoot(tmp_path))


def test_validation_names_the_bad_fields() -> None:
    assert problems(Config(full_avg60=0, max_await_ms=0, min_ios=0)) == [
        "fullAvg60: must be above 0 and at most 100, got 0", "maxAwaitMs: must be positive, got 0",
        "minIos: must be at least 1, got 0"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
