"""Label selectors and required node affinity, evaluated the way the API server and scheduler do.

Malformed requirements (an unknown operator, Gt/Lt with a value that is not one integer, a field other than
`metadata.name`) never raise: the API server would have rejected them, so here they simply match nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from remediator.model.records import LabelSelector, NodeRecord, NodeSelectorTerm, PodRecord, SelectorRequirement

_INT64 = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 64) accepts, range checked below
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
NODE_NAME_FIELD = "metadata.name"


def _int64(text: str) -> int | None:
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def _set_based(req: SelectorRequirement, labels: Mapping[str, str]) -> bool | None:
    """In/NotIn/Exists/DoesNotExist, shared by label selectors and node affinity; None for other operators."""
    present = req.key in labels
    if req.operator == "In":
        return present and labels[req.key] in req.members
    if req.operator == "NotIn":
        # A missing label is "not in" any set: Kubernetes matches NotIn on absent keys.
        return not present or labels[req.key] not in req.members
    if req.operator == "Exists":
        return present
    if req.operator == "DoesNotExist":
        return not present
    return None


def matches_labels(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """metav1.LabelSelector: matchLabels and matchExpressions all ANDed; an empty selector matches everything."""
    for key, value in selector.match_labels:
        if labels.get(key) != value:
            return False
    # Gt/Lt are not valid in a metav1.LabelSelector, so `_set_based` returning None counts as no match.
    return all(_set_based(req, labels) is True for req in selector.match_expressions)


def _node_label_requirement(req: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    matched = _set_based(req, labels)
    if matched is not None:
        return matched
    if req.operator not in ("Gt", "Lt") or len(req.values) != 1 or req.key not in labels:
        return False
    label, bound = _int64(labels[req.key]), _int64(req.values[0])
    if label is None or bound is None:
        return False
    return label > bound if req.operator == "Gt" else label < bound


def _node_field_requirement(req: SelectorRequirement, node: NodeRecord) -> bool:
    # Kubernetes defines only metadata.name for matchFields, and only with In/NotIn.
    if req.key != NODE_NAME_FIELD or req.operator not in ("In", "NotIn"):
        return False
    return _set_based(req, {NODE_NAME_FIELD: node.name}) is True


def _term_matches(term: NodeSelectorTerm, node: NodeRecord) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False  # an empty term selects no node, as the scheduler treats it
    return all(_node_label_requirement(r, node.labels) for r in term.match_expressions) and all(
        _node_field_requirement(r, node) for r in term.match_fields
    )


def node_matches_terms(terms: Sequence[NodeSelectorTerm], node: NodeRecord) -> bool:
    """requiredDuringSchedulingIgnoredDuringExecution: terms ORed, requirements ANDed; no terms = no constraint."""
    if not terms:
        return True
    return any(_term_matches(term, node) for term in terms)


def pod_fits_node_selection(pod: PodRecord, node: NodeRecord) -> bool:
    """The pod's nodeSelector (every pair must match) and its required node affinity both accept `node`."""
    labels = node.labels
    if any(labels.get(key) != value for key, value in pod.node_selector.items()):
        return False
    return node_matches_terms(pod.required_node_affinity, node)
