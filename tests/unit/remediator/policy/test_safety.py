"""Settings that would turn nodemedic against the cluster: other components' taints, rules matching every healthy
node, and the risks a policy takes only when `safety.acknowledge` names them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import convert_policy, parse_policy
from remediator.policy.safety import RISKS
from remediator.strategies import CATALOG
from tests.unit.fuzz.strategies import FUZZ

HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"
OWNED_KEYS = ["node.kubernetes.io/out-of-service", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
              "node.kubernetes.io/unschedulable", "node.kubernetes.io/network-unavailable",
              "node.kubernetes.io/memory-pressure", "node.kubernetes.io/disk-pressure",
              "node.kubernetes.io/pid-pressure", "node.cloudprovider.kubernetes.io/uninitialized",
              "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler", "karpenter.sh/disrupted",
              "node-role.kubernetes.io/control-plane", "example.kubernetes.io/x", "x.k8s.io/y"]


def _errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    return caught.value.errors


@pytest.mark.parametrize("key", OWNED_KEYS)
def test_a_rule_may_not_write_a_taint_kubernetes_or_an_autoscaler_owns(key: str) -> None:
    errors = _errors(HEADER + f"rules:\n- condition: {{type: X}}\n  taint: {{key: {key}}}\n")
    assert len(errors) == 1
    assert errors[0].startswith(f"p.yaml:5: rules[0].taint.key: taint key '{key}' is not nodemedic's: ")


@pytest.mark.parametrize("key", OWNED_KEYS)
def test_included_taints_may_not_drain_for_a_taint_another_component_owns(key: str) -> None:
    text = HEADER + f"strategies:\n- name: RemovePodsViolatingNodeTaints\n  args: {{includedTaints: ['{key}=v']}}\n"
    (error,) = _errors(text)
    assert error.startswith(f"p.yaml:5: strategies[0].args.includedTaints[0]: taint key '{key}' is not nodemedic's")
    assert error.endswith("including it would evict from every node its owner taints")


def test_excluding_another_components_taint_only_narrows_evictions_and_is_accepted() -> None:
    text = HEADER + ("strategies:\n- name: RemovePodsViolatingNodeTaints\n"
                     "  args: {excludedTaints: [node.kubernetes.io/unschedulable]}\n")
    assert parse_policy(text, source="p.yaml", catalog=CATALOG).strategies[0].args.excluded_taints == (  # type: ignore[attr-defined]
        "node.kubernetes.io/unschedulable",)


_DOMAIN = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
_NAME = st.from_regex(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,20}[A-Za-z0-9])?", fullmatch=True)


@FUZZ
@given(sub=st.lists(_DOMAIN, max_size=2), domain=st.sampled_from(["kubernetes.io", "k8s.io", "karpenter.sh"]),
       name=_NAME)
def test_every_key_under_a_reserved_prefix_is_refused(sub: list[str], domain: str, name: str) -> None:
    key = ".".join([*sub, domain]) + "/" + name
    errors = _errors(HEADER + f"rules:\n- condition: {{type: X}}\n  taint: {{key: '{key}'}}\n")
    assert [e.split(": taint key ")[0] for e in errors] == ["p.yaml:5: rules[0].taint.key"]


@pytest.mark.parametrize(("condition", "status"), [("Ready", '"True"'), ("Ready", None),
                                                   ("MemoryPressure", '"False"'), ("DiskPressure", '"False"'),
                                                   ("PIDPressure", '"False"'), ("NetworkUnavailable", '"False"')])
def test_a_rule_on_a_kubelet_condition_in_its_healthy_state_is_refused(condition: str, status: str | None) -> None:
    given_status = f", status: {status}" if status else ""
    (error,) = _errors(HEADER + f"rules:\n- condition: {{type: {condition}{given_status}}}\n"
                                "  taint: {key: nodemedic.io/x}\n")
    assert error.startswith(f"p.yaml:4: rules[0].condition.status: {condition}=")
    assert "would taint them all" in error


@pytest.mark.parametrize(("condition", "status"), [("Ready", "False"), ("Ready", "Unknown"),
                                                   ("MemoryPressure", "True"), ("NetworkUnavailable", "True")])
def test_a_rule_on_a_kubelet_condition_in_an_unhealthy_state_is_accepted(condition: str, status: str) -> None:
    text = HEADER + (f"rules:\n- condition: {{type: {condition}, status: '{status}'}}\n"
                     "  taint: {key: nodemedic.io/x}\n")
    assert parse_policy(text, source="p.yaml", catalog=CATALOG).rules[0].condition_status == status


RISKY = {
    "unlimited-breaker": ("safety:\n  maxTaintedNodes: null\n  maxTaintedNodesPercent: null\n",
                          "p.yaml:5: safety.maxTaintedNodesPercent: "),
    "unlimited-breaker (100%)": ("safety:\n  maxTaintedNodes: null\n  maxTaintedNodesPercent: 100\n",
                                 "p.yaml:5: safety.maxTaintedNodesPercent: "),
    "unlimited-evictions": ("limits:\n  maxNoOfPodsToEvictPerNode: null\n  maxNoOfPodsToEvictTotal: null\n",
                            "p.yaml:5: limits.maxNoOfPodsToEvictTotal: "),
    "evict-daemonset-pods": ("evictor:\n  evictDaemonSetPods: true\n", "p.yaml:4: evictor.evictDaemonSetPods: "),
    "evict-system-critical-pods": ("evictor:\n  evictSystemCriticalPods: true\n",
                                   "p.yaml:4: evictor.evictSystemCriticalPods: "),
}


@pytest.mark.parametrize(("section", "where"), RISKY.values(), ids=list(RISKY))
def test_a_risky_setting_is_refused_unless_acknowledged_by_name(section: str, where: str, request: pytest.FixtureRequest
                                                               ) -> None:
    risk = request.node.callspec.id.split(" ")[0]
    (error,) = _errors(HEADER + section)
    assert error.startswith(where) and error.endswith(f"add {risk} to safety.acknowledge")
    acknowledged = section + ("" if section.startswith("safety:") else "safety:\n") + f"  acknowledge: [{risk}]\n"
    assert parse_policy(HEADER + acknowledged, source="p.yaml", catalog=CATALOG).safety.acknowledge == (risk,)


def test_a_breaker_limited_by_count_or_percent_alone_needs_no_acknowledgement() -> None:
    for safety in ("{maxTaintedNodes: null, maxTaintedNodesPercent: 99}", "{maxTaintedNodes: 50, "
                                                                          "maxTaintedNodesPercent: null}"):
        assert parse_policy(HEADER + f"safety: {safety}\n", source="p.yaml", catalog=CATALOG).safety.acknowledge == ()


def test_an_acknowledgement_of_a_risk_not_taken_or_unknown_is_refused() -> None:
    assert _errors(HEADER + "safety:\n  acknowledge: [unlimited-breaker, everything]\n") == [
        f"p.yaml:4: safety.acknowledge[1]: unknown risk 'everything'; known: {', '.join(RISKS)}",
        "p.yaml:4: safety.acknowledge: acknowledges unlimited-breaker, which this policy does not take; remove it"]


def test_a_descheduler_policy_takes_its_evictor_flags_without_acknowledgement_and_converts_acknowledged() -> None:
    text = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: p
  pluginConfig:
  - name: DefaultEvictor
    args: {evictDaemonSetPods: true, evictSystemCriticalPods: true}
  - name: RemovePodsViolatingNodeTaints
  plugins:
    deschedule: {enabled: [RemovePodsViolatingNodeTaints]}
"""
    evictor = parse_policy(text, source="d.yaml", catalog=CATALOG).evictor
    assert evictor.evict_daemonset_pods and evictor.evict_system_critical_pods
    converted = parse_policy(convert_policy(text, source="d.yaml", catalog=CATALOG), source="c.yaml", catalog=CATALOG)
    assert converted.safety.acknowledge == ("evict-daemonset-pods", "evict-system-critical-pods")
