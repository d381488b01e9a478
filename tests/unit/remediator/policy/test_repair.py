"""Repair ladders (`rules[].repair`) and the `repair` section: what they read as, their defaults, and every refusal
with FILE:LINE: field.path."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from nodemedic_common.repair_contract import RepairAction
from remediator.cli import main as cli_main
from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.loader import convert_policy, load_policy, parse_policy
from remediator.policy.repair import (
    DEFAULT_WAITS,
    MAX_STEPS,
    MAX_WAIT,
    POOL_LABELS,
    WAIT_FLOORS,
    RepairSettings,
    RepairStep,
)
from remediator.policy.window import MaintenanceWindow
from remediator.strategies import CATALOG

ROOT = Path(__file__).resolve().parents[4]
DEFAULT_POLICY = ROOT / "deploy" / "policy" / "default.yaml"
REPAIR_DOC = ROOT / "docs" / "repair.md"
HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"

RESTART, REBOOT, REPLACE, PERSON = RepairAction.RESTART, RepairAction.REBOOT, RepairAction.REPLACE, RepairAction.PERSON
M = dt.timedelta(minutes=1)


def ladder_policy(*steps: str, effect: str = "NoSchedule", condition: str = "KubeletUnhealthy",
                  status: str = "True", repair: str | None = None) -> str:
    """One rule (the ladder's first step on line 8) with `steps` as its `repair` list, or `repair` as its value."""
    value = "".join(f"\n  - {s}" for s in steps) if repair is None else f" {repair}"
    return HEADER + (
        "rules:\n"                                                                       # 3
        "- name: r\n"                                                                    # 4
        f"  condition: {{type: {condition}, status: \"{status}\"}}\n"                    # 5
        f"  taint: {{key: nodemedic.io/r, effect: {effect}}}\n"                          # 6
        + ("  allowNoExecute: true\n" if effect == "NoExecute" else "")
        + f"  repair:{value}\n"                                                          # 7
    )


def ladder(text: str) -> tuple[RepairStep, ...]:
    (rule,) = parse_policy(text, source="p.yaml", catalog=CATALOG).rules
    return rule.repair


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    return caught.value.errors


# --- ladders that read -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (ladder_policy("{action: restart, service: kubelet, wait: 3m}", "{action: reboot, wait: 15m}", "{action: person}"),
     (RepairStep(RESTART, 3 * M, "kubelet"), RepairStep(REBOOT, 15 * M), RepairStep(PERSON, dt.timedelta(0)))),
    (ladder_policy("{action: restart, service: containerd}", "{action: reboot}", "{action: replace}",
                   "{action: person}"),
     (RepairStep(RESTART, 5 * M, "containerd"), RepairStep(REBOOT, 15 * M), RepairStep(REPLACE, 30 * M),
      RepairStep(PERSON, dt.timedelta(0)))),
    (ladder_policy("{action: restart, service: crio, wait: 1m}", "{action: replace, wait: 24h}"),
     (RepairStep(RESTART, M, "crio"), RepairStep(REPLACE, MAX_WAIT))),
    (ladder_policy("{action: restart, service: kubelet}", "{action: restart, service: containerd}"),
     (RepairStep(RESTART, 5 * M, "kubelet"), RepairStep(RESTART, 5 * M, "containerd"))),
    (ladder_policy("{action: reboot, wait: 300}", effect="NoExecute"), (RepairStep(REBOOT, 5 * M),)),
    (ladder_policy("{action: restart, service: kubelet}", "{action: person}", effect="PreferNoSchedule"),
     (RepairStep(RESTART, 5 * M, "kubelet"), RepairStep(PERSON, dt.timedelta(0)))),
    (ladder_policy("{action: restart, service: kubelet}", "{action: person}", condition="Ready", status="False"),
     (RepairStep(RESTART, 5 * M, "kubelet"), RepairStep(PERSON, dt.timedelta(0)))),
    (ladder_policy("{action: person}"), (RepairStep(PERSON, dt.timedelta(0)),)),
    (ladder_policy(repair="[]"), ()),
    (ladder_policy(repair="null"), ()),
    (ladder_policy(*["{action: restart, service: kubelet}", "{action: restart, service: containerd}",
                     "{action: restart, service: crio}", "{action: reboot}", "{action: replace}", "{action: person}"]),
     (RepairStep(RESTART, 5 * M, "kubelet"), RepairStep(RESTART, 5 * M, "containerd"),
      RepairStep(RESTART, 5 * M, "crio"), RepairStep(REBOOT, 15 * M), RepairStep(REPLACE, 30 * M),
      RepairStep(PERSON, dt.timedelta(0)))),
], ids=["the-documented-ladder", "waits-left-out-take-each-actions-default", "waits-at-the-floor-and-the-cap",
        "two-services-restarted-in-turn", "a-reboot-under-no-execute", "restart-and-person-under-prefer-no-schedule",
        "restart-and-person-on-ready", "person-alone", "an-empty-list-is-no-ladder", "null-is-no-ladder",
        "six-steps"])
