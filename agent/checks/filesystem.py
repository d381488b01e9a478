"""Read-only remounts and recorded filesystem errors.

`ReadonlyFilesystem`: each configured mount point that is mounted (exact match in the mount table; mount points
that are not mounted are ignored) is looked up in the host's mount table. A mount that was `rw` when first seen
and is now `ro` is the kernel's "Remounting filesystem read-only" after an error: True. A mount that was `ro`
from the start is normal on immutable distributions (a read-only `/`), so it is flagged only when listed in
`expect_rw` (default `/var/lib/kubelet`, which must always be writable). Remounting `rw` makes it False again.
The mount table is read from `/proc/1/mounts` (init's mount namespace, i.e. the host's even when the agent
runs in a pod with the host's /proc mounted) and, when that does not exist (fixtures), `/proc/mounts`.
The "seen rw" memory lives in the process, so after an agent (re)start a mount that is already `ro` would look
like one that was always `ro`. The kernel log fills that gap: the check reads the kernel's ring buffer
(`kernel_log`, default `/dev/kmsg`, from its oldest record on the first observation, then what is new) for
"Remounting filesystem read-only" (ext4, ext3) and "forced readonly" (btrfs), and a mount that is `ro` and whose
device the kernel named in such a line is True as well. A line that names no device counts for every `ro` mount;
`/dev/root` (the kernel's alias for the root device) counts with any device named. A kernel log that cannot be read
(no CAP_SYSLOG, no such file) leaves the mount table alone to decide; a line the ring buffer has already overwritten
cannot be seen.

`FilesystemCorruption`: ext4 keeps an error count in its superblock, exposed as
`/sys/fs/ext4/<dev>/errors_count` with `first_error_time`/`last_error_time` (Unix seconds, 0 when unset). A count
above zero is True until `e2fsck` clears it; every increase between two observations also yields an
`Ext4ErrorCountIncreased` event. XFS has no usable counter: `/sys/fs/xfs/<dev>/error/` holds retry settings and
`stats/` holds performance statistics, neither records corruption, so XFS shutdowns and corruption reports are
left to the kernel-log check (`XFS ... Shutting down filesystem`, `Corruption detected`).
"""

from __future__ import annotations

import datetime as dt
import posixpath
import re
from dataclasses import dataclass, field

from agent.bounds import Bounds, bounded, normal_absolute_path, text_form
from agent.host import HostRoot
from agent.logsources.kmsg import KmsgReader
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from agent.npd import re2
from agent.npd.re2 import compile_plain_pattern

READONLY = "ReadonlyFilesystem"
CORRUPTION = "FilesystemCorruption"

_OCTAL_ESCAPE = re.compile(r"\\([0-7]{3})")  # the kernel escapes space, tab, newline and backslash this way
# "EXT4-fs (sda1): Remounting filesystem read-only", "BTRFS error (device sda1): ... forced readonly"; ext3 wrote
# the remount on a line of its own, after the error line that named the device.
# On RE2 (linear time): with Python's re the optional device group made every "(" of a line scan the rest of it,
# quadratic in the line's length on every kernel record.
_REMOUNT_RO = compile_plain_pattern(r"(?:\((?:device )?(?P<device>[^()\s]+)\)[^\n]*?)?"
                                    r"(?:[Rr]emounting filesystem read-only|forced readonly)")
_ANY_DEVICE = "*"
_MAX_KMSG_READS = 64  # per observation: the backlog of a ring buffer is read in bounded slices


_KERNEL_LOG = text_form('an absolute path, or "" not to read the kernel log',
                        lambda path: not path or normal_absolute_path(path) is None)


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    mounts: tuple[str, ...] = bounded(("/", "/var/lib/kubelet", "/var/lib/containerd", "/var/lib/docker"),
                                      Bounds(form=normal_absolute_path, distinct_by=str))
    # ro even at first sight is a problem for these
    expect_rw: tuple[str, ...] = bounded(("/var/lib/kubelet",), Bounds(within="mounts"))
    # the first that exists is read
    mounts_files: tuple[str, ...] = bounded(("/proc/1/mounts", "/proc/mounts"),
                                            Bounds(not_empty=True, form=normal_absolute_path, distinct_by=str))
    # read for remount lines a restart would otherwise miss; "" = do not read
    kernel_log: str = bounded("/dev/kmsg", Bounds(form=_KERNEL_LOG))


@dataclass(frozen=True)
class Mount:
    device: str
    mount_point: str
    fs_type: str
    options: frozenset[str]

    @property
    def read_only(self) -> bool:
        return "ro" in self.options


def parse_mounts(text: str) -> dict[str, Mount]:
    """Mount point -> its visible mount. Later lines win: a mount stacked on the same point hides earlier ones."""
    mounts: dict[str, Mount] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) < 4:  # the kernel never writes such a line: this is not a mount table
            raise ValueError(f"line {number} is malformed: {line[:80]!r}")
        device, mount_point, fs_type = (_unescape(f) for f in fields[:3])
        mounts[mount_point] = Mount(device, mount_point, fs_type, frozenset(fields[3].split(",")))
    if not mounts:
        raise ValueError("the mount table is empty")
    return mounts


def _unescape(field: str) -> str:
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


