"""pod_scope.py: which pods a strategy looks at (`namespaces` include or exclude, `labelSelector`), the same answer
whether asked of one pod or a node's list, read from a policy's strategy `args`; and the Ready nodes, in name order,
that descheduler runs its plugins over."""

from __future__ import annotations

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.fields import Namespaces
from remediator.policy.loader import parse_policy
from remediator.strategies import CATALOG
from remediator.strategies.pod_scope import PodScope, ready_nodes
from tests.unit.remediator.strategies.cluster import node, pod, snapshot

PODS = [pod("a", namespace="web", labels={"tier": "frontend"}), pod("b", namespace="web", labels={"tier": "db"}),
        pod("c", namespace="kube-system", labels={"tier": "frontend"}), pod("d", namespace="shop")]
FRONTEND = LabelSelector(match_labels=(("tier", "frontend"),))


def names(scope: PodScope) -> list[str]:
    selected = [p.name for p in scope.select(PODS)]
    assert selected == [p.name for p in PODS if scope.selects(p)], "select and selects disagree"
    return selected


def test_an_empty_scope_selects_every_pod() -> None:
    assert names(PodScope()) == ["a", "b", "c", "d"]
    assert PodScope().select(PODS) == PODS


@pytest.mark.parametrize(("scope", "selected"), [
    (PodScope(Namespaces(include=("web", "shop"))), ["a", "b", "d"]),
    (PodScope(Namespaces(exclude=("kube-system",))), ["a", "b", "d"]),
    (PodScope(label_selector=FRONTEND), ["a", "c"]),
    (PodScope(Namespaces(include=("web",)), FRONTEND), ["a"]),
    (PodScope(Namespaces(exclude=("web",)), FRONTEND), ["c"]),
    (PodScope(label_selector=LabelSelector(match_expressions=(SelectorRequirement("tier", "DoesNotExist"),))),
     ["d"]),
    (PodScope(Namespaces(include=("nowhere",))), []),
])
def test_a_scope_selects_the_pods_of_its_namespaces_matching_its_selector(scope: PodScope,
                                                                          selected: list[str]) -> None:
    assert names(scope) == selected


def test_a_scope_is_read_from_a_strategy_s_namespaces_and_label_selector() -> None:
    policy = parse_policy("""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
strategies:
- name: RemoveDuplicates
  args:
    namespaces: {include: [web, shop]}
    labelSelector: {matchLabels: {tier: frontend}}
- name: RemovePodsViolatingTopologySpreadConstraint
  args: {}
""", source="policy.yaml", catalog=CATALOG)
    first, second = (s.args.scope for s in policy.strategies)  # type: ignore[attr-defined]
    assert first == PodScope(Namespaces(include=("web", "shop")), FRONTEND)
    assert second == PodScope()


def test_ready_nodes_are_the_ready_ones_cordoned_included_in_name_order() -> None:
    s = snapshot([node("n3"), node("n1", unschedulable=True), node("n2", ready=False), node("n0")], [])
    assert [n.name for n in ready_nodes(s)] == ["n0", "n1", "n3"]


def test_a_scope_with_both_include_and_exclude_is_refused() -> None:
    with pytest.raises(ConfigError, match="include and exclude are mutually exclusive"):
        parse_policy("""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
strategies:
- name: RemoveDuplicates
  args:
    namespaces: {include: [web], exclude: [shop]}
""", source="policy.yaml", catalog=CATALOG)
