"""The `autoscaler` section: `addsNodes` is true, false or auto (the default); anything else is an error at its line;
a DeschedulerPolicy keeps descheduler's node fit (false)."""

from __future__ import annotations

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.autoscaler import AUTO, AddsNodes
from remediator.policy.loader import convert_policy, parse_policy
from remediator.strategies import CATALOG

HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"
DESCHEDULER = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  plugins:
    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}
"""
DESCHEDULER_V1ALPHA1 = """apiVersion: descheduler/v1alpha1
kind: DeschedulerPolicy
strategies:
  RemovePodsViolatingNodeTaints: {enabled: true}
"""


@pytest.mark.parametrize(("section", "adds_nodes"), [
    ("", AUTO),
    ("autoscaler: {}\n", AUTO),
    ("autoscaler: {addsNodes: auto}\n", AUTO),
    ("autoscaler: {addsNodes: 'auto'}\n", AUTO),
    ("autoscaler: {addsNodes: true}\n", True),
    ("autoscaler: {addsNodes: false}\n", False),
], ids=["absent", "empty", "auto", "auto-quoted", "true", "false"])
def test_adds_nodes_is_true_false_or_auto_and_auto_by_default(section: str, adds_nodes: AddsNodes) -> None:
    assert parse_policy(HEADER + section, source="p.yaml", catalog=CATALOG).autoscaler.adds_nodes == adds_nodes


@pytest.mark.parametrize(("value", "got"), [
    ("maybe", "string 'maybe'"),
    ("Auto", "string 'Auto'"),
    ("'true'", "string 'true'"),
    ("1", "integer 1"),
    ("[auto]", "a list"),
    ("null", "null"),
], ids=["a-word", "auto-capitalised", "true-quoted", "a-number", "a-list", "null"])
def test_any_other_adds_nodes_is_an_error_naming_file_line_and_field(value: str, got: str) -> None:
    text = HEADER + f"safety: {{}}\nautoscaler:\n  consolidates: false\n  addsNodes: {value}\n"
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    assert caught.value.errors == [f"p.yaml:6: autoscaler.addsNodes: must be true, false or auto, got {got}"]


@pytest.mark.parametrize("descheduler", [DESCHEDULER, DESCHEDULER_V1ALPHA1], ids=["v1alpha2", "v1alpha1"])
def test_a_descheduler_policy_counts_only_on_the_nodes_there_are_and_convert_says_so(descheduler: str) -> None:
    assert parse_policy(descheduler, source="d.yaml", catalog=CATALOG).autoscaler.adds_nodes is False
    converted = convert_policy(descheduler, source="d.yaml", catalog=CATALOG)
    assert "autoscaler:\n  addsNodes: false\n" in converted
    assert parse_policy(converted, source="c.yaml", catalog=CATALOG) == parse_policy(descheduler, source="d.yaml",
                                                                                     catalog=CATALOG)
    opted_in = parse_policy(converted.replace("addsNodes: false", "addsNodes: auto"), source="c.yaml", catalog=CATALOG)
    assert opted_in.autoscaler.adds_nodes == AUTO


@pytest.mark.parametrize(("value", "seconds"), [(None, 300), ("1m", 60), ("30m", 1800), ("10m", 600), (120, 120)],
                         ids=["default", "floor", "ceiling", "10m", "seconds"])
def test_active_within_is_a_duration_from_1m_to_30m_and_5m_by_default(value: object, seconds: int) -> None:
    section = "" if value is None else f"autoscaler: {{activeWithin: {value}}}\n"
    got = parse_policy(HEADER + section, source="p.yaml", catalog=CATALOG).autoscaler.active_within
    assert got.total_seconds() == seconds


@pytest.mark.parametrize(("value", "error"), [
    ("8760h", "must be at most 30m0s (an autoscaler silent longer is gone, and the pods drained for its nodes would "
              "wait Pending), got 8760h0m0s"),
    ("30m1s", "must be at most 30m0s (an autoscaler silent longer is gone, and the pods drained for its nodes would "
              "wait Pending), got 30m1s"),
    ("10s", "must be at least 1m0s (a live autoscaler stamps its status every 10s-1m and would be counted on and "
            "off), got 10s"),
    ("0", "must be at least 1m0s (a live autoscaler stamps its status every 10s-1m and would be counted on and "
          "off), got 0s"),
    ("-5m", "must not be negative, got '-5m'"),
    ("soon", "not a duration: 'soon'; use a number with a unit h, m, s or ms (30s, 5m, 1h30m, 500ms) or a number of "
             "seconds"),
], ids=["a-year", "just-over", "too-short", "zero", "negative", "not-a-duration"])
def test_an_active_within_that_would_count_on_a_dead_autoscaler_or_flicker_a_live_one_is_an_error_at_its_line(
        value: str, error: str) -> None:
    text = HEADER + f"autoscaler:\n  addsNodes: auto\n  activeWithin: {value}\n"
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    assert caught.value.errors == [f"p.yaml:5: autoscaler.activeWithin: {error}"]
