"""CPUPressure: the host's CPUs have been oversubscribed for a sustained window.

An observation is "over" when either signal crosses its threshold:
- PSI `some avg60` of `/proc/pressure/cpu`: the share of the last minute in which runnable tasks waited for a
  CPU. avg60 rather than avg10 because observations are ~30 s apart: avg60 covers the gap between them, so a
  10-second lull does not break a sustained run. Kernels without PSI (before 4.20, or `psi=0`) are judged on
  load alone.
- the 1-minute load average per online CPU, from `/proc/loadavg` and `/sys/devices/system/cpu/online` (or
  `/proc/cpuinfo`) under the host root. Never `os.cpu_count()`: that is the agent's view, and a pod's cpuset
  or a fixture root would make it lie about the host.

The condition follows `psi.Sustained`: True after every observation for `window` was over, False after every
observation for `window` was below; nothing is reported before the first full window (the Node keeps what it
had), Unknown while the sensors are unreadable. The message holds the figures that decided the status and stays
put until the status changes (`psi.StickyReport`), so the Node is not rewritten every interval.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import PERCENT, ZERO, Bounds, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation
from agent.sensors.psi import Pressure, describe, read_pressure
from agent.verdicts.sustained import SustainedCondition

CONDITION = "CPUPressure"


@dataclass(frozen=True)
class Thresholds:
    some_avg60: float = bounded(80.0, PERCENT)  # percent of time some task waited for a CPU
    load_per_cpu: float = bounded(3.0, Bounds(above=0))  # 1-minute load average divided by online CPUs


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    window: dt.timedelta = bounded(dt.timedelta(minutes=5), Bounds(at_least=ZERO))
    thresholds: Thresholds = field(default_factory=Thresholds)


class CPUPressure:
    name = "cpu"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._level = SustainedCondition(CONDITION, config.window, true_reason="CPUOverloaded",
                                         false_reason="CPUNotOverloaded")

    async def observe(self, now: dt.datetime) -> Observation:
        # A few small procfs reads: cheaper inline than a hop to a thread.
        report = self._condition(now)
        return Observation(self.name, now, () if report is None else (report,))

    def _condition(self, now: dt.datetime) -> ConditionReport | None:
        try:
            pressure = read_pressure(self._host, "/proc/pressure/cpu")
            load1 = read_load1(self._host)
            cpus = online_cpus(self._host)
        except ValueError as e:
            return self._level.unreadable(str(e))
        over, detail = self._judge(pressure, load1, cpus)
        window = self._level.window_text
        return self._level.judge(over, now, over_message=f"over threshold {window}: {detail}",
                                 under_message=f"below threshold {window}: {detail}")

    def _judge(self, pressure: Pressure | None, load1: float, cpus: int) -> tuple[bool, str]:
        t = self._config.thresholds
        per_cpu = load1 / cpus
        over = per_cpu > t.load_per_cpu or (pressure is not None and pressure.some.avg60 > t.some_avg60)
        detail = (f"{describe('cpu', pressure)} (threshold {t.some_avg60:g}%), load {load1:.2f} on {cpus} CPUs = "
                  f"{per_cpu:.2f} per CPU (threshold {t.load_per_cpu:g})")
        return over, detail


def read_load1(host: HostRoot) -> float:
    """The 1-minute load average of `/proc/loadavg` ("0.52 0.58 0.59 1/467 12345")."""
    text = host.read_sensor("/proc/loadavg")
    fields = text.split()
    if not fields:
        raise ValueError("/proc/loadavg: empty")
    try:
        load1 = float(fields[0])
    except ValueError:
        raise ValueError(f"/proc/loadavg: {fields[0]!r} is not a load average") from None
    if not 0 <= load1 < float("inf"):  # also rejects nan
        raise ValueError(f"/proc/loadavg: load average {fields[0]} is out of range")
    return load1


def online_cpus(host: HostRoot) -> int:
    """CPUs the host kernel has online: `/sys/devices/system/cpu/online` ("0-3,6"), else `/proc/cpuinfo`."""
    try:
        text = host.read_text("/sys/devices/system/cpu/online")
    except FileNotFoundError:
        return _cpuinfo_processors(host.read_sensor("/proc/cpuinfo"))
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"/sys/devices/system/cpu/online: {e}") from e
    try:
        return parse_cpu_list(text)
    except ValueError as e:
        raise ValueError(f"/sys/devices/system/cpu/online: {e}") from e


def parse_cpu_list(text: str) -> int:
    """How many CPUs a kernel cpu list names: "0-3,6,8-9" -> 7."""
    count = 0
    for part in text.strip().split(","):
        first, sep, last = part.partition("-")
        if not first.isdecimal() or (sep and not last.isdecimal()):
            raise ValueError(f"{text.strip()!r} is not a CPU list")
        lo, hi = int(first), int(last) if sep else int(first)
        if hi < lo:
            raise ValueError(f"{text.strip()!r} is not a CPU list")
        count += hi - lo + 1
    return count


def _cpuinfo_processors(text: str) -> int:
    count = sum(1 for line in text.splitlines() if line.split(":", 1)[0].strip() == "processor")
    if count == 0:
        raise ValueError("/proc/cpuinfo: no processor entries")
    return count