def test_a_ladder_reads_as_its_steps_in_order(text: str, expected: tuple[RepairStep, ...]) -> None:
    assert ladder(text) == expected


def test_a_rule_without_a_ladder_has_none() -> None:
    text = HEADER + "rules:\n- condition: {type: KernelDeadlock}\n  taint: {key: nodemedic.io/k}\n"
    (rule,) = parse_policy(text, source="p.yaml", catalog=CATALOG).rules
    assert rule.repair == ()


def test_each_default_wait_lies_between_its_floor_and_the_cap() -> None:
    assert set(DEFAULT_WAITS) == set(WAIT_FLOORS) == {RESTART, REBOOT, REPLACE}
    for action, default in DEFAULT_WAITS.items():
        floor, why = WAIT_FLOORS[action]
        assert floor <= default <= MAX_WAIT and why, action
    assert DEFAULT_WAITS == {RESTART: 5 * M, REBOOT: 15 * M, REPLACE: 30 * M}
    assert {a: f for a, (f, _) in WAIT_FLOORS.items()} == {RESTART: M, REBOOT: 2 * M, REPLACE: 10 * M}


# --- ladders that are refused ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    (ladder_policy("{action: rebot}"),
     "p.yaml:8: rules[0].repair[0].action: unknown action 'rebot'; must be one of restart, reboot, replace, person"),
    (ladder_policy("{wait: 5m}"), "p.yaml:8: rules[0].repair[0].action: required"),
    (ladder_policy("{action: restart}"),
     "p.yaml:8: rules[0].repair[0].service: a restart needs the service to restart: one of kubelet, containerd, crio"),
    (ladder_policy("{action: restart, service: docker}"),
     "p.yaml:8: rules[0].repair[0].service: unknown service 'docker'; a restart names one of kubelet, containerd, "
     "crio"),
    (ladder_policy("{action: reboot, service: kubelet}"),
     "p.yaml:8: rules[0].repair[0].service: only a restart names a service, not a reboot"),
    (ladder_policy("{action: person, service: kubelet}"),
     "p.yaml:8: rules[0].repair[0].service: only a restart names a service, not a person"),
    (ladder_policy("{action: person}", "{action: reboot}"),
     "p.yaml:9: rules[0].repair[1].action: a step after person (rules[0].repair[0]) never runs"),
    (ladder_policy("{action: person}", "{action: person}"),
     "p.yaml:9: rules[0].repair[1].action: a step after person (rules[0].repair[0]) never runs"),
    (ladder_policy("{action: person, wait: 1h}"), "p.yaml:8: rules[0].repair[0].wait: a person step has no wait"),
    (ladder_policy("{action: restart, service: kubelet, wait: 30s}"),
     "p.yaml:8: rules[0].repair[0].wait: must be at least 1m0s (the service must come back and the agent's check "
     "pass again before the condition clears), got 30s"),
    (ladder_policy("{action: reboot, wait: 119s}"),
     "p.yaml:8: rules[0].repair[0].wait: must be at least 2m0s (a node needs minutes to boot"),
    (ladder_policy("{action: replace, wait: 9m59s}"),
     "p.yaml:8: rules[0].repair[0].wait: must be at least 10m0s (the node autoscaler needs minutes"),
    (ladder_policy("{action: reboot, wait: 0}"), "p.yaml:8: rules[0].repair[0].wait: must be at least 2m0s"),
    (ladder_policy("{action: reboot, wait: 24h1s}"),
     "p.yaml:8: rules[0].repair[0].wait: must be at most 24h0m0s (a step that has not worked in a day will not"),
    (ladder_policy("{action: reboot, wait: soon}"), "p.yaml:8: rules[0].repair[0].wait: not a duration: 'soon'"),
    (ladder_policy("{action: reboot, wait: -15m}"), "p.yaml:8: rules[0].repair[0].wait: must not be negative"),
    (ladder_policy("{action: reboot, wait: null}"), "p.yaml:8: rules[0].repair[0].wait: not a duration: None"),
    (ladder_policy("{action: restart, service: kubelet}", "{action: restart, service: kubelet, wait: 10m}"),
     "p.yaml:9: rules[0].repair[1].action: restart kubelet is already rules[0].repair[0]"),
    (ladder_policy("{action: reboot}", "{action: replace}", "{action: reboot, wait: 1h}"),
     "p.yaml:10: rules[0].repair[2].action: reboot is already rules[0].repair[0]"),
    (ladder_policy(*["{action: restart, service: kubelet}"] * (MAX_STEPS + 1)),
     f"p.yaml:8: rules[0].repair: at most {MAX_STEPS} steps, got {MAX_STEPS + 1}"),
    (ladder_policy("{action: reboot}", effect="PreferNoSchedule"),
     "p.yaml:8: rules[0].repair[0].action: a reboot needs the node drained first, and a PreferNoSchedule taint does "
     "not keep new pods off it between the drain and the reboot"),
    (ladder_policy("{action: replace}", effect="PreferNoSchedule"),
     "p.yaml:8: rules[0].repair[0].action: a replace needs the node drained first"),
    (ladder_policy("{action: reboot}", condition="Ready", status="False"),
     "p.yaml:8: rules[0].repair[0].action: no reboot on the kubelet's Ready condition: a node that is not Ready has "
     "gone dark"),
    (ladder_policy("{action: replace}", condition="Ready", status="Unknown"),
     "p.yaml:8: rules[0].repair[0].action: no replace on the kubelet's Ready condition"),
    (ladder_policy("{action: reboot, wiat: 15m}"),
     "p.yaml:8: rules[0].repair[0].wiat: unknown key (did you mean wait?); valid keys: action, service, wait"),
    (ladder_policy("reboot"), "p.yaml:8: rules[0].repair[0]: must be a mapping, got string 'reboot'"),
    (ladder_policy(repair="reboot"), "p.yaml:7: rules[0].repair: must be a list, got string 'reboot'"),
], ids=["an-unknown-action", "no-action", "a-restart-without-a-service", "a-restart-of-an-unknown-service",
        "a-service-on-a-reboot", "a-service-on-a-person", "a-step-after-person", "person-twice", "a-wait-on-person",
        "a-restart-wait-below-its-floor", "a-reboot-wait-below-its-floor", "a-replace-wait-below-its-floor",
        "a-zero-wait", "a-wait-above-the-cap", "a-wait-that-is-no-duration", "a-negative-wait", "a-null-wait",
        "the-same-restart-twice", "the-same-reboot-twice", "more-steps-than-the-bound",
        "a-reboot-under-prefer-no-schedule", "a-replace-under-prefer-no-schedule", "a-reboot-on-ready",
        "a-replace-on-ready", "an-unknown-step-key", "a-step-that-is-no-mapping", "a-ladder-that-is-no-list"])
