"""A pod's placement constraints from its spec: node affinity, required pod (anti-)affinity and topology spread, as its
record keeps them (model/records.py), and the label selectors they and PDBs hold. What replicas have in common is
one shared object (sharing.py)."""

from __future__ import annotations

from typing import Any, NamedTuple

from remediator.model.records import (
    LabelSelector,
    NodeSelectorTerm,
    PodAffinityTerm,
    PreferredNodeTerm,
    SelectorRequirement,
    SpreadConstraint,
)
from remediator.state.json_values import as_dict, as_list, str_map
from remediator.state.sharing import Shared

_NODE_TERMS = Shared[tuple[NodeSelectorTerm, ...]]()
_PREFERRED = Shared[tuple[PreferredNodeTerm, ...]]()
_POD_TERMS = Shared[tuple[PodAffinityTerm, ...]]()
_SPREAD = Shared[tuple[SpreadConstraint, ...]]()


def _requirements(raw: Any) -> tuple[SelectorRequirement, ...]:
    return tuple(
        SelectorRequirement(key=str(r.get("key", "")), operator=str(r.get("operator", "")),
                            values=tuple(str(v) for v in as_list(r.get("values"))))
        for r in map(as_dict, as_list(raw))
    )


def label_selector(raw: Any) -> LabelSelector | None:
    if not isinstance(raw, dict):
        return None
    return LabelSelector(
        match_labels=tuple(sorted(str_map(raw.get("matchLabels")).items())),
        match_expressions=_requirements(raw.get("matchExpressions")),
    )


def _pod_affinity_terms(spec: dict[str, Any], kind: str, namespace: str) -> tuple[PodAffinityTerm, ...]:
    """The required terms of `podAffinity` or `podAntiAffinity`."""
    raw = as_dict(as_dict(spec.get("affinity")).get(kind)).get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = []
    for t in map(as_dict, as_list(raw)):
        key = t.get("topologyKey")
        if not isinstance(key, str) or not key:
            continue  # the API server requires one; a term without it could not be evaluated
        listed = tuple(str(n) for n in as_list(t.get("namespaces")) if isinstance(n, str))
        has_selector = isinstance(t.get("namespaceSelector"), dict)
        terms.append(PodAffinityTerm(
            selector=label_selector(t.get("labelSelector")),
            namespaces=listed or (() if has_selector else (namespace,)),
            any_namespace=has_selector,
            topology_key=key,
        ))
    return tuple(terms)


def _spread(spec: dict[str, Any], labels: dict[str, str], when: str) -> tuple[SpreadConstraint, ...]:
    """The topologySpreadConstraints with `whenUnsatisfiable: <when>` (DoNotSchedule or ScheduleAnyway)."""
    out = []
    for c in map(as_dict, as_list(spec.get("topologySpreadConstraints"))):
        skew, key = c.get("maxSkew"), c.get("topologyKey")
        if c.get("whenUnsatisfiable", "DoNotSchedule") != when or not isinstance(key, str) or not key:
            continue
        if not isinstance(skew, int) or isinstance(skew, bool) or skew < 1:
            continue  # the API server refuses these
        selector = label_selector(c.get("labelSelector"))
        keys = [k for k in as_list(c.get("matchLabelKeys")) if isinstance(k, str) and k in labels]
        if selector is not None and keys:  # matchLabelKeys: "key In (the pod's value)" ANDed to the selector
            selector = LabelSelector(selector.match_labels, selector.match_expressions + tuple(
                SelectorRequirement(k, "In", (labels[k],)) for k in keys))
        domains = c.get("minDomains")
        out.append(SpreadConstraint(
            max_skew=skew, topology_key=key, selector=selector,
            min_domains=domains if isinstance(domains, int) and not isinstance(domains, bool) and domains > 0 else 1,
            honor_node_affinity=c.get("nodeAffinityPolicy", "Honor") != "Ignore",
            honor_node_taints=c.get("nodeTaintsPolicy", "Ignore") == "Honor",
        ))
    return tuple(out)


def _node_term(raw: dict[str, Any]) -> NodeSelectorTerm:
    return NodeSelectorTerm(match_expressions=_requirements(raw.get("matchExpressions")),
                            match_fields=_requirements(raw.get("matchFields")))


def _preferred_node_terms(node_affinity: dict[str, Any]) -> tuple[PreferredNodeTerm, ...]:
    out = []
    for t in map(as_dict, as_list(node_affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weight = t.get("weight")
        if isinstance(weight, int) and not isinstance(weight, bool) and weight > 0:
            out.append(PreferredNodeTerm(weight, _node_term(as_dict(t.get("preference")))))
    return tuple(out)


class Constraints(NamedTuple):
    """A pod's placement constraints as its record keeps them."""

    required_node: tuple[NodeSelectorTerm, ...]
    preferred_node: tuple[PreferredNodeTerm, ...]
    anti_affinity: tuple[PodAffinityTerm, ...]
    affinity: tuple[PodAffinityTerm, ...]
    hard_spread: tuple[SpreadConstraint, ...]
    soft_spread: tuple[SpreadConstraint, ...]


NO_CONSTRAINTS = Constraints((), (), (), (), (), ())


def pod_constraints(spec: dict[str, Any], labels: dict[str, str], namespace: str) -> Constraints:
    """Most pods have no affinity and no spread constraint: nothing is parsed for them (six parses a pod were a tenth
    of building 15,000 records)."""
    affinity = as_dict(spec.get("affinity"))
    if not affinity and not spec.get("topologySpreadConstraints"):
        return NO_CONSTRAINTS
    node_affinity = as_dict(affinity.get("nodeAffinity"))
    required = as_list(as_dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
                       .get("nodeSelectorTerms"))
    return Constraints(
        required_node=_NODE_TERMS(tuple(_node_term(t) for t in map(as_dict, required))),
        preferred_node=_PREFERRED(_preferred_node_terms(node_affinity)),
        anti_affinity=_POD_TERMS(_pod_affinity_terms(spec, "podAntiAffinity", namespace)),
        affinity=_POD_TERMS(_pod_affinity_terms(spec, "podAffinity", namespace)),
        hard_spread=_SPREAD(_spread(spec, labels, "DoNotSchedule")),
        soft_spread=_SPREAD(_spread(spec, labels, "ScheduleAnyway")),
    )
