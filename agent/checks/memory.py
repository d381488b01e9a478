"""MemoryExhaustion: the host has been short of memory for a sustained window; OOM kills as events.

An observation is "over" when any signal crosses its threshold:
- PSI `some avg60` / `full avg60` of `/proc/pressure/memory`: the share of the last minute in which some (or all
  non-idle) tasks stalled on reclaim or swap-in. This sees thrashing that free-memory numbers miss. Kernels
  without PSI are judged on MemAvailable alone.
- MemAvailable as a share of MemTotal in `/proc/meminfo` (the kernel's own estimate of what can be allocated
  without swapping, page cache included).

The condition follows `psi.Sustained` and `psi.StickyReport`, as CPUPressure does (silent until the first full
window, then a message that holds the deciding figures until the status changes). It is nodemedic's, distinct
from the kubelet's MemoryPressure, which tracks the kubelet's eviction threshold instead.

OOM kills come from the `oom_kill` counter of `/proc/vmstat` (kernel >= 4.13): each increase between two
observations is one `OOMKilling` event. The first reading is only a baseline, so an agent restart does not
replay every kill since boot. The counter is auxiliary: when it is unreadable the message says so and no event
is emitted, but the condition is still judged on its own sensors; the old baseline is kept, so kills made while
it was unreadable are reported once it reads again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace

from agent.bounds import PERCENT, ZERO, Bounds, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, EventReport, Observation
from agent.sensors.psi import Pressure, describe, read_pressure
from agent.verdicts.sustained import SustainedCondition

CONDITION = "MemoryExhaustion"
OOM_EVENT = "OOMKilling"


@dataclass(frozen=True)
class Thresholds:
    some_avg60: float = bounded(40.0, PERCENT)  # percent of time some task stalled on memory
    # percent of time every non-idle task stalled on memory: hard thrashing
    full_avg60: float = bounded(10.0, PERCENT)
    # MemAvailable below this share of MemTotal; 0 turns it off
    min_available_percent: float = bounded(5.0, Bounds(at_least=0, below=100))


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    window: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(at_least=ZERO))
    thresholds: Thresholds = field(default_factory=Thresholds)


@dataclass(frozen=True)
class MemInfo:
    total_kib: int
    available_kib: int

    @property
    def available_percent(self) -> float:
        return 100 * self.available_kib / self.total_kib


class MemoryExhaustion:
    name = "memory"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._level = SustainedCondition(CONDITION, config.window, true_reason="MemoryExhausted",
                                         false_reason="SufficientMemory")
        self._oom_kills: int | None = None  # the last oom_kill counter read; None until the first baseline

    async def observe(self, now: dt.datetime) -> Observation:
        # A few small procfs reads: cheaper inline than a hop to a thread.
        events, oom_note = self._oom_events()
        report = self._condition(now)
        if report is None:
            return Observation(self.name, now, (), tuple(events))
        if oom_note:
            report = replace(report, message=f"{report.message}; {oom_note}")
        return Observation(self.name, now, (report,), tuple(events))

    def _condition(self, now: dt.datetime) -> ConditionReport | None:
        try:
            pressure = read_pressure(self._host, "/proc/pressure/memory")
            meminfo = read_meminfo(self._host)
        except ValueError as e:
            return self._level.unreadable(str(e))
        over, detail = self._judge(pressure, meminfo)
        window = self._level.window_text
        return self._level.judge(over, now, over_message=f"over threshold {window}: {detail}",
                                 under_message=f"below threshold {window}: {detail}")

    def _judge(self, pressure: Pressure | None, meminfo: MemInfo) -> tuple[bool, str]:
        t = self._config.thresholds
        over = meminfo.available_percent < t.min_available_percent
        if pressure is not None:
            over = over or pressure.some.avg60 > t.some_avg60
            over = over or (pressure.full is not None and pressure.full.avg60 > t.full_avg60)
        detail = (f"{describe('memory', pressure)} (thresholds some {t.some_avg60:g}%, full {t.full_avg60:g}%), "
                  f"available {meminfo.available_percent:.1f}% of {meminfo.total_kib / 2**20:.1f} GiB "
                  f"(threshold {t.min_available_percent:g}%)")
        return over, detail

    def _oom_events(self) -> tuple[list[EventReport], str]:
        try:
            count = read_oom_kills(self._host)
        except ValueError as e:
            return [], f"OOM kill counter unavailable ({e})"
        previous, self._oom_kills = self._oom_kills, count
        # No event on the baseline, nor when the counter went back (a different host behind the same root).
        if previous is None or count <= previous:
            return [], ""
        killed = count - previous
        return [EventReport(OOM_EVENT, f"{killed} processes killed by the OOM killer since last check")], ""


def read_meminfo(host: HostRoot) -> MemInfo:
    text = host.read_sensor("/proc/meminfo")
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if key not in ("MemTotal", "MemAvailable"):
            continue
        fields = rest.split()
        if not sep or not fields:
            raise ValueError(f"/proc/meminfo: {key} has no value")
        try:
            values[key] = int(fields[0])
        except ValueError:
            raise ValueError(f"/proc/meminfo: {key} {fields[0]!r} is not a number") from None
    if not text.strip():
        raise ValueError("/proc/meminfo: empty")
    for key in ("MemTotal", "MemAvailable"):
        if key not in values:
            raise ValueError(f"/proc/meminfo: no {key}")
    total, available = values["MemTotal"], values["MemAvailable"]
    if total <= 0:
        raise ValueError(f"/proc/meminfo: MemTotal {total} kB is not positive")
    if not 0 <= available <= total:
        raise ValueError(f"/proc/meminfo: MemAvailable {available} kB is outside 0..MemTotal ({total} kB)")
    return MemInfo(total, available)


def read_oom_kills(host: HostRoot) -> int:
    """The `oom_kill` counter of `/proc/vmstat`: processes the OOM killer has killed since boot."""
    for line in host.read_sensor("/proc/vmstat").splitlines():
        key, _, value = line.partition(" ")
        if key != "oom_kill":
            continue
        try:
            count = int(value)
        except ValueError:
            raise ValueError(f"/proc/vmstat: oom_kill {value.strip()!r} is not a number") from None
        if count < 0:
            raise ValueError(f"/proc/vmstat: oom_kill {count} is negative")
        return count
    raise ValueError("/proc/vmstat: no oom_kill counter (kernel older than 4.13?)")