def test_a_bad_ladder_is_refused_at_its_line_and_field(text: str, expected: str) -> None:
    got = errors(text)
    assert any(e.startswith(expected) for e in got), got


def test_a_bad_restart_is_reported_once_not_again_as_a_repeated_step() -> None:
    assert errors(ladder_policy("{action: restart}", "{action: restart, service: docker}")) == [
        "p.yaml:8: rules[0].repair[0].service: a restart needs the service to restart: one of kubelet, containerd, "
        "crio",
        "p.yaml:9: rules[0].repair[1].service: unknown service 'docker'; a restart names one of kubelet, containerd, "
        "crio (the services the agent can restart; the container runtime by its own name)",
    ]


def test_every_ladder_error_of_every_rule_is_reported_in_one_pass_in_line_order() -> None:
    text = HEADER + (
        "rules:\n"                                                                        # 3
        "- name: a\n"                                                                     # 4
        "  condition: {type: KubeletUnhealthy, status: \"True\"}\n"                       # 5
        "  taint: {key: nodemedic.io/a, effect: PreferNoSchedule}\n"                      # 6
        "  repair:\n"                                                                     # 7
        "  - {action: reboot, wait: 1m}\n"                                                # 8
        "- name: b\n"                                                                     # 9
        "  condition: {type: Ready, status: \"False\"}\n"                                 # 10
        "  taint: {key: nodemedic.io/b}\n"                                                # 11
        "  repair: [{action: person}, {action: replace}]\n"                               # 12
        "repair: {maxConcurrent: 0}\n"                                                    # 13
    )
    assert [e.split(": ")[0:2] for e in errors(text)] == [
        ["p.yaml:8", "rules[0].repair[0].action"],  # PreferNoSchedule
        ["p.yaml:8", "rules[0].repair[0].wait"],  # below the floor
        ["p.yaml:12", "rules[1].repair[1].action"],  # on Ready
        ["p.yaml:12", "rules[1].repair[1].action"],  # after person
        ["p.yaml:13", "repair.maxConcurrent"],
    ]


