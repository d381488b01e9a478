"""Zombie build-up: a `ZombieProcesses` event when at least `threshold` processes have been zombies (state `Z` in
`/proc/<pid>/stat`) on `observations` polls in a row.

A zombie holds only its PID and an entry in the process table, so a few are harmless; hundreds that stay mean a
parent that never reaps its children (a container whose PID 1 is not an init), and each one keeps a PID from
the pool that `PIDExhaustion` watches. An event rather than a condition: the node works, a workload is at fault.
After an event the count starts over, so a lasting build-up is reported once per `observations` polls.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import AT_LEAST_ONE, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, EventReport, Observation

EVENT = "ZombieProcesses"


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: CheckTiming(interval=dt.timedelta(minutes=5)))
    threshold: int = bounded(20, AT_LEAST_ONE)
    observations: int = bounded(6, AT_LEAST_ONE)


def count_zombies(host: HostRoot) -> int:
    count = 0
    for entry in host.path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # exited while we looked
            continue
        # "pid (comm) S ...": comm may hold spaces and ")", so the state follows the last ")"
        if stat[stat.rfind(")") + 1:].split(maxsplit=1)[:1] == ["Z"]:
            count += 1
    return count


class ZombieCheck:
    name = "zombies"
    condition_types: tuple[str, ...] = ()

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._streak = 0

    async def observe(self, now: dt.datetime) -> Observation:
        zombies = count_zombies(self._host)
        self._streak = self._streak + 1 if zombies >= self._config.threshold else 0
        if self._streak < self._config.observations:
            return Observation(self.name, now)
        self._streak = 0
        return Observation(self.name, now, events=(EventReport(
            EVENT, f"{zombies} zombie processes (threshold {self._config.threshold}) on "
                   f"{self._config.observations} polls in a row: a parent is not reaping its children"),))
