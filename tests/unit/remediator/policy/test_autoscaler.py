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
