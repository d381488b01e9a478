"""Steady-state cost of processes measured side by side: RSS once a second, CPU time at both ends of the window."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hack.bench.lib.process import TreeUsage, tree_usage

MIB = 2**20
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class SteadyState:
    """One process tree over the window."""

    rss: tuple[int, ...]  # bytes, one sample a second
    seconds: float
    cpu_ticks: int
    cpu_nanos: int

    @property
    def rss_mean_mib(self) -> float:
        return statistics.mean(self.rss) / MIB

    @property
    def rss_max_mib(self) -> float:
        return max(self.rss) / MIB

    @property
    def cpu_percent(self) -> float:
        """Of one core, from the scheduler's exact runtime."""
        return self.cpu_nanos / 1e9 / self.seconds * 100

    @property
    def tick_cpu_percent(self) -> float:
        """Of one core, from the clock ticks."""
        return self.cpu_ticks / TICK / self.seconds * 100


def sample_steady_state(pids: Mapping[str, int], window: float, *,
                        usage: Callable[[int], TreeUsage] = tree_usage,
                        clock: Callable[[], float] = time.monotonic,
                        sleep: Callable[[float], None] = time.sleep) -> dict[str, SteadyState]:
    """Every tree sampled in the same second, so two programs compared see the same machine load."""
    start = {name: usage(pid) for name, pid in pids.items()}
    rss: dict[str, list[int]] = {name: [] for name in pids}
    t0 = clock()
    while clock() - t0 < window:
        for name, pid in pids.items():
            rss[name].append(usage(pid).rss)
        sleep(1.0)
    seconds = clock() - t0
    end = {name: usage(pid) for name, pid in pids.items()}
    return {name: SteadyState(rss=tuple(rss[name]), seconds=seconds,
                              cpu_ticks=end[name].cpu_ticks - start[name].cpu_ticks,
                              cpu_nanos=end[name].cpu_nanos - start[name].cpu_nanos) for name in pids}
