"""A pod's placement constraints from its spec: nothing parsed (one shared empty value) for the pods that have none,
replicas' equal constraints held once, odd shapes read as empty, and the label selectors as the API defines them."""

from __future__ import annotations

from typing import Any

import pytest

from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.state.pod_constraints import NO_CONSTRAINTS, label_selector, pod_constraints

SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "web"}}, "matchLabelKeys": ["pod-template-hash"]}
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "web"}}}]}}


@pytest.mark.parametrize("spec", [{}, {"affinity": {}}, {"topologySpreadConstraints": []},
                                  {"affinity": None, "topologySpreadConstraints": None}],
                         ids=["none", "empty-affinity", "empty-spread", "nulls"])
def test_a_pod_without_constraints_gets_the_one_empty_value(spec: dict[str, Any]) -> None:
    assert pod_constraints(spec, {}, "ns") is NO_CONSTRAINTS


def test_replicas_with_equal_constraints_hold_one_object_of_each() -> None:
    labels = {"app": "web", "pod-template-hash": "abc"}
    first = pod_constraints({"affinity": ANTI, "topologySpreadConstraints": [SPREAD]}, labels, "ns")
    second = pod_constraints({"affinity": ANTI, "topologySpreadConstraints": [SPREAD]}, dict(labels), "ns")
    assert first == second and first.anti_affinity is second.anti_affinity and first.hard_spread is second.hard_spread
    assert [t.namespaces for t in first.anti_affinity] == [("ns",)]
    (spread,) = first.hard_spread
    assert spread.selector is not None
    # matchLabelKeys: the pod's own value of each key, ANDed to the selector
    assert spread.selector.match_expressions == (SelectorRequirement("pod-template-hash", "In", ("abc",)),)
    assert first.soft_spread == () and first.required_node == () and first.affinity == ()


@pytest.mark.parametrize("spec", [
    {"affinity": ["not", "an", "object"]},
    {"affinity": {"nodeAffinity": "x", "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}},
    {"topologySpreadConstraints": "zone"},
    {"topologySpreadConstraints": [{"maxSkew": True, "topologyKey": "zone"}, {"maxSkew": 1}, 7]},
], ids=["affinity-list", "wrong-kinds", "spread-string", "bad-entries"])
def test_constraints_of_an_odd_shape_read_as_none(spec: dict[str, Any]) -> None:
    assert pod_constraints(spec, {}, "ns") == NO_CONSTRAINTS


def test_label_selectors_as_the_api_defines_them() -> None:
    assert label_selector(None) is None  # no selector selects nothing
    assert label_selector({}) == LabelSelector((), ())  # an empty one selects everything
    assert label_selector({"matchLabels": {"b": 2, "a": "x"}, "matchExpressions": [
        {"key": "tier", "operator": "In", "values": ["web", 3]}]}) == LabelSelector(
        (("a", "x"), ("b", "2")), (SelectorRequirement("tier", "In", ("web", "3")),))
