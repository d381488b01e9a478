"""Block device health: `DiskHardwareError`.

A separate condition rather than part of `FilesystemCorruption`, because the remedy differs: a corrupt
filesystem needs fsck, a failing disk needs replacing (and fsck would not help).

For each device under `<root>/sys/block/*` (minus `ignore_prefixes`: loop, ram, zram and device-mapper devices
have no hardware; optical drives count "no medium" as I/O errors):
- `device/state` (SCSI: running/offline/blocked/...; NVMe controller: live/resetting/dead) in `problem_states`
  -> True while it stays there. Devices without a state file (virtio, xen) are not checked for it.
- `device/ioerr_cnt` (SCSI, hex) rising between two observations -> a `DiskIOError` event and True until
  `io_error_quiet_period` passes without a further rise. The first reading of a device is a baseline: errors
  counted before the agent saw the device have no known time.

sysfs read through the host root is the only source of truth, so fixtures and pods work alike. pyudev only adds
model and serial to messages, and only when the udev database libudev reads (`/run/udev/data` of the agent's own
root, next to /sys, which shows the host's block devices in a container too) is the host's: the host root is
`/`, or the DaemonSet mounts the host's /run/udev there, so it is the same directory as `<host-root>/run/udev/data`.
A fixture root has no such twin, so its messages stay free of this machine's disks. When pyudev or libudev.so is
missing, messages simply lack that detail; `BlockDeviceCheck.enrichment` says why. pyudev and libudev are loaded
on first need (a device to describe, or a question to `enrichment`): about 0.7 MiB an agent on a healthy node
never needs.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent.bounds import POSITIVE, Bounds, bounded, text_form
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from nodemedic_common.inputs import quoted

CONDITION = "DiskHardwareError"

DeviceInfo = Callable[[str], Mapping[str, str]]  # device name ("sda") -> udev properties worth showing

_UDEV_KEYS = ("ID_MODEL", "ID_SERIAL_SHORT", "ID_PATH")
UDEV_DATA = Path("/run/udev/data")  # where libudev looks, in the agent's own mount namespace

_HEALTHY_STATES = ("running", "live")
_DEVICE_PREFIX = text_form("a non-empty device name prefix", lambda prefix: bool(prefix) and "/" not in prefix)


def _problem_state(state: str) -> str | None:
    if not state or state != state.strip().lower():
        return f"must be a lower-case sysfs state, got {quoted(state)}"
    return f"{quoted(state)} is the healthy state" if state in _HEALTHY_STATES else None


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    ignore_prefixes: tuple[str, ...] = bounded(("loop", "ram", "zram", "dm-", "sr"), Bounds(form=_DEVICE_PREFIX))
    problem_states: tuple[str, ...] = bounded(("offline", "blocked", "transport-offline", "dead"),
                                              Bounds(form=_problem_state))
    io_error_quiet_period: dt.timedelta = bounded(dt.timedelta(minutes=30), POSITIVE)


def load_udev_device_info() -> tuple[DeviceInfo | None, str]:
    """pyudev's view of the real host, or None and the reason it is unavailable."""
    try:
        import pyudev  # noqa: PLC0415 - optional: only on a real host root, and libudev may be missing

        context = pyudev.Context()  # loads libudev.so.1; ImportError when it is not installed
    except ImportError as exc:
        return None, f"unavailable ({exc})"

    def info(name: str) -> Mapping[str, str]:
        try:
            props = pyudev.Devices.from_name(context, "block", name).properties
            return {key: props[key] for key in _UDEV_KEYS if key in props}
        except (pyudev.DeviceNotFoundError, OSError, ValueError):  # a device can vanish between sysfs and udev
            return {}

    return info, "pyudev"


def _same_directory(a: Path, b: Path) -> bool:
    try:
        return os.path.samestat(a.stat(), b.stat())
    except OSError:
        return False


