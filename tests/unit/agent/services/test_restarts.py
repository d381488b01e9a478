"""A service's restarts counted from systemd's NRestarts, and the command runner the checks share (the kubelet,
kube-proxy and runtime checks' tests drive the `proc` source through their checks)."""

from __future__ import annotations

import asyncio
import datetime as dt
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.host import HostRoot
from agent.model import Status
from agent.services.restarts import CommandError, RestartConfig, RestartMonitor, run_command

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def test_the_default_command_runner_returns_stdout_and_raises_on_failure() -> None:
    assert asyncio.run(run_command([sys.executable, "-c", "print('NRestarts=3')"])) == "NRestarts=3\n"
    with pytest.raises(CommandError, match="exited with 3: boom"):
        asyncio.run(run_command([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"]))
    with pytest.raises(FileNotFoundError):
        asyncio.run(run_command(["/nonexistent/systemctl"]))


def monitor(tmp_path: Path, counts: list[int], max_restarts: int = 2) -> RestartMonitor:
    async def systemctl(argv: Sequence[str]) -> str:
        assert list(argv[-2:]) == ["--", "kubelet"]  # the defaults' unit, as the config names none
        return f"LoadState=loaded\nNRestarts={counts.pop(0)}\n"

    config = RestartConfig(source="systemd", max_restarts=max_restarts, window=10 * MINUTE)
    return RestartMonitor(config, HostRoot(tmp_path), defaults=RestartConfig(units=("kubelet",)),
                          condition_type="FrequentKubeletRestart", subject="kubelet", run=systemctl)


def test_the_first_count_is_a_baseline_and_restarts_within_the_window_turn_it_true(tmp_path: Path) -> None:
    restarts = monitor(tmp_path, [7, 8, 9, 9])
    first = asyncio.run(restarts.observe(NOW))  # 7 restarts before the agent started: no known times
    assert (first.status, first.reason) == (Status.FALSE, "NoFrequentKubeletRestart")
    assert first.message == "kubelet restarted 0 time(s) in the last 10m0s (limit 2)"
    asyncio.run(restarts.observe(NOW + MINUTE))
    second = asyncio.run(restarts.observe(NOW + 2 * MINUTE))
    assert (second.status, second.reason) == (Status.TRUE, "FrequentKubeletRestart")
    later = asyncio.run(restarts.observe(NOW + 13 * MINUTE))  # both restarts left the window
    assert later.status is Status.FALSE and "restarted 0 time(s)" in later.message


def test_the_restart_settings_are_bounded() -> None:
    config = RestartConfig(source="journal", units=(" kubelet",), max_restarts=0, window=dt.timedelta(0))
    assert [str(problem) for problem in field_problems(config)] == [
        "source: must be one of proc, systemd, got 'journal'",
        "units[0]: must be a plain name, got ' kubelet'",
        "maxRestarts: must be at least 1, got 0",
        "window: must be positive, got 0s"]
