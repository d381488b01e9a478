"""`agent.npd.vocabulary` is declarations only (the kubelet's conditions, the two rule types, a monitor's default
condition), so this tests them where a user reads them: the system-log-monitor loader (`logmonitor_config.loads`)
refuses every kubelet-owned condition type, reads each rule's `type` as a `RuleType`, and gives a condition without
a message the empty one."""

from __future__ import annotations

import json

import pytest

from agent.npd.logmonitor_config import ConfigError, loads
from agent.npd.vocabulary import KUBELET_CONDITIONS, DefaultCondition, RuleType


def _monitor(conditions: list[dict[str, str]], rules: list[dict[str, str]] | None = None) -> str:
    return json.dumps({"plugin": "kmsg", "conditions": conditions, "rules": rules or []})


@pytest.mark.parametrize("kubelet_condition", sorted(KUBELET_CONDITIONS))
def test_a_monitor_declaring_a_kubelet_condition_is_refused_at_load(kubelet_condition: str) -> None:
    with pytest.raises(ConfigError) as caught:
        loads(_monitor([{"type": kubelet_condition, "reason": "Fine"}]), path="m.json")
    assert caught.value.errors == [
        f"m.json: conditions[0].type: {kubelet_condition!r} is owned by the kubelet; choose another condition type"]


def test_rule_types_are_read_as_rule_type_and_a_condition_without_message_has_the_empty_one() -> None:
    config = loads(_monitor(
        [{"type": "KernelDeadlock", "reason": "KernelHasNoDeadlock"}],
        [{"type": "temporary", "reason": "OOMKilling", "pattern": "Out of memory"},
         {"type": "permanent", "condition": "KernelDeadlock", "reason": "Hung", "pattern": "hung"}]), path="m.json")
    assert config.conditions == (DefaultCondition("KernelDeadlock", "KernelHasNoDeadlock", ""),)
    assert [r.type for r in config.rules] == [RuleType.TEMPORARY, RuleType.PERMANENT]
    assert RuleType("permanent") is RuleType.PERMANENT and str(RuleType.TEMPORARY) == "temporary"


def test_a_rule_type_outside_the_vocabulary_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        loads(_monitor([], [{"type": "forever", "reason": "X", "pattern": "x"}]), path="m.json")
    assert "m.json: rules[0].type: must be temporary or permanent, got 'forever'" in caught.value.errors
