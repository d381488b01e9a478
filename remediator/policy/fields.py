"""Readers of the field shapes several sections share: namespaces, label selectors, per-resource percentages,
descheduler's evictableNamespaces, and a back-off pair."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nodemedic_common.durations import format_duration
from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.reader import Reader, Section, is_null
from remediator.policy.syntax import label_value_problem, namespace_problem, qualified_name_problem

SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True)
class Namespaces:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # at most one of include/exclude is set


def read_namespaces(r: Reader, parent: Section) -> Namespaces:
    m = r.section(parent, "namespaces", ("include", "exclude"))
    include = r.strings(m, "include", namespace_problem) or ()
    exclude = r.strings(m, "exclude", namespace_problem) or ()
    if "include" in m.values and "exclude" in m.values:
        r.error(m.where(), m.path, "include and exclude are mutually exclusive; give one of them")
    return Namespaces(include=include, exclude=exclude)


def read_label_selector(r: Reader, parent: Section, key: str = "labelSelector") -> LabelSelector | None:
    """parent[key] as a metav1.LabelSelector (matchLabels, matchExpressions); None when absent or null."""
    node = parent.values.get(key)
    if node is None or is_null(node):
        return None
    m = r.mapping(node, parent.at(key), ("matchLabels", "matchExpressions"))
    labels = r.string_map(m, "matchLabels", qualified_name_problem, label_value_problem)
    expressions: list[SelectorRequirement] = []
    for item, path in r.sequence(m, "matchExpressions") or []:
        e = r.mapping(item, path, ("key", "operator", "values"))
        key = r.text(e, "key", required=True, check=qualified_name_problem)
        operator = r.text(e, "operator", required=True)
        values = r.strings(e, "values", label_value_problem) or ()
        if operator and operator not in SELECTOR_OPERATORS:
            r.error(e.values["operator"], e.at("operator"),
                    f"must be one of {', '.join(SELECTOR_OPERATORS)}, got {operator!r}")
        elif operator in ("In", "NotIn") and not values:
            r.error(e.line_node("values", "operator"), e.at("values"), f"{operator} needs at least one value")
        elif operator in ("Exists", "DoesNotExist") and values:
            r.error(e.values["values"], e.at("values"), f"{operator} takes no values")
        expressions.append(SelectorRequirement(key, operator, values))
    return LabelSelector(match_labels=labels, match_expressions=tuple(expressions))


def read_resource_percentages(r: Reader, m: Section, key: str) -> tuple[tuple[str, float], ...]:
    """thresholds/targetThresholds: resource name -> percent of allocatable (0-100)."""
    section = r.section(m, key, None, required=True)
    if section.present and key in m.values and not section.values and not is_null(m.values[key]):
        r.error(m.values[key], m.at(key), "must name at least one resource")
    out: list[tuple[str, float]] = []
    for name in section.values:
        problem = None if name in ("cpu", "memory", "pods") else qualified_name_problem(name)
        if problem is not None:
            r.error(section.key_nodes[name], section.at(name),
                    f"unknown resource {name!r}: use cpu, memory, pods or an extended resource (e.g. nvidia.com/gpu)")
            continue
        value = r.percent(section, name, None)
        if value is None:
            if is_null(section.values[name]):
                r.error(section.values[name], section.at(name), "must be a number from 0 to 100, got null")
            continue
        out.append((name, value))
    return tuple(sorted(out))


def read_evictable_namespaces(r: Reader, m: Section) -> tuple[str, ...]:
    section = r.section(m, "evictableNamespaces", ("exclude", "include"))
    if "include" in section.values:
        r.error(section.key_nodes["include"], section.at("include"),
                "only exclude is supported (as in descheduler): the utilization strategies count every namespace")
    return r.strings(section, "exclude", namespace_problem) or ()


# A retry sooner than this is a busy loop against the API server (an eviction a PDB refuses) or a sink.
MIN_BACKOFF = (dt.timedelta(milliseconds=100), "a shorter first retry is a busy loop against the server")


def check_backoff(r: Reader, m: Section, initial: dt.timedelta, maximum: dt.timedelta) -> None:
    if maximum < initial:
        key = "maxBackoff" if "maxBackoff" in m.values else "initialBackoff"
        r.error(m.line_node(key), m.at(key), f"maxBackoff ({format_duration(maximum)}) must not be below "
                                             f"initialBackoff ({format_duration(initial)})")
