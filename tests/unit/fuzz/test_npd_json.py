"""Fuzz: node-problem-detector monitor files, mutated from real ones, either load or fail with ConfigError naming
the file; a file that loads makes a monitor that runs without raising."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.checks.custom_plugin import CustomPluginMonitor
from agent.checks.logmonitor import LogMonitor
from agent.host import HostRoot
from agent.model import Status
from agent.npd.logmonitor_config import DEFAULTS_DIR, Plugin
from agent.npd.logmonitor_config import ConfigError as LogMonitorConfigError
from agent.npd.logmonitor_config import load as load_log_monitor
from agent.npd.plugin_config import ConfigError as PluginConfigError
from agent.npd.plugin_config import load as load_plugin_monitor
from agent.npd.plugin_runner import PluginResult
from tests.unit.fuzz.strategies import FUZZ, mutated

ROOT = Path(__file__).resolve().parents[3]
LOG_MONITORS = [json.loads(p.read_text()) for p in [
    DEFAULTS_DIR / "kernel-monitor.json", DEFAULTS_DIR / "readonly-monitor.json",
    *sorted((ROOT / "tests/testdata/agent/logmonitor").glob("npd-*.json"))]]
PLUGIN_MONITOR = json.loads((ROOT / "agent/defaults/plugins/reboot-required-monitor.json").read_text())
NOW = dt.datetime(2025, 3, 3, 8, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def host() -> Iterator[Path]:
    """A host root with the logs the seed files read, and the plugin the plugin monitor runs."""
    with tempfile.TemporaryDirectory(prefix="fuzz-npd-") as d:
        root = Path(d)
        for log in ("dev/kmsg", "var/log/kern.log", "var/log/syslog"):
            (root / log).parent.mkdir(parents=True, exist_ok=True)
            (root / log).write_text("3,1,100,-;INFO: task x:1 blocked for more than 120 seconds.\n"
                                    "Mar  3 08:00:00 node kernel: [  1.0] Killed process 1 (x) total-vm:1kB\n")
        (root / "proc").mkdir()
        (root / "proc" / "stat").write_text(f"btime {int((NOW - dt.timedelta(days=1)).timestamp())}\n")
        (root / "check_reboot_required.sh").write_text("#!/bin/sh\nexit 0\n")
        (root / "check_reboot_required.sh").chmod(0o755)
        yield root


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


def write(host: Path, doc: Any) -> Path:
    path = host / "monitor.json"
    path.write_text(json.dumps(doc))  # non-finite floats become NaN/Infinity, which Python's reader accepts
    return path


@FUZZ
@given(doc=st.sampled_from(LOG_MONITORS).flatmap(mutated))
def test_a_mutated_log_monitor_file_loads_or_is_refused_and_a_loaded_one_runs(
        host: Path, loop: asyncio.Runner, doc: Any) -> None:
    path = write(host, doc)
    try:
        config = load_log_monitor(path)
    except LogMonitorConfigError as e:
        assert e.errors and all(str(path) in m for m in e.errors), e.errors
        return
    if config.plugin not in (Plugin.KMSG, Plugin.FILELOG):
        return  # journald: the agent refuses it with its own message when building the checks
    monitor = LogMonitor(config, host=HostRoot(host))
    try:
        for step in range(2):
            seen = loop.run(monitor.observe(NOW + dt.timedelta(minutes=step)))
            assert {c.type for c in seen.conditions} <= set(monitor.condition_types)
    finally:
        monitor._reader.close()  # a monitor lives as long as the agent, so it has no close(); its reader does


class Verdicts:
    """Every plugin says "problem", with as long a message as it may (up to 4 KiB: the cap itself is fuzzed)."""

    async def __call__(self, path: Any, args: Any = (), *, timeout: float, max_output: int,
                       env: Any = None) -> PluginResult:
        return PluginResult(Status.TRUE, "x" * min(max_output, 4096), 1, False, 0.0)


@FUZZ
@given(doc=mutated(PLUGIN_MONITOR))
def test_a_mutated_plugin_monitor_file_loads_or_is_refused_and_a_loaded_one_runs(
        host: Path, loop: asyncio.Runner, doc: Any) -> None:
    path = write(host, doc)
    try:
        config = load_plugin_monitor(path)
    except PluginConfigError as e:
        assert e.errors and all(str(path) in m for m in e.errors), e.errors
        return
    monitor = CustomPluginMonitor(config, runner=Verdicts())
    assert monitor.timing.timeout > dt.timedelta(0)
    seen = loop.run(monitor.observe(NOW))
    assert {c.type for c in seen.conditions} <= set(monitor.condition_types)
