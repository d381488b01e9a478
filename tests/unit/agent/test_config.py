"""The agent config file: defaults, camelCase fields, conversions, and errors with file, line and field."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from agent.checks import BUILTIN
from agent.config import CheckSpec, ConfigError, parse_config, parse_duration
from agent.model import CheckTiming


@dataclass(frozen=True)
class Thresholds:
    some_avg10: float = 80.0


DEFAULT_TIMING = CheckTiming(interval=dt.timedelta(seconds=15))


@dataclass(frozen=True)
class FakeConfig:
    timing: CheckTiming = DEFAULT_TIMING
    window: dt.timedelta = dt.timedelta(minutes=5)
    mounts: tuple[str, ...] = ("/",)
    thresholds: Thresholds = Thresholds()
    servers: tuple[str, ...] = ()


def validate(cfg: FakeConfig) -> list[str]:
    return [] if cfg.thresholds.some_avg10 <= 100 else ["thresholds.someAvg10: must be at most 100"]


REGISTRY = {"cpu": CheckSpec(FakeConfig, validate, lambda c, h: None),
            "ntp": CheckSpec(FakeConfig, validate, lambda c, h: None)}


def test_no_file_means_every_check_on_with_its_defaults() -> None:
    cfg = parse_config("", source="agent.yaml", registry=REGISTRY)
    assert set(cfg.checks) == {"cpu", "ntp"} and cfg.checks["cpu"] == FakeConfig()
    assert cfg.heartbeat == dt.timedelta(minutes=5) and cfg.system_log_monitors is None
    assert cfg.log_monitor_recover_after == dt.timedelta(minutes=10)
    assert parse_config("logMonitorRecoverAfter: never\n", source="a.yaml",
                        registry=REGISTRY).log_monitor_recover_after is None


def test_fields_are_converted_and_a_check_can_be_disabled() -> None:
    cfg = parse_config(
        "apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nheartbeat: 1m\nchecks:\n"
        "  cpu: {interval: 5s, window: 2m, mounts: [/, /data], thresholds: {someAvg10: 50}}\n"
        "  ntp: {enabled: false}\nsystemLogMonitors: [kernel.json]\n",
        source="/etc/nodemedic/agent.yaml", registry=REGISTRY)
    cpu = cfg.checks["cpu"]
    assert cpu.timing.interval == dt.timedelta(seconds=5) and cpu.timing.timeout == DEFAULT_TIMING.timeout
    assert cpu.window == dt.timedelta(minutes=2) and cpu.mounts == ("/", "/data")
    assert cpu.thresholds.some_avg10 == 50.0
    assert "ntp" not in cfg.checks
    assert [str(p) for p in cfg.system_log_monitors or ()] == ["/etc/nodemedic/kernel.json"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checks:\n  cpu:\n    windo: 5m\n", "agent.yaml:3: checks.cpu.windo: unknown field"),
        ("checks:\n  cpu: {window: soon}\n", "agent.yaml:2: checks.cpu.window: not a duration"),
        ("checks:\n  gpu: {}\n", "agent.yaml:2: checks.gpu: unknown check; valid: cpu, ntp"),
        ("checks:\n  cpu: {thresholds: {someAvg10: 500}}\n", "checks.cpu.thresholds.someAvg10: must be at most 100"),
        ("checks:\n  cpu: {mounts: /}\n", "agent.yaml:2: checks.cpu.mounts: must be a list"),
        ("heartbeat: -5\n", "agent.yaml:1: heartbeat: must not be negative"),
        ("kind: Policy\n", "agent.yaml:1: kind: must be AgentConfig"),
        ("checks: [cpu]\n", "agent.yaml:1: checks: must be a mapping"),
        ("checks:\n  cpu: {}\n  cpu: {}\n", "agent.yaml:3: <document>: duplicate key 'cpu'"),
        ("checks: {cpu: [\n", "agent.yaml:2: <document>:"),
        ("- just a list\n", "agent.yaml:1: <document>: must be a mapping"),
        ("checks:\n  cpu: {enabled: yes please}\n", "checks.cpu.enabled: must be true or false"),
    ],
    ids=["typo", "bad-duration", "unknown-check", "validator", "not-a-list", "negative", "wrong-kind",
         "checks-list", "duplicate-key", "syntax", "not-a-mapping", "enabled-not-bool"],
)
def test_mistakes_name_the_file_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="agent.yaml", registry=REGISTRY)
    assert any(expected in e for e in err.value.errors), err.value.errors


@pytest.mark.parametrize(("value", "seconds"), [("500ms", 0.5), ("30s", 30), ("5m", 300), ("1h30m", 5400), (2, 2)],
                         ids=str)
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value).total_seconds() == seconds


@pytest.mark.parametrize("value", ["99999999999h", float("inf"), float("nan"), 1e300],
                         ids=["huge-text", "inf", "nan", "huge-number"])
def test_a_duration_no_timedelta_can_hold_is_a_config_error_not_a_traceback(value: object) -> None:
    # Seen while fixing the same overflow the fuzz tests found in the NPD loaders: `validate` printed a traceback.
    with pytest.raises(ValueError, match=r"too long|not a duration"):
        parse_duration(value)


@pytest.mark.parametrize("check", sorted(BUILTIN))
def test_every_shipped_check_rejects_a_timing_the_supervisor_cannot_run(check: str) -> None:
    text = f"checks:\n  {check}:\n    interval: 0s\n    timeout: 0s\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="agent.yaml", registry=BUILTIN)
    assert f"agent.yaml:2: checks.{check}.timing.interval: must be positive" in err.value.errors
    timeout = "must be positive" if check == "kubelet" else "must be positive and not longer than timing.interval"
    assert f"agent.yaml:2: checks.{check}.timing.timeout: {timeout}" in err.value.errors
