"""Sustained I/O stalls: `DiskIOStall`, a condition of its own (a full disk and a slow disk need different fixes).

An observation is "over" when any signal crosses its threshold:
- `/proc/pressure/io` `full avg60`: the share of the last minute in which every non-idle task waited on I/O;
- per-device await from `/proc/diskstats` deltas between two observations: (ms spent reading + ms spent writing)
  / (reads + writes completed), for devices that completed at least `min_ios` requests in between;
- a device with requests in flight that completed none while it was busy for most of the interval: stuck I/O.
Whole disks only (those in `/sys/block`), minus `ignore_prefixes`. The condition follows `psi.Sustained`: it
turns True only after `window` of "over" observations and False after `window` of quiet ones, and says nothing
until the first full window. NVMe timeouts and controller resets are events from the shipped kernel monitor.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import AT_LEAST_ONE, PERCENT, ZERO, Bounds, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, Observation
from agent.sensors.psi import read_pressure
from agent.verdicts.sustained import SustainedCondition

CONDITION = "DiskIOStall"


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    window: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(at_least=ZERO))
    full_avg60: float = bounded(30.0, PERCENT)  # percent of time every non-idle task waited on I/O
    # a healthy disk answers in milliseconds; seconds mean a dying or choked one
    max_await_ms: float = bounded(2000.0, Bounds(above=0))
    min_ios: int = bounded(10, AT_LEAST_ONE)  # fewer completions than this in an interval say too little about latency
    ignore_prefixes: tuple[str, ...] = ("loop", "ram", "zram", "sr", "fd")


@dataclass(frozen=True)
class DiskStat:
    completed: int  # reads + writes completed
    busy_ms: int  # ms spent reading + writing (summed over requests)
    in_flight: int
    io_ms: int  # ms the device had at least one request in flight


def read_diskstats(host: HostRoot) -> dict[str, DiskStat]:
    stats: dict[str, DiskStat] = {}
    for number, line in enumerate(host.read_sensor("/proc/diskstats").splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            reads, read_ms, writes, write_ms, in_flight, io_ms = (int(fields[i]) for i in (3, 6, 7, 10, 11, 12))
        except (IndexError, ValueError):
            raise ValueError(f"/proc/diskstats: line {number} has not the 14+ numeric fields of a device") from None
        stats[fields[2]] = DiskStat(reads + writes, read_ms + write_ms, in_flight, io_ms)
    return stats


class IOStallCheck:
    name = "iostall"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._level = SustainedCondition(CONDITION, config.window, true_reason="IOStalled",
                                         false_reason="IOFlowing")
        self._last: tuple[dt.datetime, dict[str, DiskStat]] | None = None

    async def observe(self, now: dt.datetime) -> Observation:
        try:
            pressure = read_pressure(self._host, "/proc/pressure/io")
            disks = self._disks()
            stats = {name: s for name, s in read_diskstats(self._host).items() if name in disks}
        except (OSError, ValueError) as e:
            return Observation(self.name, now, conditions=(self._level.unreadable(str(e)),))
        findings = self._slow_devices(now, stats)
        full = pressure.full.avg60 if pressure is not None and pressure.full is not None else None
        if full is not None and full > self._config.full_avg60:
            findings.insert(0, f"io PSI full avg60={full:.1f}% (threshold {self._config.full_avg60:g}%)")
        window = self._level.window_text
        psi = f"io PSI full avg60={full:.1f}%" if full is not None else "io PSI unavailable"
        report = self._level.judge(bool(findings), now, under_message=f"no I/O stall {window} ({psi})",
                                   over_message=f"I/O stalled {window}: {'; '.join(findings) or 'recovering'}")
        return Observation(self.name, now, conditions=() if report is None else (report,))

    def _disks(self) -> set[str]:
        return {p.name for p in self._host.path("/sys/block").iterdir()
                if not p.name.startswith(self._config.ignore_prefixes)}

    def _slow_devices(self, now: dt.datetime, stats: dict[str, DiskStat]) -> list[str]:
        last, self._last = self._last, (now, stats)
        if last is None:
            return []
        elapsed_ms = (now - last[0]).total_seconds() * 1000
        findings = []
        for name, cur in sorted(stats.items()):
            prev = last[1].get(name)
            if prev is None or cur.completed < prev.completed:  # new device or counters reset
                continue
            done = cur.completed - prev.completed
            if done >= self._config.min_ios:
                await_ms = (cur.busy_ms - prev.busy_ms) / done
                if await_ms > self._config.max_await_ms:
                    findings.append(f"{name} await {await_ms:.0f} ms over {done} requests "
                                    f"(threshold {self._config.max_await_ms:g} ms)")
            elif done == 0 and cur.in_flight > 0 and elapsed_ms > 0 and (cur.io_ms - prev.io_ms) >= 0.9 * elapsed_ms:
                findings.append(f"{name} has {cur.in_flight} requests in flight and completed none in "
                                f"{elapsed_ms / 1000:.0f}s")
        return findings
