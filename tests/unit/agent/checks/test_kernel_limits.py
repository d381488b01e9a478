"""Threads against pid_max/threads-max and file handles against file-max, from a fixture /proc."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.kernel_limits import FILES, PIDS, Config, KernelLimits
from agent.host import HostRoot
from agent.model import Status

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)


def host(root: Path, *, loadavg: str = "0.50 0.40 0.30 2/1234 56789\n", pid_max: str = "4194304\n",
         threads_max: str = "255000\n", file_nr: str = "10240\t0\t9223372036854775807\n") -> HostRoot:
    (root / "proc/sys/kernel").mkdir(parents=True)
    (root / "proc/sys/fs").mkdir(parents=True)
    (root / "proc/loadavg").write_text(loadavg)
    (root / "proc/sys/kernel/pid_max").write_text(pid_max)
    (root / "proc/sys/kernel/threads-max").write_text(threads_max)
    (root / "proc/sys/fs/file-nr").write_text(file_nr)
    return HostRoot(root)


def observe(h: HostRoot) -> dict[str, tuple[Status, str, str]]:
    observation = asyncio.run(KernelLimits(Config(), h).observe(NOW))
    return {c.type: (c.status, c.reason, c.message) for c in observation.conditions}


@pytest.mark.parametrize(("loadavg", "pid_max", "threads_max", "status", "reason", "detail"), [
    ("0.50 0.40 0.30 2/1234 56789", "4194304", "255000", Status.FALSE, "SufficientPIDs", "1234 threads of threads-max"),
    # the default pid_max of 32768 on older distributions is the lower limit here
    ("9.00 8.00 7.00 12/30000 99999", "32768", "255000", Status.TRUE, "ThreadsNearLimit", "30000 threads of pid_max"),
    ("9.00 8.00 7.00 12/29000 99999", "32768", "255000", Status.FALSE, "SufficientPIDs", "(88.5%"),
    ("9.00 8.00 7.00 12/240000 99999", "4194304", "255000", Status.TRUE, "ThreadsNearLimit", "of threads-max 255000"),
], ids=["plenty", "pid-max-32768", "just-below", "threads-max"])
def test_threads_are_measured_against_the_lower_of_pid_max_and_threads_max(
        tmp_path: Path, loadavg: str, pid_max: str, threads_max: str, status: Status, reason: str,
        detail: str) -> None:
    result = observe(host(tmp_path, loadavg=loadavg, pid_max=pid_max, threads_max=threads_max))[PIDS]

    assert result[:2] == (status, reason)
    assert detail in result[2]


@pytest.mark.parametrize(("file_nr", "status", "reason"), [
    ("10240\t0\t9223372036854775807", Status.FALSE, "SufficientFileHandles"),
    ("95000\t0\t100000", Status.TRUE, "FileHandlesNearLimit"),
    ("95000\t10000\t100000", Status.FALSE, "SufficientFileHandles"),  # old kernels: unused handles are free
], ids=["huge-file-max", "lowered-file-max", "unused-counted-as-free"])
def test_file_handles_in_use_are_measured_against_file_max(tmp_path: Path, file_nr: str, status: Status,
                                                           reason: str) -> None:
    assert observe(host(tmp_path, file_nr=file_nr))[FILES][:2] == (status, reason)


@pytest.mark.parametrize(("field", "value", "type_", "message"), [
    ("loadavg", "0.50 0.40 0.30\n", PIDS, "/proc/loadavg: no running/total field"),
    ("pid_max", "lots\n", PIDS, "/proc/sys/kernel/pid_max: 'lots' is not a number"),
    ("file_nr", "1 2\n", FILES, "/proc/sys/fs/file-nr: expected three numbers"),
], ids=["loadavg", "pid_max", "file-nr"])
def test_unreadable_numbers_make_the_condition_unknown_and_say_which_file(
        tmp_path: Path, field: str, value: str, type_: str, message: str) -> None:
    result = observe(host(tmp_path, **{field: value}))[type_]

    assert result[:2] == (Status.UNKNOWN, "BadSensorData")
    assert message in result[2]


def test_validation_names_the_bad_thresholds() -> None:
    assert problems(Config(max_thread_percent=0, max_file_handle_percent=101)) == [
        "maxThreadPercent: must be above 0 and at most 100, got 0",
        "maxFileHandlePercent: must be above 0 and at most 100, got 101"]


def test_a_changing_count_keeps_the_message_so_the_node_is_not_rewritten(tmp_path: Path) -> None:
    h = host(tmp_path)
    check = KernelLimits(Config(), h)
    first = asyncio.run(check.observe(NOW)).conditions
    (tmp_path / "proc/loadavg").write_text("0.50 0.40 0.30 2/1300 56789\n")

    assert asyncio.run(check.observe(NOW)).conditions == first


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