# --- the `repair` section ----------------------------------------------------------------------------------------


def settings(text: str) -> RepairSettings:
    return parse_policy(HEADER + text, source="p.yaml", catalog=CATALOG).repair


@pytest.mark.parametrize("text", ["", "repair:\n", "repair: {}\n"], ids=["absent", "null", "empty"])
def test_a_policy_without_repair_settings_gets_every_default(text: str) -> None:
    assert settings(text) == RepairSettings(max_concurrent=1, max_per_hour=6, max_unhealthy_percent=20.0,
                                            window=MaintenanceWindow(), blocking_pod_selector=None,
                                            pool_labels=POOL_LABELS)


def test_ladders_without_a_repair_section_get_the_default_rails() -> None:
    policy = parse_policy(ladder_policy("{action: reboot}", "{action: person}"), source="p.yaml", catalog=CATALOG)
    assert policy.rules[0].repair and policy.repair == RepairSettings()


def test_every_field_of_the_repair_section_lands_in_its_dataclass_field() -> None:
    text = ("repair:\n"
            "  maxConcurrent: 3\n"
            "  maxPerHour: 20\n"
            "  maxUnhealthyPercent: 12.5\n"
            "  window: {start: \"22:00\", end: \"06:00\", days: [Sat, Sun], timeZone: Europe/Berlin}\n"
            "  blockingPodSelector:\n"
            "    matchLabels: {app: batch-critical}\n"
            "    matchExpressions: [{key: tier, operator: In, values: [gold]}]\n"
            "  poolLabels: [example.com/pool, pool]\n")
    assert settings(text) == RepairSettings(
        max_concurrent=3, max_per_hour=20, max_unhealthy_percent=12.5,
        window=MaintenanceWindow(start=dt.time(22), end=dt.time(6), days=frozenset({5, 6}),
                                 time_zone="Europe/Berlin"),
        blocking_pod_selector=LabelSelector(match_labels=(("app", "batch-critical"),),
                                            match_expressions=(SelectorRequirement("tier", "In", ("gold",)),)),
        pool_labels=("example.com/pool", "pool"))


