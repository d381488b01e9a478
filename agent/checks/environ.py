"""Processes with huge environments: a `LargeEnvironment` event per process with more than `max_variables`.

Kubernetes puts every Service of a namespace into each container's environment (`enableServiceLinks`, on by
default): in a namespace with thousands of Services every process starts with thousands of variables, which
slows every exec and can exceed the kernel's argument limit (`E2BIG`), so containers fail to start. Counted from
the NUL-separated entries of `/proc/<pid>/environ`, once per process (by pid and start time), every 5 minutes.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from agent.bounds import AT_LEAST_ONE, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, EventReport, Observation

EVENT = "LargeEnvironment"


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: CheckTiming(interval=dt.timedelta(minutes=5)))
    max_variables: int = bounded(1000, AT_LEAST_ONE)


class EnvironCheck:
    name = "environ"
    condition_types: tuple[str, ...] = ()

    def __init__(self, config: Config, host: HostRoot) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._reported: set[tuple[str, str]] = set()  # (pid, start time) already reported

    async def observe(self, now: dt.datetime) -> Observation:
        events, seen = [], set()
        for entry in self._host.path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:  # exited, or a kernel thread
                continue
            count = environ.count(b"\0")
            if count <= self._config.max_variables:
                continue
            # (pid, start time: field 22), so a reused pid is a new process
            after_comm = stat[stat.rfind(")") + 1:].split()
            key = (entry.name, after_comm[19] if len(after_comm) > 19 else "")
            seen.add(key)
            if key not in self._reported:
                comm = stat[stat.find("(") + 1:stat.rfind(")")]
                events.append(EventReport(EVENT, f"process {entry.name} ({comm}) has {count} environment variables "
                                                 f"(threshold {self._config.max_variables}): too many Services "
                                                 "linked into its pod's environment?"))
        self._reported = seen
        return Observation(self.name, now, events=tuple(events))
