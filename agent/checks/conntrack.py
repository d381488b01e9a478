"""Connection tracking: `ConntrackExhaustion` when the table is nearly full or packets are being dropped.

- Level: `/proc/sys/net/netfilter/nf_conntrack_count` over `nf_conntrack_max`, True at `max_percent` or more
  (node-problem-detector's network plugin warns at 90 %).
- Drops: `/proc/net/stat/nf_conntrack` has one row of hex counters per CPU under a header naming the columns;
  the sum of `drop` (a new connection refused because the table is full: the kernel's "nf_conntrack: table full,
  dropping packet"), `early_drop` and `insert_failed` rising between two observations is True until
  `drop_quiet_period` passes without a further rise. The first reading is a baseline.
With the agent on the host network (the DaemonSet is) these files show the host's namespace. Without the
`nf_conntrack` module none of them exist: that is no verdict (nothing is reported), not a failure.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import PERCENT, POSITIVE, bounded
from agent.checks.kernel_limits import read_int
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.verdicts.sustained import StickyReport

CONDITION = "ConntrackExhaustion"
COUNT = "/proc/sys/net/netfilter/nf_conntrack_count"
MAX = "/proc/sys/net/netfilter/nf_conntrack_max"
STAT = "/proc/net/stat/nf_conntrack"
DROP_COLUMNS = ("drop", "early_drop", "insert_failed")


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    max_percent: float = bounded(90.0, PERCENT)
    drop_quiet_period: dt.timedelta = bounded(dt.timedelta(minutes=10), POSITIVE)


def parse_stat(text: str) -> int:
    """The sum of the drop columns over every CPU row of /proc/net/stat/nf_conntrack."""
    lines = text.split("\n")
    header = lines[0].split()
    missing = [c for c in DROP_COLUMNS if c not in header]
    if missing:
        raise ValueError(f"{STAT}: no {', '.join(missing)} column in the header")
    columns = [header.index(c) for c in DROP_COLUMNS]
    total = 0
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        values = line.split()
        try:
            total += sum(int(values[i], 16) for i in columns)
        except (IndexError, ValueError):
            raise ValueError(f"{STAT}: line {number} is not a row of hex counters") from None
    return total


class ConntrackCheck:
    name = "conntrack"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._drops: int | None = None
        self._last_rise: tuple[dt.datetime, int] | None = None  # (when the drops last rose, by how many)
        self._sticky = StickyReport()  # the level changes every poll; write the message only on a new finding

    async def observe(self, now: dt.datetime) -> Observation:
        if not self._host.path(COUNT).exists():
            return Observation(self.name, now)  # no nf_conntrack module: nothing to judge
        try:
            count = read_int(self._host, COUNT)
            maximum = read_int(self._host, MAX)
            drops = parse_stat(self._host.read_sensor(STAT)) if self._host.path(STAT).exists() else None
        except ValueError as e:
            return Observation(self.name, now, conditions=(
                ConditionReport(CONDITION, Status.UNKNOWN, "BadSensorData", str(e)),))
        if drops is not None and self._drops is not None and drops > self._drops:
            self._last_rise = (now, drops - self._drops)
        self._drops = drops
        if self._last_rise is not None and now - self._last_rise[0] >= self._config.drop_quiet_period:
            self._last_rise = None
        percent = 100 * count / maximum if maximum > 0 else 100.0
        level = f"{count} of {maximum} entries ({percent:.1f}%, threshold {self._config.max_percent:g}%)"
        if self._last_rise is not None:
            at, dropped = self._last_rise
            report = ConditionReport(CONDITION, Status.TRUE, "ConntrackDroppingPackets",
                                     f"{dropped} packets dropped or refused by conntrack at {at.isoformat()}; {level}")
        elif percent >= self._config.max_percent:
            report = ConditionReport(CONDITION, Status.TRUE, "ConntrackTableNearFull", level)
        else:
            report = ConditionReport(CONDITION, Status.FALSE, "ConntrackHasRoom", level)
        key = (report.status, report.reason, self._last_rise)
        return Observation(self.name, now, conditions=(self._sticky(report, key),))