@pytest.mark.parametrize(("text", "expected"), [
    ("{maxConcurrent: 1000, maxPerHour: 10000, maxUnhealthyPercent: 100}",
     RepairSettings(max_concurrent=1000, max_per_hour=10000, max_unhealthy_percent=100.0)),
    ("{maxUnhealthyPercent: 0.5}", RepairSettings(max_unhealthy_percent=0.5)),
    ("{poolLabels: []}", RepairSettings(pool_labels=())),
    ("{blockingPodSelector: null, window: null}", RepairSettings()),
], ids=["the-upper-bounds", "a-fraction-of-a-percent", "no-pool-labels-groups-by-zone", "nulls-take-the-defaults"])
def test_repair_settings_at_their_bounds_are_accepted(text: str, expected: RepairSettings) -> None:
    assert settings(f"repair: {text}\n") == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("{maxConcurrent: 0}", "repair.maxConcurrent: must be at least 1 and at most 1000, got 0"),
    ("{maxConcurrent: 1001}", "repair.maxConcurrent: must be at least 1 and at most 1000, got 1001"),
    ("{maxConcurrent: two}", "repair.maxConcurrent: must be an integer, got string 'two'"),
    ("{maxPerHour: 0}", "repair.maxPerHour: must be at least 1 and at most 10000, got 0"),
    ("{maxPerHour: 10001}", "repair.maxPerHour: must be at least 1 and at most 10000, got 10001"),
    ("{maxUnhealthyPercent: 0}", "repair.maxUnhealthyPercent: must be above 0 and at most 100, got 0"),
    ("{maxUnhealthyPercent: 100.5}", "repair.maxUnhealthyPercent: must be above 0 and at most 100, got 100.5"),
    ("{maxUnhealthyPercent: -5}", "repair.maxUnhealthyPercent: must be above 0 and at most 100, got -5"),
    ("{maxUnhealthyPercent: .nan}", "repair.maxUnhealthyPercent: must be above 0 and at most 100, got nan"),
    ("{maxUnhealthyPercent: null}", "repair.maxUnhealthyPercent: must be a number above 0 and at most 100, got null"),
    ("{maxUnhealthyPercent: 20%}", "repair.maxUnhealthyPercent: must be a number above 0 and at most 100, got "
                                   "string '20%'"),
    ("{window: {start: '01:00', end: '01:00'}}", "repair.window.end: equal to start: the window would never"),
    ("{window: {start: '01:00', end: '05:00', days: []}}", "repair.window.days: an empty list would never open"),
    ("{window: {start: '01:00'}}", "repair.window.end: required"),
    ("{window: {start: '01:00', end: '05:00', hours: 8}}", "repair.window.hours: unknown key; valid keys: start, "
                                                           "end, days, timeZone"),
    ("{blockingPodSelector: {}}", "repair.blockingPodSelector: an empty selector matches every pod"),
    ("{blockingPodSelector: {matchExpressions: [{key: app, operator: Within}]}}",
     "repair.blockingPodSelector.matchExpressions[0].operator: must be one of In, NotIn, Exists, DoesNotExist"),
    ("{blockingPodSelector: app=batch}", "repair.blockingPodSelector: must be a mapping"),
    ("{poolLabels: [Pool/x]}", "repair.poolLabels[0]: invalid key 'Pool/x'"),
    ("{poolLabels: [pool, pool]}", "repair.poolLabels: 'pool' given twice"),
    ("{poolLabels: pool}", "repair.poolLabels: must be a list, got string 'pool'"),
    ("{maxConcurent: 2}", "repair.maxConcurent: unknown key (did you mean maxConcurrent?); valid keys: "
                          "maxConcurrent, maxPerHour, maxUnhealthyPercent, window, blockingPodSelector, poolLabels"),
    ("[maxConcurrent]", "repair: must be a mapping, got a list"),
], ids=["no-concurrency", "concurrency-over-the-bound", "concurrency-not-a-number", "no-steps-per-hour",
        "steps-per-hour-over-the-bound", "zero-percent", "over-100-percent", "negative-percent", "nan-percent",
        "null-percent", "percent-as-text", "a-window-that-never-opens", "a-window-on-no-day", "a-window-without-end",
        "an-unknown-window-key", "an-empty-blocking-selector", "a-bad-selector-operator", "a-selector-as-text",
        "an-invalid-pool-label", "a-pool-label-twice", "pool-labels-not-a-list", "an-unknown-key",
        "a-section-that-is-no-mapping"])
def test_bad_repair_settings_are_refused_at_their_line_and_field(text: str, expected: str) -> None:
    got = errors(HEADER + f"repair: {text}\n")
    assert any(e.startswith(f"p.yaml:3: {expected}") for e in got), got


# --- the shipped policy, the docs, the commands ------------------------------------------------------------------

SHIPPED_LADDERS = {
    "kernel-deadlock": ("reboot 15m", "person"),
    "readonly-filesystem": ("reboot 15m", "person"),
    "filesystem-corruption": ("person",),
    "container-runtime-unhealthy": ("restart containerd 3m", "reboot 15m", "person"),
    "kubelet-unhealthy": ("restart kubelet 3m", "reboot 15m", "person"),
    "gpu-fatal-error": ("reboot 15m", "replace 30m", "person"),
    "gpu-uncorrectable-ecc": ("reboot 15m", "replace 30m", "person"),
    "gpu-remap-failed": ("replace 30m", "person"),
    "gpu-nvlink-down": ("reboot 15m", "replace 30m", "person"),
}


def _said(step: RepairStep) -> str:
    return step.describe() if step.action == PERSON else f"{step.describe()} {int(step.wait / M)}m"


def test_the_shipped_policy_has_the_ladders_an_sre_would_accept_and_no_others() -> None:
    policy = load_policy(DEFAULT_POLICY, catalog=CATALOG)
    got = {rule.name: tuple(_said(s) for s in rule.repair) for rule in policy.rules if rule.repair}
    assert got == SHIPPED_LADDERS
    assert policy.repair == RepairSettings()


def test_each_shipped_ladder_says_why_in_a_comment_above_it() -> None:
    lines = DEFAULT_POLICY.read_text().splitlines()
    ladders = [i for i, line in enumerate(lines) if line == "  repair:"]
    assert len(ladders) == len(SHIPPED_LADDERS)
    assert all(lines[i - 1].startswith("  # ") for i in ladders)


