"""`nodeSelector`: descheduler's string form of a label selector, parsed and validated with file and line."""

from __future__ import annotations

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.loader import parse_policy
from remediator.policy.node_selector import parse_selector
from remediator.scheduling.selectors import matches_labels
from remediator.strategies import CATALOG


@pytest.mark.parametrize(("text", "expected"), [
    ("pool=a", LabelSelector((("pool", "a"),))),
    ("pool==a, zone = b", LabelSelector((("pool", "a"), ("zone", "b")))),
    ("node-role.kubernetes.io/worker=", LabelSelector((("node-role.kubernetes.io/worker", ""),))),
    ("pool!=a", LabelSelector((), (SelectorRequirement("pool", "NotIn", ("a",)),))),
    ("pool in (b, a,b)", LabelSelector((), (SelectorRequirement("pool", "In", ("a", "b")),))),
    ("pool notin (a),gpu,!spot", LabelSelector((), (SelectorRequirement("pool", "NotIn", ("a",)),
                                                   SelectorRequirement("gpu", "Exists", ()),
                                                   SelectorRequirement("spot", "DoesNotExist", ())))),
])
def test_the_string_forms_kubectl_and_descheduler_parse(text: str, expected: LabelSelector) -> None:
    assert parse_selector(text) == expected


@pytest.mark.parametrize(("labels", "selected"), [
    ({"pool": "a", "gpu": "1"}, True),
    ({"pool": "a"}, False),  # gpu must exist
    ({"pool": "b", "gpu": "1"}, False),
    ({"pool": "a", "gpu": "1", "spot": "true"}, False),
])
def test_a_parsed_selector_selects_as_kubernetes_does(labels: dict[str, str], selected: bool) -> None:
    assert matches_labels(parse_selector("pool in (a), gpu, !spot"), labels) is selected


@pytest.mark.parametrize(("text", "problem"), [
    ("", "empty: leave nodeSelector out"),
    ("pool in (a,b", "unbalanced '('"),
    ("pool=a)", "unbalanced ')'"),
    ("pool=a,,zone=b", "an empty requirement between commas"),
    ("pool=a,", "an empty requirement between commas"),
    ("pool=a b", "cannot parse 'pool=a b'"),
    ("pool in a", "cannot parse 'pool in a'"),
    ("-pool=a", "'-pool=a': invalid key '-pool'"),
    ("pool=-a", "'pool=-a': invalid value '-a'"),
])
def test_what_does_not_parse_is_named(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match="^" + problem.replace("(", r"\(").replace(")", r"\)")):
        parse_selector(text)


def test_the_policy_field_reports_file_line_and_field() -> None:
    text = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nnodeSelector: 'pool in (a'\n"
    with pytest.raises(ConfigError) as e:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    assert e.value.errors[0].startswith("p.yaml:3: nodeSelector: unbalanced '(' (a label selector such as")
    with pytest.raises(ConfigError) as e:
        parse_policy(text.replace("'pool in (a'", "{pool: a}"), source="p.yaml", catalog=CATALOG)
    assert e.value.errors[0].startswith("p.yaml:3: nodeSelector: must be a label selector string")


def test_a_deschedulerpolicy_nodeselector_is_read_as_the_same_field() -> None:
    policy = parse_policy('apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nnodeSelector: "pool=a"\n'
                          "profiles: []\n", source="d.yaml", catalog=CATALOG)
    assert policy.node_selector == LabelSelector((("pool", "a"),))
    v1 = parse_policy('apiVersion: descheduler/v1alpha1\nkind: DeschedulerPolicy\nnodeSelector: "pool=a"\n'
                      "strategies: {}\n", source="d1.yaml", catalog=CATALOG)
    assert v1.node_selector == policy.node_selector
