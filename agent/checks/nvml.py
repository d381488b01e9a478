"""NVIDIA GPU health that only the driver can tell, read through NVML (no DCGM): one check, `nvml`.

Conditions (each names every affected GPU by index, PCI id and UUID; a signal no GPU of the node supports is not
reported at all, an NVML error other than "not supported" makes it Unknown):
- `GPUUncorrectableECC`: volatile double-bit (uncorrectable) ECC errors since the driver loaded. Cleared by a
  GPU reset or reboot, when the volatile count goes back to 0.
- `GPURemapPending`: rows remapped (or pages retired, on GPUs before Ampere) and waiting for a GPU reset.
- `GPURemapFailed`: row remapping failed: the GPU has no spare row left and needs replacing.
- `GPUNVLinkDown`: an NVLink seen active since the agent started is inactive.
- `GPUHardwareSlowdown`: the clocks are held down by the hardware (HW slowdown, HW thermal slowdown, power brake)
  on `slowdown_polls` looks in a row: one look can catch a P-state change that sets the bit for an instant.
- `GPUFabricDegraded`: the GPU's NVLink fabric registration failed or the fabric reports degraded bandwidth, an
  unhealthy route or a wrong configuration (GPUs in an NVSwitch or multi-node NVLink system only).

Events, for counters that only grow (the first look is the baseline; a counter that went down was reset, and is
the new baseline): the aggregate uncorrectable ECC count, remapped rows, retired pages, NVLink replay/recovery/CRC
errors, PCIe replays; the software power cap engaging; and every Xid the driver posts to NVML's event set
(reason `NvidiaXid`, worded like the kernel line so `agent/reporting/xid_pairs.py` reports an Xid seen in both the
kernel log and NVML once; an Xid for a GPU whose bus id NVML could not tell, or for a GPU the check did not list, is
worded so that it says so, and is not paired); the Xid event set failing, once until it answers again.

NVML's answers are distrusted (`agent/sensors/nvml_answers.py`): a value of the wrong shape, or any exception from
the binding, is that GPU's signal Unknown (its label and the words in the message); the other GPUs' verdicts stand.
A GPU is tracked under its NVML index and whatever identity NVML told (`Gpu.key`), so GPUs whose bus id or UUID could
not be read never share counters or links.

No NVIDIA library below the host root: no report, and the next look in `absent_every`. A library but no driver
loaded: the same.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from agent.bounds import AT_LEAST_ONE, Bounds, absolute_path, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Status
from agent.sensors import nvml_readings as nv
from agent.sensors.nvml_library import DEFAULT_LIBRARY_DIRS, find_library, load_binding

ECC = "GPUUncorrectableECC"
REMAP_PENDING = "GPURemapPending"
REMAP_FAILED = "GPURemapFailed"
NVLINK_DOWN = "GPUNVLinkDown"
SLOWDOWN = "GPUHardwareSlowdown"
FABRIC = "GPUFabricDegraded"
XID = "NvidiaXid"
_DRIVER_NOT_LOADED = 9
_MAX_GPUS = 256  # more than any node holds: a larger count is no GPU count
_XID_EVENT = 0x8  # nvmlEventTypeXidCriticalError
_SW_POWER_CAP = 0x4
_HW_SLOWDOWNS = {0x8: "HW slowdown", 0x40: "HW thermal slowdown", 0x80: "HW power brake"}
_FABRIC_IN_PROGRESS, _FABRIC_COMPLETED = 2, 3
# (shift, value meaning trouble, words) in the fabric health mask (NVML_GPU_FABRIC_HEALTH_MASK_*)
_FABRIC_HEALTH = ((0, 1, "degraded bandwidth"), (4, 1, "unhealthy route"))
_FABRIC_CONFIG_SHIFT = 8  # incorrect configuration: 0 not supported, 1 none, 2.. a wrong configuration

Loader = Callable[[HostRoot, tuple[str, ...]], Any]


def load_host_nvml(host: HostRoot, dirs: tuple[str, ...]) -> Any:
    """The binding over the host's library, or None without one."""
    library = find_library(host, dirs)
    if library is None:
        return None
    try:
        return load_binding(library)
    except OSError:  # a file of that name that is no library for this machine
        return None


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    library_dirs: tuple[str, ...] = bounded(DEFAULT_LIBRARY_DIRS, Bounds(form=absolute_path))
    # how often a node without NVML looks again
    absent_every: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(not_shorter_than="timing.interval"))
    slowdown_polls: int = bounded(2, AT_LEAST_ONE)


