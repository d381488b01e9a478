"""Zombie build-up counted from a fixture /proc/<pid>/stat."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from agent.bounds import field_problems
from agent.checks.zombies import EVENT, Config, ZombieCheck, count_zombies
from agent.host import HostRoot

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)


def processes(root: Path, states: list[str], comm: str = "worker") -> None:
    for pid, state in enumerate(states, start=100):
        (root / "proc" / str(pid)).mkdir(parents=True)
        (root / "proc" / str(pid) / "stat").write_text(f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 0 0\n")


def test_only_processes_in_state_z_count_even_with_odd_command_names(tmp_path: Path) -> None:
    processes(tmp_path, ["Z", "S", "R", "D", "Z"], comm="a) Z (b")  # a name that fakes a state
    (tmp_path / "proc" / "self").mkdir()

    assert count_zombies(HostRoot(tmp_path)) == 2


def test_an_event_needs_the_threshold_on_consecutive_polls(tmp_path: Path) -> None:
    processes(tmp_path, ["Z"] * 3)
    check = ZombieCheck(Config(threshold=3, observations=2), HostRoot(tmp_path))

    first = asyncio.run(check.observe(NOW))
    second = asyncio.run(check.observe(NOW))
    third = asyncio.run(check.observe(NOW))

    assert first.events == ()
    assert [e.reason for e in second.events] == [EVENT]
    assert "3 zombie processes" in second.events[0].message
    assert third.events == ()  # counting starts over after an event


def test_a_poll_below_the_threshold_breaks_the_streak(tmp_path: Path) -> None:
    processes(tmp_path, ["Z", "Z"])
    check = ZombieCheck(Config(threshold=2, observations=2), HostRoot(tmp_path))
    asyncio.run(check.observe(NOW))
    (tmp_path / "proc" / "100" / "stat").write_text("100 (worker) S 1 100 100 0 -1 4194560 0 0\n")
    asyncio.run(check.observe(NOW))
    (tmp_path / "proc" / "100" / "stat").write_text("100 (worker) Z 1 100 100 0 -1 4194560 0 0\n")

    assert asyncio.run(check.observe(NOW)).events == ()


def test_validation_names_the_bad_fields() -> None:
    assert problems(Config(threshold=0, observations=0)) == ["threshold: must be at least 1, got 0",
                                                             "observations: must be at least 1, got 0"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
