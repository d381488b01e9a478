"""Kernel-wide limits that stop a node from starting anything new: `PIDExhaustion`, `FileHandleExhaustion`.

`PIDExhaustion`: every thread takes a PID, so the thread count is what runs out. It is the total in field 4 of
`/proc/loadavg` ("running/total", every task in the kernel's scheduler, i.e. every thread), against the lower of
`/proc/sys/kernel/pid_max` and `/proc/sys/kernel/threads-max` (either limit stops `fork()`/`clone()`). Counting
processes instead (as some tools do) undercounts: one Java or Go process can hold thousands of threads. True at
`max_percent` or more. The kubelet's own `PIDPressure` tracks only its eviction threshold for pods.

`FileHandleExhaustion`: `/proc/sys/fs/file-nr` is "allocated unused max"; in use = allocated - unused (kernels
since 2.6 report unused as 0). True at `max_percent` of max or more. Most kernels set file-max near 2^63, where
this never fires; it matters on nodes with a file-max lowered by hand.

The kernel's own failure lines ("cgroup: fork rejected by pids controller", "VFS: file-max limit N reached") are
events from the shipped kernel monitor; the Go runtime's "failed to create new OS thread" shows in the journal
(see `agent/defaults/kubelet-journal-monitor.json`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import PERCENT, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.verdicts.sustained import StickyReport

PIDS = "PIDExhaustion"
FILES = "FileHandleExhaustion"


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    max_thread_percent: float = bounded(90.0, PERCENT)
    max_file_handle_percent: float = bounded(90.0, PERCENT)


def read_int(host: HostRoot, path: str) -> int:
    text = host.read_sensor(path).strip()
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{path}: {text[:40]!r} is not a number") from None


def read_threads(host: HostRoot) -> int:
    """The kernel's task count: field 4 of /proc/loadavg is "running/total"."""
    text = host.read_sensor("/proc/loadavg")
    fields = text.split()
    try:
        return int(fields[3].split("/")[1])
    except (IndexError, ValueError):
        raise ValueError(f"/proc/loadavg: no running/total field in {text.strip()[:60]!r}") from None


def read_file_nr(host: HostRoot) -> tuple[int, int]:
    """(handles in use, file-max) from /proc/sys/fs/file-nr."""
    text = host.read_sensor("/proc/sys/fs/file-nr")
    try:
        allocated, unused, maximum = (int(v) for v in text.split())
    except ValueError:
        raise ValueError(f"/proc/sys/fs/file-nr: expected three numbers, got {text.strip()[:60]!r}") from None
    if maximum <= 0:
        raise ValueError(f"/proc/sys/fs/file-nr: file-max {maximum} is not positive")
    return allocated - unused, maximum


class KernelLimits:
    name = "limits"
    condition_types: tuple[str, ...] = (PIDS, FILES)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        # Messages carry live counts: keep each one until its status or reason changes, or every observation
        # would be a write to the Node.
        self._sticky = {PIDS: StickyReport(), FILES: StickyReport()}

    async def observe(self, now: dt.datetime) -> Observation:
        reports = (self._pids(), self._files())
        return Observation(self.name, now, conditions=tuple(
            self._sticky[r.type](r, (r.status, r.reason)) for r in reports))

    def _pids(self) -> ConditionReport:
        try:
            threads = read_threads(self._host)
            pid_max = read_int(self._host, "/proc/sys/kernel/pid_max")
            threads_max = read_int(self._host, "/proc/sys/kernel/threads-max")
        except ValueError as e:
            return ConditionReport(PIDS, Status.UNKNOWN, "BadSensorData", str(e))
        limit, which = min((pid_max, "pid_max"), (threads_max, "threads-max"))
        percent = 100 * threads / limit if limit > 0 else 100.0
        threshold = self._config.max_thread_percent
        detail = (f"{threads} threads of {which} {limit} ({percent:.1f}%, threshold {threshold:g}%; "
                  f"pid_max {pid_max}, threads-max {threads_max})")
        if percent >= threshold:
            return ConditionReport(PIDS, Status.TRUE, "ThreadsNearLimit", detail)
        return ConditionReport(PIDS, Status.FALSE, "SufficientPIDs", detail)

    def _files(self) -> ConditionReport:
        try:
            used, maximum = read_file_nr(self._host)
        except ValueError as e:
            return ConditionReport(FILES, Status.UNKNOWN, "BadSensorData", str(e))
        percent = 100 * used / maximum
        threshold = self._config.max_file_handle_percent
        detail = f"{used} file handles of file-max {maximum} ({percent:.1f}%, threshold {threshold:g}%)"
        if percent >= threshold:
            return ConditionReport(FILES, Status.TRUE, "FileHandlesNearLimit", detail)
        return ConditionReport(FILES, Status.FALSE, "SufficientFileHandles", detail)