@dataclass
class _Verdict:
    """One condition type over every GPU: problems win, then errors; no GPU that answers means no report."""

    problems: list[tuple[str, str]] = field(default_factory=list)  # (reason, GPU label: detail)
    failures: list[str] = field(default_factory=list)
    checked: int = 0

    def add(self, label: str, value: object, problem: tuple[str, str] | None = None) -> None:
        if isinstance(value, nv.Failed):
            self.failures.append(f"{label}: {value.why}")
        elif not isinstance(value, nv.Unsupported):
            self.checked += 1
            if problem is not None:
                self.problems.append(problem)

    def report(self, type_: str, ok_reason: str, ok_message: str) -> ConditionReport | None:
        if self.problems:
            return ConditionReport(type_, Status.TRUE, self.problems[0][0], "; ".join(p[1] for p in self.problems))
        if self.failures:
            return ConditionReport(type_, Status.UNKNOWN, "NVMLError", "; ".join(self.failures))
        if self.checked:
            return ConditionReport(type_, Status.FALSE, ok_reason, f"{self.checked} GPUs: {ok_message}")
        return None


class NvmlCheck:
    name = "nvml"
    condition_types = (ECC, REMAP_PENDING, REMAP_FAILED, NVLINK_DOWN, SLOWDOWN, FABRIC)

    def __init__(self, config: Config, host: HostRoot, *, load: Loader = load_host_nvml) -> None:
        self._config = config
        self._host = host
        self._load = load
        self._nvml: Any = None
        self._gpus: list[tuple[nv.Gpu, nv.Value[Any]]] = []  # after nvmlInit: every GPU and its handle (or why not)
        self._events: Any = None  # the Xid event set, None where no GPU can post Xids
        self._events_failed: str | None = None  # why waiting on the event set failed at the last look
        self._next_look: dt.datetime | None = None  # while there is no NVML: when to look again
        # all under `Gpu.key` (index and identity): a GPU without a readable UUID shares nothing with another
        self._counters: dict[tuple[nv.GpuKey, str], int] = {}  # (GPU, counter) -> last value
        self._links_up: dict[nv.GpuKey, set[int]] = {}  # GPU -> links seen active
        self._slowed: dict[nv.GpuKey, int] = {}  # GPU -> looks in a row with a hardware slowdown
        self._capped: set[nv.GpuKey] = set()  # GPUs under the software power cap at the last look

    @property
    def timing(self) -> CheckTiming:
        if self._gpus:
            return self._config.timing
        return CheckTiming(interval=self._config.absent_every, timeout=self._config.timing.timeout)

    async def observe(self, now: dt.datetime) -> Observation:
        if not self._gpus:
            if self._next_look is not None and now < self._next_look:
                return Observation(self.name, now)
            try:
                started = await asyncio.to_thread(self._start)
            except _StartFailed as exc:
                self._next_look = now + self._config.absent_every
                return Observation(self.name, now, error=f"NVML: {exc}")
            if not started:
                self._next_look = now + self._config.absent_every
                return Observation(self.name, now)
        readings, (xids, events_failed) = await asyncio.to_thread(self._look)
        return Observation(self.name, now, conditions=self._conditions(readings),
                           events=(*self._events_from(readings), *self._xid_events(xids),
                                   *self._event_set_failure(events_failed)))

    async def close(self) -> None:
        """Free the event set and let NVML go (see `HoldsResources`)."""
        nvml, self._nvml = self._nvml, None
        if nvml is None or not self._gpus:
            return
        if self._events is not None:
            nv.ask(nvml, nvml.nvmlEventSetFree, self._events)
        nv.ask(nvml, nvml.nvmlShutdown)
        self._gpus, self._events = [], None

    def _start(self) -> bool:
        """Load the binding and list the GPUs; False when there is nothing to watch (no library, no driver, no
        GPU). Raises _StartFailed for a driver that is there but broken. A GPU without a handle (lost) is listed
        all the same: its signals are Unknown, the others' are read."""
        if self._nvml is None:
            self._nvml = self._load(self._host, self._config.library_dirs)
            if self._nvml is None:
                return False
        nvml = self._nvml
        if isinstance(init := nv.ask(nvml, nvml.nvmlInit), nv.Failed):
            if init.code == _DRIVER_NOT_LOADED:
                return False
            raise _StartFailed(init.why)
        count = nv.ask(nvml, nvml.nvmlDeviceGetCount)
        if not (nv.is_count(count) and count <= _MAX_GPUS):
            nv.ask(nvml, nvml.nvmlShutdown)  # NVML counts its inits: one left behind per try would never end
            raise _StartFailed(count.why if isinstance(count, nv.Failed) else
                               f"nvmlDeviceGetCount answered {nv.shown(count)}, no GPU count")
        gpus = []
        for index in range(count):
            handle = nv.ask(nvml, nvml.nvmlDeviceGetHandleByIndex, index)
            gpus.append((nv.identify(nvml, index, handle), handle))
        if not gpus:
            nv.ask(nvml, nvml.nvmlShutdown)
            return False
        self._gpus = gpus
        self._events = self._xid_set()
        return True

    def _xid_set(self) -> Any:
        nvml = self._nvml
        event_set = nv.ask(nvml, nvml.nvmlEventSetCreate)
        if isinstance(event_set, nv.Unsupported | nv.Failed):
            return None
        registered = [nv.ask(nvml, nvml.nvmlDeviceRegisterEvents, handle, _XID_EVENT, event_set)
                      for _, handle in self._gpus if not isinstance(handle, nv.Unsupported | nv.Failed)]
        if all(isinstance(r, nv.Unsupported | nv.Failed) for r in registered):
            nv.ask(nvml, nvml.nvmlEventSetFree, event_set)
            return None
        return event_set

    def _look(self) -> tuple[list[nv.Reading], tuple[list[nv.Xid], nv.Failed | None]]:
        readings = [nv.read(self._nvml, gpu, handle) for gpu, handle in self._gpus]
        xids = nv.drain_xids(self._nvml, self._events) if self._events is not None else ([], None)
        return readings, xids

    # --- conditions -------------------------------------------------------------------------------------
    def _conditions(self, readings: list[nv.Reading]) -> tuple[ConditionReport, ...]:
        verdicts = {t: _Verdict() for t in self.condition_types}
        for r in readings:
            label = r.gpu.label
            dbe = r.volatile_dbe
            verdicts[ECC].add(label, dbe, ("VolatileDoubleBitECC",
                                    f"{label}: {dbe} uncorrectable ECC errors since the driver loaded"
                                    f"{_aggregate(r.aggregate_dbe)}") if isinstance(dbe, int) and dbe else None)
            self._remap(r, verdicts[REMAP_PENDING], verdicts[REMAP_FAILED])
            verdicts[NVLINK_DOWN].add(label, r.links, self._links_down(r))
            verdicts[SLOWDOWN].add(label, r.clock_events, self._slowdown(r))
            verdicts[FABRIC].add(label, r.fabric, _fabric_problem(r))
        reports = (
            verdicts[ECC].report(ECC, "NoUncorrectableECC", "no uncorrectable ECC error since the driver loaded"),
            verdicts[REMAP_PENDING].report(REMAP_PENDING, "NoRemapPending", "no remapped row or page awaits a reset"),
            verdicts[REMAP_FAILED].report(REMAP_FAILED, "SpareRowsLeft", "no failed row remapping"),
            verdicts[NVLINK_DOWN].report(NVLINK_DOWN, "NVLinksUp", "every NVLink seen active is active"),
            verdicts[SLOWDOWN].report(SLOWDOWN, "NoHardwareSlowdown", "clocks not held down by the hardware"),
            verdicts[FABRIC].report(FABRIC, "FabricHealthy", "NVLink fabric registered and healthy"),
        )
        return tuple(r for r in reports if r is not None)

    @staticmethod
    def _remap(r: nv.Reading, pending: _Verdict, failed: _Verdict) -> None:
        rows, label = r.remapped_rows, r.gpu.label
        if isinstance(rows, nv.RemappedRows):
            counts = (f"{rows.uncorrectable} rows remapped for uncorrectable and {rows.correctable} for correctable "
                      "errors")
            pending.add(label, rows, ("RowRemapPending", f"{label}: {counts}, waiting for a GPU reset")
                        if rows.pending else None)
            failed.add(label, rows, ("RowRemapFailure", f"{label}: a row could not be remapped ({counts}): no spare "
                                     "rows left, the GPU needs replacing") if rows.failure else None)
            return
        failed.add(label, rows)
        pending.add(label, r.retired_pending, ("RetiredPagesPending", f"{label}: retired pages wait for a GPU reset"
                                        f"{_retired(r.retired_pages)}") if r.retired_pending is True else None)

    def _links_down(self, r: nv.Reading) -> tuple[str, str] | None:
        if not isinstance(r.links, dict):
            return None
        up = self._links_up.setdefault(r.gpu.key, set())
        up |= {n for n, link in r.links.items() if link.active}
        down = sorted(n for n in up if n in r.links and not r.links[n].active)
        if not down:
            return None
        return "NVLinkInactive", f"{r.gpu.label}: NVLink {', '.join(map(str, down))} inactive, active before"

    def _slowdown(self, r: nv.Reading) -> tuple[str, str] | None:
        if not isinstance(r.clock_events, int):
            return None
        causes = [words for bit, words in _HW_SLOWDOWNS.items() if r.clock_events & bit]
        streak = self._slowed[r.gpu.key] = self._slowed.get(r.gpu.key, 0) + 1 if causes else 0
        if streak < self._config.slowdown_polls:
            return None
        reason = "PowerBrake" if r.clock_events & 0x80 else "ThermalSlowdown" if r.clock_events & 0x40 else (
            "HardwareSlowdown")
        return reason, f"{r.gpu.label}: clocks held down by {', '.join(causes)} ({streak} looks in a row)"

    # --- events -----------------------------------------------------------------------------------------
    def _events_from(self, readings: list[nv.Reading]) -> Iterable[EventReport]:
        for r in readings:
            label, uuid = r.gpu.label, r.gpu.key
            if (grew := self._grew(uuid, "aggregate DBE", r.aggregate_dbe)) is not None:
                yield EventReport("GPUUncorrectableECC", f"{label}: aggregate uncorrectable ECC errors {grew}")
            if isinstance(r.remapped_rows, nv.RemappedRows):
                rows = r.remapped_rows.correctable + r.remapped_rows.uncorrectable
                if (grew := self._grew(uuid, "remapped rows", rows)) is not None:
                    yield EventReport("GPURowsRemapped", f"{label}: remapped rows {grew}")
            if (grew := self._grew(uuid, "retired pages", r.retired_pages)) is not None:
                yield EventReport("GPUPagesRetired", f"{label}: retired pages {grew}")
            if (grew := self._grew(uuid, "PCIe replays", r.pcie_replays)) is not None:
                yield EventReport("GPUPCIeReplays", f"{label}: PCIe replays {grew}")
            yield from self._link_errors(r)
            yield from self._power_cap(r)

    def _link_errors(self, r: nv.Reading) -> Iterable[EventReport]:
        if not isinstance(r.links, dict):
            return
        rising = [f"link {n} {name} {grew}" for n, link in sorted(r.links.items())
                  for name, value in link.errors.items()
                  if (grew := self._grew(r.gpu.key, f"NVLink {n} {name}", value)) is not None]
        if rising:
            yield EventReport("GPUNVLinkErrors", f"{r.gpu.label}: NVLink errors: {', '.join(rising)}")

    def _power_cap(self, r: nv.Reading) -> Iterable[EventReport]:
        if not isinstance(r.clock_events, int):
            return
        capped, uuid = bool(r.clock_events & _SW_POWER_CAP), r.gpu.key
        if capped and uuid not in self._capped:
            yield EventReport("GPUPowerCapped", f"{r.gpu.label}: clocks lowered to stay under the power limit "
                                                "(software power cap)")
        (self._capped.add if capped else self._capped.discard)(uuid)

    def _grew(self, uuid: nv.GpuKey, counter: str, value: object) -> str | None:
        """"from A to B" when `counter` rose since the last look; None at the first look, or when it did not."""
        if not isinstance(value, int):
            return None
        before = self._counters.get((uuid, counter))
        self._counters[(uuid, counter)] = value
        if before is None or value <= before:
            return None
        return f"rose from {before} to {value}"

    def _xid_events(self, xids: list[nv.Xid]) -> Iterable[EventReport]:
        by_index = {gpu.index: gpu for gpu, _ in self._gpus}
        for xid in xids:
            code = xid.code if isinstance(xid.code, int) else f"(its code unreadable: {_why(xid.code)})"
            gpu = by_index.get(xid.index) if isinstance(xid.index, int) else None
            if gpu is None:
                which = (f"NVML index {xid.index}, not one of the {len(by_index)} GPUs listed"
                         if isinstance(xid.index, int) else f"NVML could not tell which: {_why(xid.index)}")
                yield EventReport(XID, f"Xid {code} on an unidentified GPU ({which}), from NVML's event set")
            elif gpu.kernel_pci is None or not isinstance(xid.code, int):  # not worded to pair with a kernel line
                yield EventReport(XID, f"Xid {code} on {gpu.label}, from NVML's event set; not paired with the "
                                       f"kernel log's line: {'; '.join(gpu.unreadable) or 'its code unreadable'}")
            else:
                yield EventReport(XID, f"NVRM: Xid (PCI:{gpu.kernel_pci}): {code}, {gpu.label}, "
                                       "from NVML's event set")

    def _event_set_failure(self, failed: nv.Failed | None) -> Iterable[EventReport]:
        """Said once each time waiting on the event set starts failing: Xids then reach the node only through
        the kernel log (the `gpu-monitor` check), and the next look tries the set again."""
        why, self._events_failed = self._events_failed, failed.why if failed is not None else None
        if failed is not None and why is None:
            yield EventReport("NVMLEventSetFailed", f"NVML's Xid event set failed ({failed.why}): Xids are read "
                                                    "from the kernel log only until it answers again")


