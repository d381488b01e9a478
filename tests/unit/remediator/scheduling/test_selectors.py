"""Label selectors, node affinity terms and nodeSelector, evaluated as the API server and scheduler do."""

from __future__ import annotations

import pytest

from remediator.model.records import LabelSelector, NodeRecord, NodeSelectorTerm, PodRecord, SelectorRequirement
from remediator.scheduling.selectors import matches_labels, node_matches_terms, pod_fits_node_selection

LABELS = {"app": "web", "tier": "front", "zone": "a"}


def req(key: str, operator: str, *values: str) -> SelectorRequirement:
    return SelectorRequirement(key=key, operator=operator, values=values)


def node(name: str = "n1", **labels: str) -> NodeRecord:
    return NodeRecord(name=name, labels=dict(labels))


def term(*expressions: SelectorRequirement, fields: tuple[SelectorRequirement, ...] = ()) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=expressions, match_fields=fields)


@pytest.mark.parametrize(("selector", "expected"), [
    (LabelSelector(), True),
    (LabelSelector(match_labels=(("app", "web"),)), True),
    (LabelSelector(match_labels=(("app", "web"), ("tier", "back"))), False),
    (LabelSelector(match_labels=(("missing", "x"),)), False),
    (LabelSelector(match_expressions=(req("app", "In", "web", "api"),)), True),
    (LabelSelector(match_expressions=(req("app", "In", "api"),)), False),
    (LabelSelector(match_expressions=(req("missing", "In", "web"),)), False),
    (LabelSelector(match_expressions=(req("app", "NotIn", "api"),)), True),
    (LabelSelector(match_expressions=(req("app", "NotIn", "web"),)), False),
    (LabelSelector(match_expressions=(req("missing", "NotIn", "web"),)), True),
    (LabelSelector(match_expressions=(req("app", "Exists"),)), True),
    (LabelSelector(match_expressions=(req("missing", "Exists"),)), False),
    (LabelSelector(match_expressions=(req("missing", "DoesNotExist"),)), True),
    (LabelSelector(match_expressions=(req("app", "DoesNotExist"),)), False),
    (LabelSelector(match_labels=(("app", "web"),), match_expressions=(req("zone", "In", "b"),)), False),
    (LabelSelector(match_expressions=(req("zone", "Gt", "1"),)), False),
    (LabelSelector(match_expressions=(req("app", "Like", "web"),)), False),
], ids=["empty-matches-all", "match-labels-equal", "match-labels-one-differs", "match-labels-missing-key",
        "in-listed", "in-not-listed", "in-missing-key", "notin-not-listed", "notin-listed", "notin-missing-key",
        "exists-present", "exists-missing", "doesnotexist-missing", "doesnotexist-present",
        "labels-and-expressions-are-anded", "gt-is-not-a-label-selector-operator", "unknown-operator"])
def test_a_label_selector_matches_as_metav1_does(selector: LabelSelector, expected: bool) -> None:
    assert matches_labels(selector, LABELS) is expected


@pytest.mark.parametrize(("requirement", "labels", "expected"), [
    (req("zone", "In", "a", "b"), {"zone": "a"}, True),
    (req("zone", "In", "b"), {"zone": "a"}, False),
    (req("zone", "NotIn", "b"), {"zone": "a"}, True),
    (req("zone", "NotIn", "a"), {"zone": "a"}, False),
    (req("zone", "NotIn", "a"), {}, True),
    (req("gpu", "Exists"), {"gpu": ""}, True),
    (req("gpu", "Exists"), {}, False),
    (req("gpu", "DoesNotExist"), {}, True),
    (req("gpu", "DoesNotExist"), {"gpu": "t4"}, False),
    (req("cores", "Gt", "8"), {"cores": "16"}, True),
    (req("cores", "Gt", "16"), {"cores": "16"}, False),
    (req("cores", "Lt", "32"), {"cores": "16"}, True),
    (req("cores", "Lt", "16"), {"cores": "16"}, False),
    (req("cores", "Gt", "-1"), {"cores": "0"}, True),
    (req("cores", "Gt", "8"), {"cores": "sixteen"}, False),
    (req("cores", "Gt", "eight"), {"cores": "16"}, False),
    (req("cores", "Lt", "8.5"), {"cores": "4"}, False),
    (req("cores", "Gt", "8"), {}, False),
    (req("cores", "Gt", "1", "2"), {"cores": "16"}, False),
    (req("cores", "Gt"), {"cores": "16"}, False),
    (req("cores", "Gt", "1"), {"cores": str(2**63)}, False),
    (req("zone", "Near", "a"), {"zone": "a"}, False),
], ids=["in", "in-miss", "notin", "notin-miss", "notin-absent-label", "exists", "exists-absent",
        "doesnotexist", "doesnotexist-present", "gt", "gt-equal-is-not-greater", "lt", "lt-equal-is-not-less",
        "gt-negative-bound", "gt-non-integer-label", "gt-non-integer-value", "lt-decimal-value",
        "gt-absent-label", "gt-two-values", "gt-no-value", "gt-label-beyond-int64", "unknown-operator"])
