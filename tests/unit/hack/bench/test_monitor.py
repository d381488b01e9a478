"""hack/bench/lib/monitor.py: the NPD monitor the latency benchmarks inject lines for, as the agent loads it."""

from __future__ import annotations

import json
from pathlib import Path

from agent.npd.logmonitor_config import load
from hack.bench.agent_alone import hung_task
from hack.bench.agent_vs_npd import LINE, probe
from hack.bench.lib.monitor import bench_condition, bench_monitor


def test_each_injected_line_sets_its_own_condition_and_no_other(tmp_path: Path) -> None:
    path = tmp_path / "bench-monitor.json"
    path.write_text(json.dumps(bench_monitor(12, pattern=probe, reason="Probe", lookback="0")))

    config = load(path)

    assert [r.condition for r in config.rules] == [bench_condition(i) for i in range(12)] == [
        f"Bench{i:02d}" for i in range(12)]
    line = LINE.format(i=11)
    assert [r.condition for r in config.rules if r.regex.search(line)] == ["Bench11"]


def test_the_hung_task_rules_match_the_lines_the_agent_benchmark_writes(tmp_path: Path) -> None:
    path = tmp_path / "bench-monitor.json"
    path.write_text(json.dumps(bench_monitor(3, pattern=hung_task, reason="TaskHung", lookback="5m")))

    rules = load(path).rules

    line = "INFO: task bench02:4002 blocked for more than 120 seconds."
    assert [r.condition for r in rules if r.regex.search(line)] == ["Bench02"]
