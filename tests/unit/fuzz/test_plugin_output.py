"""Fuzz: whatever a custom plugin prints and however it exits, its verdict follows NPD's exit-code contract, the
message is valid UTF-8 within `max_output_length` bytes, and the monitor turns it into reports without raising."""

from __future__ import annotations

import asyncio
import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent.checks.custom_plugin import CustomPluginMonitor
from agent.model import Status
from agent.npd.plugin_config import DefaultCondition, PluginConfig, PluginMonitorConfig, PluginRule, RuleType
from agent.npd.plugin_runner import PluginResult, verdict
from tests.unit.fuzz.strategies import FUZZ

T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
SECOND = dt.timedelta(seconds=1)

texts = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=120).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.sampled_from(["ok", "  reboot required\n", "é" * 50, "日本語のメッセージ" * 5, "\U0001f525" * 30, "\t\n \r"])
    .map(str.encode),
)
codes = st.one_of(st.sampled_from([0, 1, 2, 126, 127, 255, -9, -15, -64, -65, None]), st.integers())


class Replay:
    """A plugin runner that answers with the verdicts drawn for this example, in order."""

    def __init__(self, results: list[PluginResult]) -> None:
        self.results = iter(results)

    async def __call__(self, path: str | os.PathLike[str], args: Sequence[str] = (), *, timeout: float,
                       max_output: int, env: Mapping[str, str] | None = None) -> PluginResult:
        return next(self.results)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.Runner]:
    with asyncio.Runner() as runner:
        yield runner


@FUZZ
@given(runs=st.lists(st.tuples(codes, texts, st.booleans(), st.booleans()), min_size=2, max_size=6),
       max_output=st.integers(1, 400), message_updates=st.booleans())
def test_any_exit_and_output_give_a_bounded_verdict_and_reports(
        loop: asyncio.Runner, runs: list[tuple[int | None, bytes, bool, bool]], max_output: int,
        message_updates: bool) -> None:
    results = []
    for code, stdout, timed_out, stuck in runs:
        result = verdict("/plugins/check.sh", code, stdout, stdout[::-1], reaped=not stuck, timed_out=timed_out,
                         timeout=5.0, max_output=max_output, duration=0.1)
        expected = (Status.UNKNOWN if stuck or timed_out
                    else {0: Status.FALSE, 1: Status.TRUE}.get(code, Status.UNKNOWN))  # type: ignore[arg-type]
        assert result.status is expected
        result.message.encode("utf-8")  # valid text, no lone surrogate: it goes into a JSON PATCH
        if result.status is not Status.UNKNOWN:
            assert len(result.message.encode()) <= max_output
        results.append(result)

    condition = DefaultCondition("PluginProblem", "PluginIsHappy", "the plugin says all is well")
    rules = (PluginRule(RuleType.PERMANENT, "PluginSaysProblem", Path("/plugins/check.sh"), 5 * SECOND, SECOND,
                        condition="PluginProblem"),
             PluginRule(RuleType.TEMPORARY, "PluginSaysBlip", Path("/plugins/blip.sh"), 5 * SECOND, SECOND))
    monitor = CustomPluginMonitor(PluginMonitorConfig(
        source="fuzz", rules=rules, conditions=(condition,), plugin_config=PluginConfig(
            max_output_length=max_output, enable_message_change_based_condition_update=message_updates)),
        runner=Replay(results))
    for i in range(len(results) // 2):
        permanent, temporary = results[2 * i], results[2 * i + 1]
        seen = loop.run(monitor.observe(T0 + i * SECOND))
        (report,) = seen.conditions
        assert (report.type, report.status) == ("PluginProblem", permanent.status)
        assert [e.reason for e in seen.events] == (["PluginSaysBlip"] if temporary.status is Status.TRUE else [])
