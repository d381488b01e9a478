"""hack/bench/lib/steady_state.py: RSS and CPU of process trees over a window, on a fake clock and fake /proc."""

from __future__ import annotations

import pytest

from hack.bench.lib.process import TreeUsage
from hack.bench.lib.steady_state import MIB, TICK, SteadyState, sample_steady_state


class FakeMachine:
    """A clock that moves only when the sampler sleeps, and two trees whose CPU counters grow each reading."""

    def __init__(self) -> None:
        self.now = 100.0
        self.readings = {1: 0, 2: 0}

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def usage(self, pid: int) -> TreeUsage:
        self.readings[pid] += 1
        n = self.readings[pid]
        return TreeUsage(rss=pid * MIB * (10 + n), cpu_ticks=pid * n, cpu_nanos=pid * n * 1_000_000)


def test_both_trees_are_sampled_once_a_second_and_cpu_is_the_difference_of_the_ends() -> None:
    machine = FakeMachine()

    got = sample_steady_state({"agent": 1, "npd": 2}, 3.0, usage=machine.usage, clock=machine.clock,
                              sleep=machine.sleep)

    # readings per tree: the start (1), three samples (2..4), the end (5)
    assert got == {"agent": SteadyState(rss=(12 * MIB, 13 * MIB, 14 * MIB), seconds=3.0, cpu_ticks=4,
                                        cpu_nanos=4_000_000),
                   "npd": SteadyState(rss=(24 * MIB, 26 * MIB, 28 * MIB), seconds=3.0, cpu_ticks=8,
                                      cpu_nanos=8_000_000)}


def test_the_figures_are_in_mib_and_percent_of_one_core() -> None:
    state = SteadyState(rss=(40 * MIB, 41 * MIB, 42 * MIB), seconds=60.0, cpu_ticks=TICK // 10 * 6,
                        cpu_nanos=180_000_000)

    assert (state.rss_mean_mib, state.rss_max_mib) == (41.0, 42.0)
    assert state.cpu_percent == pytest.approx(0.3)  # 0.18 s of 60 s
    assert state.tick_cpu_percent == pytest.approx(TICK // 10 * 6 / TICK / 60 * 100)
