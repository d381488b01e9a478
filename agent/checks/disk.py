"""DiskExhaustion: a filesystem the node depends on is (nearly) out of bytes or inodes.

Each configured mount point is looked at under the host root with `statvfs`. "/" is always taken; the others
only when they are a mount point of their own on the host, because a directory on the root filesystem would
only repeat the figures of "/" (and one missing from this node has nothing to exhaust). Used percentages follow
`df`: bytes used / (used + available to unprivileged users), so root-reserved blocks count as full, which is
what pods feel; inodes used / total, skipped on filesystems that have no inode limit (f_files = 0, e.g. btrfs).

No sustain window: disk usage is a level that moves slowly, not a noisy rate. The message keeps the figures of
the last change of finding (which mounts are full or unreadable, `psi.StickyReport`), so a percentage creeping
by 0.1 does not rewrite the Node every interval. True wins over Unknown (one full disk is a problem even if
another could not be read), Unknown wins over False.

I/O pressure (PSI `/proc/pressure/io`) is only reported in the message, not as a condition of its own: high
I/O stall is mostly the workload's doing (a batch job reading hard), so a taint on it would move pods around
for the wrong reason far more often than for a failing disk — and failing disks are caught by the kernel log
and block device checks, which see the errors themselves.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent.bounds import PERCENT, Bounds, absolute_path, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.sensors.psi import describe, read_pressure
from agent.verdicts.sustained import StickyReport

CONDITION = "DiskExhaustion"


@dataclass(frozen=True)
class Thresholds:
    bytes_percent: float = bounded(90.0, PERCENT)  # used share of the space available to pods
    inodes_percent: float = bounded(90.0, PERCENT)


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    mounts: tuple[str, ...] = bounded(("/", "/var/lib/kubelet", "/var/lib/containerd"),
                                      Bounds(not_empty=True, form=absolute_path, distinct_by=os.path.normpath))
    thresholds: Thresholds = field(default_factory=Thresholds)


class StatVFS(Protocol):
    """The fields of `os.statvfs_result` the check reads."""

    @property
    def f_frsize(self) -> int: ...
    @property
    def f_blocks(self) -> int: ...
    @property
    def f_bfree(self) -> int: ...
    @property
    def f_bavail(self) -> int: ...
    @property
    def f_files(self) -> int: ...
    @property
    def f_ffree(self) -> int: ...


@dataclass(frozen=True)
class Usage:
    mount: str
    bytes_percent: float
    size_bytes: int
    inodes_percent: float | None  # None: the filesystem has no inode limit


class DiskExhaustion:
    name = "disk"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot, *,
                 statvfs: Callable[[Path], StatVFS] = os.statvfs,
                 is_mount: Callable[[Path], bool] = os.path.ismount) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._statvfs = statvfs
        self._is_mount = is_mount
        self._sticky = StickyReport()

    async def observe(self, now: dt.datetime) -> Observation:
        # statvfs is usually instant, but on a wedged filesystem (a dead NFS or iSCSI backend under a mount) it
        # blocks in the kernel; in a thread it can only hang this check until the supervisor's timeout, never the loop.
        report = await asyncio.get_running_loop().run_in_executor(None, self._condition)
        return Observation(self.name, now, (report,))

    def _condition(self) -> ConditionReport:
        t = self._config.thresholds
        full: list[str] = []
        finding: list[str] = []  # what is full or unreadable, without figures: the key of the sticky message
        out_of_space = False
        unreadable: list[str] = []
        seen: list[str] = []
        skipped: list[str] = []
        for mount in self._config.mounts:
            path = self._host.path(mount)
            if mount != "/" and not self._is_mount(path):
                skipped.append(mount)
                continue
            try:
                usage = self._usage(mount, path)
            except (OSError, ValueError) as e:
                unreadable.append(f"{mount}: {getattr(e, 'strerror', None) or e}")
                finding.append(f"{mount} unreadable")
                continue
            seen.append(_describe(usage))
            if usage.bytes_percent >= t.bytes_percent:
                full.append(f"{mount} {usage.bytes_percent:.1f}% of bytes used (threshold {t.bytes_percent:g}%)")
                out_of_space = True
                finding.append(f"{mount} bytes")
            if usage.inodes_percent is not None and usage.inodes_percent >= t.inodes_percent:
                full.append(f"{mount} {usage.inodes_percent:.1f}% of inodes used (threshold {t.inodes_percent:g}%)")
                finding.append(f"{mount} inodes")
        context = [*seen, *(f"unreadable {u}" for u in unreadable)]
        if skipped:
            context.append(f"not mounted: {', '.join(skipped)}")
        context.append(self._io_pressure())
        if full:
            # Bytes before inodes: running out of space is the commoner cause and what an operator checks first.
            reason = "DiskSpaceExhausted" if out_of_space else "InodesExhausted"
            report = ConditionReport(CONDITION, Status.TRUE, reason, "; ".join(full + context))
        elif unreadable:
            report = ConditionReport(CONDITION, Status.UNKNOWN, "BadSensorData", "; ".join(context))
        else:
            report = ConditionReport(CONDITION, Status.FALSE, "DiskSpaceAvailable", "; ".join(context))
        return self._sticky(report, (report.status, tuple(finding), tuple(skipped)))

    def _usage(self, mount: str, path: Path) -> Usage:
        st = self._statvfs(path)
        if min(st.f_frsize, st.f_blocks, st.f_bfree, st.f_bavail, st.f_files, st.f_ffree) < 0:
            raise ValueError("statvfs reported a negative count")
        if st.f_bfree > st.f_blocks or st.f_ffree > st.f_files:
            raise ValueError("statvfs reported more free than total")
        used = st.f_blocks - st.f_bfree
        usable = used + st.f_bavail
        bytes_percent = 100 * used / usable if usable else 0.0
        inodes = 100 * (st.f_files - st.f_ffree) / st.f_files if st.f_files else None
        return Usage(mount, bytes_percent, st.f_blocks * st.f_frsize, inodes)

    def _io_pressure(self) -> str:
        # Context only (see the module doc), so a bad PSI file is mentioned rather than making the disk Unknown.
        try:
            return describe("io", read_pressure(self._host, "/proc/pressure/io"))
        except ValueError as e:
            return f"io PSI unreadable ({e})"


def _describe(usage: Usage) -> str:
    inodes = "no inode limit" if usage.inodes_percent is None else f"{usage.inodes_percent:.1f}% inodes"
    return f"{usage.mount}: {usage.bytes_percent:.1f}% of {usage.size_bytes / 2**30:.1f} GiB, {inodes}"