class _StartFailed(Exception):
    """NVML is there but could not list the GPUs: the driver's words."""


def _why(value: object) -> str:
    return value.why if isinstance(value, nv.Failed) else "not supported"


def _aggregate(value: object) -> str:
    return f" ({value} over the GPU's life)" if isinstance(value, int) else ""


def _retired(value: object) -> str:
    return f" ({value} retired pages)" if isinstance(value, int) else ""


def _fabric_problem(r: nv.Reading) -> tuple[str, str] | None:
    fabric = r.fabric
    if not isinstance(fabric, nv.Fabric):
        return None
    label = r.gpu.label
    if fabric.state == _FABRIC_IN_PROGRESS:
        return None  # registering (at boot, after a reset): not yet a verdict either way
    if fabric.state != _FABRIC_COMPLETED:
        return ("FabricNotRegistered",
                f"{label}: the GPU has not registered with the NVLink fabric (state {fabric.state})")
    if fabric.status != 0:
        return "FabricRegistrationFailed", f"{label}: NVLink fabric registration failed with NVML code {fabric.status}"
    troubles = [words for shift, bad, words in _FABRIC_HEALTH if (fabric.health_mask >> shift) & 0x3 == bad]
    config = (fabric.health_mask >> _FABRIC_CONFIG_SHIFT) & 0xF
    if config > 1:
        troubles.append(f"incorrect configuration (code {config})")
    if troubles:
        return "FabricDegraded", f"{label}: NVLink fabric {', '.join(troubles)}"
    return None