class FilesystemCheck:
    name = "filesystem"
    condition_types = (READONLY, CORRUPTION)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._seen_rw: set[str] = set()  # mount points seen writable at least once
        self._ext4_counts: dict[str, int] = {}  # device -> errors_count at the last observation
        self._kmsg = KmsgReader(host.path(config.kernel_log)) if config.kernel_log else None
        self._remounted_ro: dict[str, str] = {}  # device name (or _ANY_DEVICE) -> the kernel's remount line

    async def observe(self, now: dt.datetime) -> Observation:
        corruption, events = self._corruption()
        return Observation(self.name, now, conditions=(self._readonly(), corruption), events=events)

    def _read_kernel_log(self) -> None:
        if self._kmsg is None:
            return
        try:
            for _ in range(_MAX_KMSG_READS):
                for record in self._kmsg.read():
                    if (match := _REMOUNT_RO.search(re2.bounded(record.message))) is not None:
                        self._remounted_ro[match.group("device") or _ANY_DEVICE] = record.message.strip()[:200]
                if not self._kmsg.behind:
                    return
        except OSError:
            # No kernel log here (no CAP_SYSLOG, no such file): the mount table alone decides, as before.
            self._kmsg.close()
            self._kmsg = None

    def _remount_line(self, device: str) -> str | None:
        """The kernel's remount-read-only line for `device`, if it logged one."""
        name = posixpath.basename(device)
        if name in self._remounted_ro:
            return self._remounted_ro[name]
        if _ANY_DEVICE in self._remounted_ro:
            return self._remounted_ro[_ANY_DEVICE]
        if name == "root" and self._remounted_ro:  # /dev/root: the kernel logs the real device name
            return next(iter(self._remounted_ro.values()))
        return None

    def _readonly(self) -> ConditionReport:
        self._read_kernel_log()
        try:
            source = next((f for f in self._config.mounts_files if self._host.path(f).exists()),
                          self._config.mounts_files[-1])
            table = parse_mounts(self._host.read_text(source))
        except (OSError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
            return ConditionReport(READONLY, Status.UNKNOWN, "MountTableUnreadable", f"cannot read mounts: {exc}")
        problems, watched = [], []
        for mount_point in self._config.mounts:
            mount = table.get(mount_point)
            if mount is None:
                continue
            watched.append(mount_point)
            if not mount.read_only:
                self._seen_rw.add(mount_point)
            elif mount_point in self._seen_rw:
                problems.append(f"{mount_point} ({mount.device}, {mount.fs_type}) was rw and is now read-only")
            elif mount_point in self._config.expect_rw:
                problems.append(f"{mount_point} ({mount.device}, {mount.fs_type}) is read-only, expected rw")
            elif (line := self._remount_line(mount.device)) is not None:
                problems.append(f"{mount_point} ({mount.device}, {mount.fs_type}) is read-only; the kernel "
                                f"logged: {line}")
        if problems:
            return ConditionReport(READONLY, Status.TRUE, "FilesystemIsReadOnly", "; ".join(problems))
        if not watched:
            return ConditionReport(READONLY, Status.FALSE, "FilesystemIsNotReadOnly", "no watched mount is mounted")
        return ConditionReport(READONLY, Status.FALSE, "FilesystemIsNotReadOnly",
                               f"no unexpected read-only mount among {', '.join(watched)}")

    def _corruption(self) -> tuple[ConditionReport, tuple[EventReport, ...]]:
        if not self._host.path("/sys/fs").is_dir():
            return ConditionReport(CORRUPTION, Status.UNKNOWN, "FilesystemErrorsUnknown",
                                   f"sysfs is not available at {self._host.path('/sys')}"), ()
        ext4 = self._host.path("/sys/fs/ext4")
        try:
            devices = sorted(p.name for p in ext4.iterdir() if p.is_dir() and p.name != "features")
        except FileNotFoundError:  # ext4 not loaded: no ext4 filesystem is mounted
            devices = []
        except OSError as exc:
            message = f"cannot list {ext4}: {exc}"
            return ConditionReport(CORRUPTION, Status.UNKNOWN, "FilesystemErrorsUnknown", message), ()
        problems: list[str] = []
        unknown: list[str] = []
        events: list[EventReport] = []
        counts: dict[str, int] = {}
        for device in devices:
            try:
                count = int(self._host.read_text(f"/sys/fs/ext4/{device}/errors_count").strip())
            except (OSError, ValueError) as exc:
                unknown.append(f"ext4 {device}: cannot read errors_count: {exc}")
                continue
            counts[device] = count
            if count <= 0:
                continue
            detail = f"ext4 {device}: {count} error(s) recorded{self._error_times(device)}"
            problems.append(detail)
            previous = self._ext4_counts.get(device)
            if previous is not None and count > previous:
                message = f"ext4 {device}: errors rose from {previous} to {count}"
                events.append(EventReport("Ext4ErrorCountIncreased", message))
        self._ext4_counts = counts  # devices that went away are forgotten, so a remount starts a new baseline
        if problems:
            report = ConditionReport(CORRUPTION, Status.TRUE, "FilesystemErrorsRecorded", "; ".join(problems + unknown))
        elif unknown:
            report = ConditionReport(CORRUPTION, Status.UNKNOWN, "FilesystemErrorsUnknown", "; ".join(unknown))
        else:
            checked = f"ext4 {', '.join(devices)}" if devices else "no ext4 filesystem mounted"
            report = ConditionReport(CORRUPTION, Status.FALSE, "NoFilesystemErrors", f"no errors recorded ({checked})")
        return report, tuple(events)

    def _error_times(self, device: str) -> str:
        """Optional detail: a missing or garbled time file is left out rather than hiding the error count."""
        parts = []
        for which in ("first", "last"):
            try:
                stamp = int(self._host.read_text(f"/sys/fs/ext4/{device}/{which}_error_time").strip())
                if stamp > 0:
                    parts.append(f"{which} {dt.datetime.fromtimestamp(stamp, dt.UTC).isoformat()}")
            except (OSError, ValueError, OverflowError):
                continue
        return f" ({', '.join(parts)})" if parts else ""