def test_a_node_affinity_requirement_matches_node_labels(requirement: SelectorRequirement, labels: dict[str, str],
                                                         expected: bool) -> None:
    assert node_matches_terms([term(requirement)], node(**labels)) is expected


@pytest.mark.parametrize(("terms", "expected"), [
    ((), True),
    ((term(),), False),
    ((term(req("zone", "In", "a"), req("disk", "In", "ssd")),), True),
    ((term(req("zone", "In", "a"), req("disk", "In", "hdd")),), False),
    ((term(req("zone", "In", "b")), term(req("disk", "In", "ssd"))), True),
    ((term(req("zone", "In", "b")), term(req("disk", "In", "hdd"))), False),
    ((term(), term(req("zone", "Exists"))), True),
    ((term(fields=(req("metadata.name", "In", "n1"),)),), True),
    ((term(fields=(req("metadata.name", "In", "n2"),)),), False),
    ((term(fields=(req("metadata.name", "NotIn", "n2"),)),), True),
    ((term(fields=(req("metadata.name", "NotIn", "n1"),)),), False),
    ((term(fields=(req("metadata.uid", "NotIn", "x"),)),), False),
    ((term(fields=(req("metadata.name", "Exists"),)),), False),
    ((term(req("zone", "In", "a"), fields=(req("metadata.name", "In", "n2"),)),), False),
], ids=["no-terms-no-constraint", "empty-term-matches-nothing", "requirements-anded-all-match",
        "requirements-anded-one-fails", "terms-ored-second-matches", "terms-ored-none-match",
        "empty-term-does-not-spoil-others", "field-name-in", "field-name-in-other", "field-name-notin",
        "field-name-notin-self", "field-other-than-name", "field-exists-not-allowed",
        "expressions-and-fields-anded"])
def test_node_selector_terms_are_ored_and_their_requirements_anded(terms: tuple[NodeSelectorTerm, ...],
                                                                   expected: bool) -> None:
    assert node_matches_terms(terms, node("n1", zone="a", disk="ssd")) is expected


@pytest.mark.parametrize(("node_selector", "affinity", "expected"), [
    ({}, (), True),
    ({"zone": "a"}, (), True),
    ({"zone": "a", "disk": "hdd"}, (), False),
    ({"pool": "gpu"}, (), False),
    ({"zone": "a"}, (term(req("disk", "In", "ssd")),), True),
    ({"zone": "a"}, (term(req("disk", "In", "hdd")),), False),
    ({"zone": "b"}, (term(req("disk", "In", "ssd")),), False),
], ids=["nothing-required", "selector-matches", "selector-one-pair-differs", "selector-key-missing",
        "selector-and-affinity-match", "affinity-fails", "selector-fails"])
def test_a_pod_fits_a_node_only_when_selector_and_affinity_both_match(node_selector: dict[str, str],
                                                                      affinity: tuple[NodeSelectorTerm, ...],
                                                                      expected: bool) -> None:
    pod = PodRecord(namespace="ns", name="p", uid="u", node_selector=node_selector, required_node_affinity=affinity)
    assert pod_fits_node_selection(pod, node("n1", zone="a", disk="ssd")) is expected
