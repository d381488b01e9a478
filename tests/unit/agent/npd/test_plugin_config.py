"""Loading node-problem-detector custom-plugin-monitor files unchanged, and the errors for broken ones."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from agent.npd.plugin_config import (
    ConfigError,
    DefaultCondition,
    PluginConfig,
    PluginMonitorConfig,
    PluginRule,
    RuleType,
    load,
)

TEMPORARY = {"type": "temporary", "reason": "NTPIsDown", "path": "check.sh"}
PERMANENT = {"type": "permanent", "condition": "NTPProblem", "reason": "NTPIsDown", "path": "check.sh"}
CONDITION = {"type": "NTPProblem", "reason": "NTPIsUp", "message": "ntp service is up"}


def write_config(directory: Path, doc: dict[str, Any] | str) -> Path:
    """The config as `monitor.json` in `directory`, beside an executable `check.sh` its rules can name."""
    plugin = directory / "check.sh"
    plugin.write_text("#!/bin/sh\nexit 0\n")
    plugin.chmod(0o755)
    file = directory / "monitor.json"
    file.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2))
    return file


def monitor(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"plugin": "custom", "source": "ntp-custom-plugin-monitor", "conditions": [CONDITION],
                           "rules": [TEMPORARY, PERMANENT]}
    doc.update(overrides)
    return doc


def test_a_minimal_file_gets_npds_defaults(tmp_path):
    file = write_config(tmp_path, {"plugin": "custom", "source": "s", "rules": [TEMPORARY]})

    config = load(file)

    assert config == PluginMonitorConfig(
        source="s",
        rules=(PluginRule(type=RuleType.TEMPORARY, reason="NTPIsDown", path=tmp_path / "check.sh",
                          timeout=dt.timedelta(seconds=5), invoke_interval=dt.timedelta(seconds=30)),),
    )
    assert config.plugin_config == PluginConfig(
        invoke_interval=dt.timedelta(seconds=30), timeout=dt.timedelta(seconds=5), max_output_length=80,
        concurrency=3, enable_message_change_based_condition_update=False, skip_initial_status=False)
    assert config.metrics_reporting is True


def test_an_npd_file_with_every_field_loads_as_written(tmp_path):
    file = write_config(tmp_path, monitor(
        pluginConfig={"invoke_interval": "1m30s", "timeout": "1m", "max_output_length": 512, "concurrency": 1,
                      "enable_message_change_based_condition_update": True, "skip_initial_status": True},
        metricsReporting=False,
        rules=[TEMPORARY, {**PERMANENT, "args": ["--lookback=20m", "--count=5"], "timeout": "45s",
                           "invoke_interval": "5m"}],
    ))

    config = load(file)

    assert config.plugin_config == PluginConfig(
        invoke_interval=dt.timedelta(seconds=90), timeout=dt.timedelta(minutes=1), max_output_length=512,
        concurrency=1, enable_message_change_based_condition_update=True, skip_initial_status=True)
    assert config.metrics_reporting is False
    assert config.conditions == (DefaultCondition("NTPProblem", "NTPIsUp", "ntp service is up"),)
    assert config.rules[0].timeout == dt.timedelta(minutes=1), "a rule without a timeout takes the global one"
    assert config.rules[1] == PluginRule(
        type=RuleType.PERMANENT, condition="NTPProblem", reason="NTPIsDown", path=tmp_path / "check.sh",
        args=("--lookback=20m", "--count=5"), timeout=dt.timedelta(seconds=45),
        invoke_interval=dt.timedelta(minutes=5))
    assert config.condition("NTPProblem").reason == "NTPIsUp"


def test_a_relative_plugin_path_falls_back_to_the_working_directory_as_npd_resolves_it(tmp_path, monkeypatch):
    config_dir = tmp_path / "etc"
    config_dir.mkdir()
    (tmp_path / "config" / "plugin").mkdir(parents=True)
    (tmp_path / "config" / "plugin" / "check_ntp.sh").write_text("#!/bin/sh\n")
    file = write_config(config_dir, monitor(rules=[{**TEMPORARY, "path": "./config/plugin/check_ntp.sh"}]))
    monkeypatch.chdir(tmp_path)

    assert load(file).rules[0].path == tmp_path / "config" / "plugin" / "check_ntp.sh"


def test_an_absolute_plugin_path_is_kept(tmp_path):
    plugin = tmp_path / "elsewhere.sh"
    plugin.write_text("#!/bin/sh\n")
    file = write_config(tmp_path, monitor(rules=[{**TEMPORARY, "path": str(plugin)}]))

    assert load(file).rules[0].path == plugin


BAD_CONFIGS = [
    ("syntax-error", '{\n  "plugin": "custom",\n  "rules": [}\n', ":3:13: invalid JSON: Expecting value"),
    ("not-an-object", "[]", "<document>: must be an object, got a list"),
    ("missing-plugin", {k: v for k, v in monitor().items() if k != "plugin"}, "plugin: is required"),
    ("log-monitor-plugin", monitor(plugin="kmsg"), "plugin: must be \"custom\", got 'kmsg'"),
    ("missing-path", monitor(rules=[TEMPORARY, PERMANENT, {"type": "temporary", "reason": "X"}]),
     "rules[2].path: is required"),
    ("path-does-not-exist", monitor(rules=[TEMPORARY, PERMANENT, {**TEMPORARY, "path": "nope.sh"}]),
     "rules[2].path: 'nope.sh' does not exist (looked for "),
    ("negative-global-timeout", monitor(pluginConfig={"timeout": "-5s"}),
     "pluginConfig.timeout: must not be negative, got '-5s'"),
    ("negative-rule-timeout", monitor(rules=[{**TEMPORARY, "timeout": "-1s"}]),
     "rules[0].timeout: must not be negative, got '-1s'"),
    ("zero-invoke-interval", monitor(pluginConfig={"invoke_interval": "0s"}),
     "pluginConfig.invoke_interval: must be greater than 0, got '0s'"),
    ("fork-bomb-interval", monitor(pluginConfig={"invoke_interval": "100ms"}),
     "pluginConfig.invoke_interval: must be at least 1s (each run forks one process per rule), got 100ms"),
    ("fork-bomb-rule-interval", monitor(rules=[{**TEMPORARY, "invoke_interval": "10ms"}]),
     "rules[0].invoke_interval: must be at least 1s"),
    ("negative-rule-interval", monitor(rules=[{**TEMPORARY, "invoke_interval": "-1m"}]),
     "rules[0].invoke_interval: must not be negative"),
    ("malformed-duration", monitor(pluginConfig={"timeout": "5 seconds"}),
     "pluginConfig.timeout: not a duration: '5 seconds'"),
    ("duration-as-number", monitor(pluginConfig={"invoke_interval": 30}),
     'pluginConfig.invoke_interval: must be a duration string such as "30s", got the number 30'),
    ("rule-timeout-above-global", monitor(rules=[{**TEMPORARY, "timeout": "10s"}]),
     "rules[0].timeout: '10s' is longer than the global pluginConfig.timeout (5s)"),
    ("unknown-rule-type", monitor(rules=[{**TEMPORARY, "type": "transient"}]),
     "rules[0].type: must be one of temporary, permanent, got 'transient'"),
    ("permanent-condition-undeclared", monitor(conditions=[]),
     "rules[1].condition: 'NTPProblem' has no default in conditions[] (declared: none)"),
    ("permanent-without-condition", monitor(rules=[{k: v for k, v in PERMANENT.items() if k != "condition"}]),
     "rules[0].condition: is required"),
    ("rule-without-reason", monitor(rules=[{k: v for k, v in TEMPORARY.items() if k != "reason"}]),
     "rules[0].reason: is required"),
    ("args-not-strings", monitor(rules=[{**TEMPORARY, "args": ["--count", 5]}]),
     "rules[0].args: must be a list of strings"),
    ("zero-concurrency", monitor(pluginConfig={"concurrency": 0}), "pluginConfig.concurrency: must be at least 1"),
    ("max-output-as-string", monitor(pluginConfig={"max_output_length": "80"}),
     "pluginConfig.max_output_length: must be an integer, got the string '80'"),
    ("boolean-as-string", monitor(metricsReporting="true"), "metricsReporting: must be true or false"),
    ("misspelt-key", monitor(pluginConfig={"invoke_intervall": "10s"}),
     "pluginConfig.invoke_intervall: unknown field; did you mean 'invoke_interval'?"),
    ("unknown-rule-key", monitor(rules=[{**TEMPORARY, "pattern": "x"}]), "rules[0].pattern: unknown field"),
    ("duplicate-key", '{"plugin": "custom", "pluginConfig": {"timeout": "5s", "timeout": "9s"}, '
                      '"rules": [{"type": "temporary", "reason": "R", "path": "check.sh"}]}',
     "pluginConfig.timeout: given more than once"),
    ("no-rules", monitor(rules=[]), "rules: must list at least one rule"),
    ("rules-not-a-list", monitor(rules={"type": "temporary"}), "rules: must be a list, got an object"),
    ("duplicate-condition", monitor(conditions=[CONDITION, CONDITION]),
     "conditions[1].type: condition 'NTPProblem' is declared more than once"),
    ("condition-without-type", monitor(conditions=[CONDITION, {"reason": "R"}]), "conditions[1].type: is required"),
    *[(f"kubelet-condition-{kind}", monitor(conditions=[CONDITION, {"type": kind, "reason": "R"}]),
       f"conditions[1].type: '{kind}' is owned by the kubelet; choose another condition type")
      for kind in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")],
    ("unbounded-max-output", monitor(pluginConfig={"max_output_length": 10**12}),
     "pluginConfig.max_output_length: must be at most 1048576 (1 MiB: the output is held in memory and written to "
     "the Node), got 1000000000000"),
]


@pytest.mark.parametrize(("doc", "error"), [(doc, error) for _, doc, error in BAD_CONFIGS],
                         ids=[name for name, _, _ in BAD_CONFIGS])
def test_a_broken_file_is_refused_with_the_file_and_field_in_the_message(tmp_path, doc, error):
    file = write_config(tmp_path, doc)

    with pytest.raises(ConfigError) as caught:
        load(file)

    assert any(e.startswith(str(file)) and error in e for e in caught.value.errors), caught.value.errors


def test_every_mistake_in_a_file_is_reported_at_once(tmp_path):
    file = write_config(tmp_path, monitor(
        pluginConfig={"timeout": "-1s", "concurrency": 0},
        rules=[{**TEMPORARY, "type": "sometimes"}, {**PERMANENT, "condition": "Nope", "path": "gone.sh"}],
    ))

    with pytest.raises(ConfigError) as caught:
        load(file)

    assert [e.split(": ", 2)[1] for e in caught.value.errors] == [
        "pluginConfig.timeout", "pluginConfig.concurrency", "rules[0].type", "rules[1].condition", "rules[1].path"]
    assert str(caught.value) == "\n".join(caught.value.errors)


def test_max_output_length_is_accepted_up_to_one_mebibyte(tmp_path):
    file = write_config(tmp_path, monitor(pluginConfig={"max_output_length": 1024 * 1024}))
    assert load(file).plugin_config.max_output_length == 1024 * 1024


def test_an_unreadable_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"monitor\.json: cannot read"):
        load(tmp_path / "monitor.json")


def test_a_kubelet_condition_is_reported_once_not_again_at_the_rule_that_sets_it(tmp_path):
    doc = monitor(conditions=[{"type": "Ready", "reason": "R"}], rules=[{**PERMANENT, "condition": "Ready"}])
    with pytest.raises(ConfigError) as caught:
        load(write_config(tmp_path, doc))
    assert [e.split(": ", 1)[1] for e in caught.value.errors] == [
        "conditions[0].type: 'Ready' is owned by the kubelet; choose another condition type"]


@pytest.mark.parametrize(("content", "error"), [
    ("[" * 100 + "]" * 100, ": <document>: nested deeper than 64 levels, the bound on a config file"),
    ("[" * 100_000 + "]" * 100_000, ": <document>: nested deeper than 64 levels"),
    (b'{"plugin": "custom"}\n\xff', ":2: cannot read: not UTF-8 text: byte 0xff at offset 21 (invalid start byte)"),
    (b" " * ((4 << 20) + 1), ":1: cannot read: the file is larger than 4 MiB, the bound on a config file"),
], ids=["nested 100 deep", "nested past the recursion limit", "binary", "over 4 MiB"])
def test_a_hostile_file_is_refused_before_it_is_read_whole_or_walked(tmp_path, content, error):
    file = tmp_path / "monitor.json"
    file.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError) as caught:
        load(file)
    assert caught.value.errors == [f"{file}{error}"]