class BlockDeviceCheck:
    name = "blockdev"
    condition_types = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot, *, device_info: DeviceInfo | None = None) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._device_info: DeviceInfo | None = device_info
        self._udev_pending = device_info is None and (
            host.root == Path("/") or _same_directory(UDEV_DATA, host.path("/run/udev/data")))
        if device_info is not None:
            self._enrichment = "injected"
        elif not self._udev_pending:
            self._enrichment = (
                f"off (host root is {host.root} and {UDEV_DATA} is not its /run/udev/data; libudev sees only /)")
        self._ioerr: dict[str, int] = {}  # device -> ioerr_cnt at the last observation
        self._last_io_error: dict[str, tuple[dt.datetime, int]] = {}  # device -> (when it last rose, count)

    @property
    def enrichment(self) -> str:
        """Where model and serial in messages come from: "pyudev", "injected", or why there are none."""
        self._load_udev()
        return self._enrichment

    def _load_udev(self) -> None:
        if self._udev_pending:
            self._udev_pending = False
            self._device_info, self._enrichment = load_udev_device_info()

    async def observe(self, now: dt.datetime) -> Observation:
        try:
            devices = sorted(p.name for p in self._host.path("/sys/block").iterdir()
                             if not p.name.startswith(self._config.ignore_prefixes))
        except OSError as exc:
            report = ConditionReport(CONDITION, Status.UNKNOWN, "DiskStateUnknown", f"cannot list block devices: {exc}")
            return Observation(self.name, now, conditions=(report,))
        offline: list[str] = []
        unknown: list[str] = []
        events: list[EventReport] = []
        counts: dict[str, int] = {}
        for device in devices:
            state = self._read(f"/sys/block/{device}/device/state", unknown, device)
            if state is not None and state in self._config.problem_states:
                offline.append(f"{self._describe(device)} is {state}")
            raw = self._read(f"/sys/block/{device}/device/ioerr_cnt", unknown, device)
            if raw is None:
                continue
            try:
                count = int(raw, 16)  # "0x1a"; int() accepts the prefix with base 16
            except ValueError:
                unknown.append(f"{device}: ioerr_cnt is not a hex number: {raw[:40]!r}")
                continue
            counts[device] = count
            previous = self._ioerr.get(device)
            if previous is not None and count > previous:
                self._last_io_error[device] = (now, count)
                events.append(EventReport("DiskIOError", f"{self._describe(device)}: I/O error count rose from "
                                                         f"{previous} to {count}"))
        # a device that disappeared and comes back (re-probed, counter reset) starts a new baseline
        self._ioerr = counts
        quiet_since = now - self._config.io_error_quiet_period
        self._last_io_error = {d: v for d, v in self._last_io_error.items() if v[0] > quiet_since}
        io_errors = [f"{self._describe(d)} had I/O errors (count {c} at {t.isoformat()})"
                     for d, (t, c) in sorted(self._last_io_error.items())]
        if offline or io_errors:
            reason = "DiskDeviceOffline" if offline else "DiskIOErrors"
            report = ConditionReport(CONDITION, Status.TRUE, reason, "; ".join(offline + io_errors + unknown))
        elif unknown:
            report = ConditionReport(CONDITION, Status.UNKNOWN, "DiskStateUnknown", "; ".join(unknown))
        else:
            checked = ", ".join(devices) or "none"
            report = ConditionReport(CONDITION, Status.FALSE, "NoDiskHardwareErrors",
                                     f"no offline device and no recent I/O errors (devices: {checked})")
        return Observation(self.name, now, conditions=(report,), events=tuple(events))

    def _read(self, host_path: str, unknown: list[str], device: str) -> str | None:
        """The file's stripped text; None when absent (the driver does not expose it) or unreadable (noted)."""
        try:
            text = self._host.read_text(host_path).strip()
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            unknown.append(f"{device}: cannot read {host_path.rsplit('/', 1)[-1]}: {exc}")
            return None
        if not text:
            unknown.append(f"{device}: {host_path.rsplit('/', 1)[-1]} is empty")
            return None
        return text

    def _describe(self, device: str) -> str:
        self._load_udev()
        info = self._device_info(device) if self._device_info else {}
        details = ", ".join(info[key] for key in _UDEV_KEYS if info.get(key))
        return f"{device} ({details})" if details else device
