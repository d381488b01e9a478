"""The agent config file: defaults, camelCase fields, conversions, and errors with file, line and field."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.bounds import Bounds, bounded
from agent.checks import BUILTIN
from agent.config import CheckSpec, ConfigError, load_config, parse_config
from agent.model import CheckTiming


@dataclass(frozen=True)
class Thresholds:
    some_avg10: float = bounded(80.0, Bounds(at_most=100))


DEFAULT_TIMING = CheckTiming(interval=dt.timedelta(seconds=15))


@dataclass(frozen=True)
class FakeConfig:
    timing: CheckTiming = DEFAULT_TIMING
    window: dt.timedelta = dt.timedelta(minutes=5)
    mounts: tuple[str, ...] = ("/",)
    thresholds: Thresholds = Thresholds()
    servers: tuple[str, ...] = ()


REGISTRY = {"cpu": CheckSpec(FakeConfig, lambda c, h: None), "ntp": CheckSpec(FakeConfig, lambda c, h: None)}


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
        "  cpu: {interval: 20s, window: 2m, mounts: [/, /data], thresholds: {someAvg10: 50}}\n"
        "  ntp: {enabled: false}\nsystemLogMonitors: [kernel.json]\n",
        source="/etc/nodemedic/agent.yaml", registry=REGISTRY)
    cpu = cfg.checks["cpu"]
    assert cpu.timing.interval == dt.timedelta(seconds=20) and cpu.timing.timeout == DEFAULT_TIMING.timeout
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
        ("checks:\n  cpu: {thresholds: {someAvg10: 500}}\n",
         "agent.yaml:2: checks.cpu.thresholds.someAvg10: must be at most 100, got 500"),
        ("checks:\n  cpu:\n    thresholds:\n      someAvg10: 500\n",
         "agent.yaml:4: checks.cpu.thresholds.someAvg10: must be at most 100, got 500"),
        ("checks:\n  cpu: {mounts: /}\n", "agent.yaml:2: checks.cpu.mounts: must be a list"),
        ("heartbeat: -5\n", "agent.yaml:1: heartbeat: must not be negative"),
        ("kind: Policy\n", "agent.yaml:1: kind: must be AgentConfig"),
        ("checks: [cpu]\n", "agent.yaml:1: checks: must be a mapping"),
        ("checks:\n  cpu: {}\n  cpu: {}\n", "agent.yaml:3: <document>: duplicate key 'cpu'"),
        ("checks: {cpu: [\n", "agent.yaml:2: <document>:"),
        ("- just a list\n", "agent.yaml:1: <document>: must be a mapping"),
        ("checks:\n  cpu: {enabled: yes please}\n", "checks.cpu.enabled: must be true or false"),
        # Settings that would flood the API server or make a condition meaningless (docs/bounds.md).
        ("heartbeat: 0s\n", "agent.yaml:1: heartbeat: must be at least 10s (one status PATCH per node per "
                              "heartbeat; the kubelet's own rate is 10s), got 0s"),
        ("heartbeat: 9.5\n", "agent.yaml:1: heartbeat: must be at least 10s"),
        ("logMonitorRecoverAfter: 0s\n", "agent.yaml:1: logMonitorRecoverAfter: must be at least 1m"),
        ("logMonitorRecoverAfter: 59s\n", "agent.yaml:1: logMonitorRecoverAfter: must be at least 1m"),
    ],
    ids=["typo", "bad-duration", "unknown-check", "bound", "bound-at-its-own-line", "not-a-list", "negative",
         "wrong-kind", "checks-list", "duplicate-key", "syntax", "not-a-mapping", "enabled-not-bool", "heartbeat-zero",
         "heartbeat-under-floor", "recover-zero", "recover-under-floor"],
)
def test_mistakes_name_the_file_line_and_field(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="agent.yaml", registry=REGISTRY)
    assert any(expected in e for e in err.value.errors), err.value.errors


@pytest.mark.parametrize("check", sorted(BUILTIN))
def test_every_shipped_check_refuses_an_interval_under_a_second(check: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(f"checks:\n  {check}: {{interval: 100ms, timeout: 50ms}}\n", source="agent.yaml",
                     registry=BUILTIN)
    assert any(e.startswith(f"agent.yaml:2: checks.{check}.interval: must be at least 1s") for e in
               err.value.errors), err.value.errors


def test_the_floors_themselves_are_accepted() -> None:
    cfg = parse_config("heartbeat: 10s\nlogMonitorRecoverAfter: 1m\nchecks:\n  cpu: {interval: 1s, timeout: 1s}\n",
                       source="agent.yaml", registry=BUILTIN)
    assert (cfg.heartbeat, cfg.log_monitor_recover_after) == (dt.timedelta(seconds=10), dt.timedelta(minutes=1))
    assert cfg.checks["cpu"].timing.interval == dt.timedelta(seconds=1)


@pytest.mark.parametrize("check", sorted(BUILTIN))
def test_every_shipped_check_rejects_a_timing_the_supervisor_cannot_run(check: str) -> None:
    text = f"checks:\n  {check}:\n    interval: 0s\n    timeout: 0s\n"
    with pytest.raises(ConfigError) as err:
        parse_config(text, source="agent.yaml", registry=BUILTIN)
    assert (f"agent.yaml:3: checks.{check}.interval: must be at least 1s (a check's findings reach the Node at most "
            "once a second; sampling faster only costs CPU), got 0s") in err.value.errors
    assert f"agent.yaml:4: checks.{check}.timeout: must be positive, got 0s" in err.value.errors


def test_a_probe_may_time_out_past_its_interval_a_sampling_check_may_not() -> None:
    text = "checks:\n  {}:\n    interval: 10s\n    timeout: 12s\n"
    for probe in ("kubelet", "kubeProxy"):  # a probe with a long request timeout may run past its interval
        config = parse_config(text.format(probe), source="agent.yaml", registry=BUILTIN)
        assert config.checks[probe].timing.timeout == dt.timedelta(seconds=12)
    with pytest.raises(ConfigError) as err:
        parse_config(text.format("cpu"), source="agent.yaml", registry=BUILTIN)
    assert err.value.errors == ["agent.yaml:4: checks.cpu.timeout: must not be longer than interval (10s), got 12s"]


# --- hostile files: bounded before parsing, refused with file and line, never a traceback ------------------


def _refused(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="agent.yaml", registry=REGISTRY)
    return caught.value.errors


def test_a_config_nested_past_the_bound_is_refused_at_its_line_not_a_recursion_error() -> None:
    assert _refused("heartbeat: " + "[" * 5000 + "]" * 5000 + "\n") == [
        "agent.yaml:1: <document>: nested deeper than 64 levels, the bound on a config file"]


def test_billion_laughs_are_refused_before_an_error_message_could_quote_them() -> None:
    lines = ["x0: &a0 [l, l, l, l, l, l, l, l, l]"]
    lines += [f"x{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = "anchors:\n" + "".join(f"  {line}\n" for line in lines) + "heartbeat: *a8\n"
    (error,) = _refused(text)
    assert error.startswith("agent.yaml:") and "expands to more than 100000 values" in error


def test_an_error_quotes_at_most_a_bounded_part_of_a_huge_value() -> None:
    (error,) = _refused(f"heartbeat: [{', '.join(['x' * 1000] * 1000)}]\n")
    assert error.startswith("agent.yaml:1: heartbeat: not a duration: ['xxx") and len(error) < 1000


def test_a_non_scalar_key_is_refused_at_its_line() -> None:
    assert _refused("checks:\n  ? [a, b]\n  : 1\n") == [
        "agent.yaml:2: <document>: a mapping key must be a plain value, got a list"]


@pytest.mark.parametrize(("content", "error"), [
    (b"heartbeat: 10s\n\xff\xfe\x00", ":2: <document>: cannot read the agent config: not UTF-8 text: byte 0xff at "
                                      "offset 15 (invalid start byte)"),
    (b"#" * ((4 << 20) + 1), ":1: <document>: cannot read the agent config: the file is larger than 4 MiB, the "
                             "bound on a config file"),
], ids=["binary", "over 4 MiB"])
def test_an_unreadable_config_file_is_refused_with_its_line(tmp_path: Path, content: bytes, error: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_config(path, registry=REGISTRY)
    assert caught.value.errors == [f"{path}{error}"]