def test_the_shipped_commented_repair_section_loads_when_uncommented() -> None:
    text = DEFAULT_POLICY.read_text()
    block = re.search(r"^# repair:\n(?:#   .*\n)+", text, re.MULTILINE)
    assert block is not None
    uncommented = "".join(line[2:] + "\n" for line in block.group(0).splitlines())
    got = parse_policy(text + uncommented, source="default.yaml", catalog=CATALOG).repair
    assert (got.max_concurrent, got.max_per_hour, got.max_unhealthy_percent, got.pool_labels) == (
        1, 6, 20.0, POOL_LABELS)  # the documented defaults
    assert got.window.describe() == "22:00-06:00 UTC, every day"
    assert got.blocking_pod_selector == LabelSelector(match_labels=(("app", "batch-critical"),))


def test_the_example_in_docs_repair_md_loads_as_it_reads() -> None:
    example = re.search(r"```yaml\n(.*?)```", REPAIR_DOC.read_text(), re.DOTALL)
    assert example is not None
    policy = parse_policy(HEADER + example.group(1), source="repair.md", catalog=CATALOG)
    assert policy.rules[0].repair == (RepairStep(RESTART, 3 * M, "kubelet"), RepairStep(REBOOT, 15 * M),
                                      RepairStep(PERSON, dt.timedelta(0)))
    assert policy.repair.window.describe() == "22:00-06:00 UTC, every day"


def test_validate_prints_the_ladder_and_section_errors_and_exits_2(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(ladder_policy("{action: person}", "{action: reboot}") + "repair: {maxPerHour: 0}\n")
    assert cli_main(["validate", "--policy", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"{path}:9: rules[0].repair[1].action: a step after person (rules[0].repair[0]) never runs: nodemedic stops at "
        "person; put person last",
        f"{path}:10: repair.maxPerHour: must be at least 1 and at most 10000, got 0",
    ]


def test_convert_keeps_the_ladders_and_the_repair_section_as_they_plan() -> None:
    text = ladder_policy("{action: restart, service: kubelet, wait: 2m}", "{action: reboot}", "{action: person}") + (
        "repair: {maxConcurrent: 2, window: {start: '22:00', end: '06:00'}, poolLabels: [pool]}\n")
    converted = convert_policy(text, source="p.yaml", catalog=CATALOG)
    assert parse_policy(converted, source="converted.yaml", catalog=CATALOG) == parse_policy(text, source="p.yaml",
                                                                                             catalog=CATALOG)


def test_a_converted_descheduler_policy_has_no_ladders_and_the_default_rails() -> None:
    text = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n"
    policy = parse_policy(convert_policy(text, source="d.yaml", catalog=CATALOG), source="converted.yaml",
                          catalog=CATALOG)
    assert all(rule.repair == () for rule in policy.rules) and policy.repair == RepairSettings()


def test_a_reboot_without_the_strategy_that_drains_is_refused(tmp_path: Path) -> None:
    text = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 30s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
  repair: [{action: restart, service: kubelet, wait: 3m}, {action: reboot, wait: 15m}]
strategies: []
"""
    assert parse_policy(text.replace("strategies: []\n", ""), source="p.yaml",
                        catalog=CATALOG).strategies  # the default drains
    with pytest.raises(ConfigError) as e:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    assert e.value.errors == ["p.yaml:4: rules[0].repair[1].action: reboot drains the node first, through the "
                              "RemovePodsViolatingNodeTaints strategy, which this policy does not run: add it to "
                              "`strategies`"]
    restart_only = text.replace(", {action: reboot, wait: 15m}", "")
    assert parse_policy(restart_only, source="p.yaml", catalog=CATALOG).rules[0].repair[0].service == "kubelet"


def test_the_shipped_commented_reboot_required_rule_loads_when_uncommented() -> None:
    """kured's case, opt-in in the shipped policy: uncommented in place, it is a rule with a reboot ladder."""
    text = DEFAULT_POLICY.read_text()
    block = re.search(r"^# - name: reboot-required\n(?:#   .*\n)+", text, re.MULTILINE)
    assert block is not None
    uncommented = "".join(line[2:] + "\n" for line in block.group(0).splitlines())
    (rule,) = [r for r in parse_policy(text.replace(block.group(0), uncommented), source="default.yaml",
                                       catalog=CATALOG).rules
               if r.name == "reboot-required"]
    assert (rule.condition_type, rule.evict) == ("RebootRequired", False)
    assert rule.repair == (RepairStep(REBOOT, 15 * M), RepairStep(PERSON, dt.timedelta(0)))
