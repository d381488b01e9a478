"""Load the remediation policy YAML into `policy.Policy`, reporting every mistake as FILE:LINE: field.path: message.

The file is composed into a YAML node tree instead of loaded into dicts: each value keeps its line, duplicate keys
stay visible (a dict keeps only the last one), and a bare `true` (a YAML boolean) stays distinct from "True".
Every section is read to the end even after an error, so one `validate` run lists every problem in the file.
Defaults come from the dataclasses in `policy.py`; this module only reads and checks.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import yaml

from remediator.model import Effect, LabelSelector, SelectorRequirement, Taint
from remediator.policy import (
    AutoscalerSettings,
    EvictionSettings,
    EvictorArgs,
    HighNodeUtilizationArgs,
    Limits,
    LowNodeUtilizationArgs,
    Namespaces,
    Notifications,
    Policy,
    RemovePodsViolatingNodeTaintsArgs,
    Safety,
    SinkConfig,
    StrategyConfig,
    TaintRule,
)

API_VERSION = "nodemedic.io/v1alpha1"
KIND = "RemediationPolicy"
CONDITION_STATUSES = ("True", "False", "Unknown")
SINK_TYPES = ("webhook", "slack", "alertmanager")
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
DOCUMENT = "<document>"  # the field path of errors about the file as a whole

_TOP_KEYS = ("apiVersion", "kind", "rules", "evictor", "strategies", "limits", "eviction", "safety", "notifications",
             "autoscaler")
_AUTOSCALER_KEYS = ("addsNodes", "consolidates")
_RULE_KEYS = ("name", "condition", "taint", "allowNoExecute", "evict", "recoverAfter")
_CONDITION_KEYS = ("type", "status", "for")
_TAINT_KEYS = ("key", "value", "effect")
_EVICTOR_KEYS = ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "evictFailedBarePods",
                 "ignorePvcPods", "priorityThreshold", "labelSelector", "namespaces", "minReplicas", "minPodAge",
                 "nodeFit", "honorSafeToEvict")
_STRATEGY_KEYS = ("name", "args")
_TAINTS_ARGS_KEYS = ("namespaces", "labelSelector", "includePreferNoSchedule", "excludedTaints", "includedTaints")
_LNU_ARGS_KEYS = ("thresholds", "targetThresholds", "useDeviationThresholds", "numberOfNodes", "evictableNamespaces",
                  "evictionLimits", "metricsUtilization")
_HNU_ARGS_KEYS = ("thresholds", "numberOfNodes", "evictableNamespaces", "evictionModes", "taintDrainedNodes",
                  "maxConsolidatingNodes", "consolidationTimeout")
EVICTION_MODES = ("OnlyThresholdingResources",)
_LIMITS_KEYS = ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal",
                "ownerCooldown")
_EVICTION_KEYS = ("retryDeadline", "initialBackoff", "maxBackoff", "gracePeriodSeconds")
_SAFETY_KEYS = ("maxTaintedNodes", "maxTaintedNodesPercent", "minTaintedNodes", "paused", "excludeLabel")
_NOTIFICATIONS_KEYS = ("queueSize", "sinks")
_SINK_KEYS = ("type", "name", "url", "timeout", "maxAttempts", "initialBackoff", "maxBackoff", "headers")

_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|h|m|s)")
_DURATION_UNITS = {"h": dt.timedelta(hours=1), "m": dt.timedelta(minutes=1), "s": dt.timedelta(seconds=1),
                   "ms": dt.timedelta(milliseconds=1)}
_DURATION_HINT = "use a number with a unit h, m, s or ms (30s, 5m, 1h30m, 500ms) or a number of seconds"
_INT32 = (-(2**31), 2**31 - 1)


class PolicyError(Exception):
    """The policy is unusable; `errors` holds every problem found, each "FILE:LINE: field.path: message"."""

    def __init__(self, errors: Sequence[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)


# --- durations ----------------------------------------------------------------------------------------


def parse_duration(value: object) -> dt.timedelta:
    """"500ms", "30s", "5m", "1h30m" (Go-style, units h/m/s/ms) or a number of seconds; never negative."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a duration: {value!r}; {_DURATION_HINT}")
    try:
        if isinstance(value, str):
            result = _duration_text(value)
        elif isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"not a duration: {value!r}; {_DURATION_HINT}")
        else:
            result = dt.timedelta(seconds=value)
    except OverflowError:
        raise ValueError(f"duration {value!r} is too long") from None
    if result < dt.timedelta(0):
        raise ValueError(f"must not be negative, got {value!r}")
    return result


def _duration_text(text: str) -> dt.timedelta:
    body = text.strip()
    sign = -1 if body.startswith("-") else 1
    body = body.removeprefix("-").removeprefix("+")
    if body == "0":  # the one unit-less duration Go accepts
        return dt.timedelta(0)
    total, pos = dt.timedelta(0), 0
    while pos < len(body):
        part = _DURATION_PART.match(body, pos)
        if part is None:
            raise ValueError(f"not a duration: {text!r}; {_DURATION_HINT}")
        total += float(part.group(1)) * _DURATION_UNITS[part.group(2)]
        pos = part.end()
    if pos == 0:
        raise ValueError(f"not a duration: {text!r}; {_DURATION_HINT}")
    return sign * total


# --- syntax checks shared by several fields ---------------------------------------------------------------


def _qualified_name_problem(key: str) -> str | None:
    """Label and taint keys: an optional DNS-subdomain prefix and "/", then a name of up to 63 characters."""
    prefix, slash, name = key.rpartition("/")
    if slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"invalid key {key!r}: the prefix before '/' must be a lowercase DNS subdomain (e.g. nodemedic.io)"
    if len(name) > 63 or not _LABEL_NAME.fullmatch(name):
        return (f"invalid key {key!r}: the name must be 1-63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def _label_value_problem(value: str) -> str | None:
    if value and (len(value) > 63 or not _LABEL_NAME.fullmatch(value)):
        return (f"invalid value {value!r}: at most 63 characters of A-Z, a-z, 0-9, '-', '_', '.', "
                "starting and ending with a letter or digit")
    return None


def _namespace_problem(name: str) -> str | None:
    if len(name) > 63 or not _DNS_LABEL.fullmatch(name):
        return f"invalid namespace {name!r}: must be a lowercase DNS label"
    return None


def _taint_filter_problem(entry: str) -> str | None:
    """excludedTaints/includedTaints entries: "key" or "key=value"."""
    key, _, value = entry.partition("=")
    return _qualified_name_problem(key) or _label_value_problem(value)


def _rule_name_problem(name: str) -> str | None:
    # Rule names are joined with "," in plans, alerts and the owned-taints annotation, so they must not carry one.
    if not name or any(c == "," or c.isspace() for c in name):
        return f"invalid rule name {name!r}: must be non-empty, without spaces or commas"
    return None


def _url_problem(url: str) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as e:
        return f"invalid URL {url!r}: {e}"
    if parts.scheme not in ("http", "https") or not host:
        return f"invalid URL {url!r}: must be http:// or https:// with a host"
    return None


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key{hint}; valid keys: {', '.join(allowed)}"


# --- reading the node tree ------------------------------------------------------------------------------

_BAD = object()  # marks a value whose error is already recorded


@dataclass
class _Map:
    """One YAML mapping's keys and value nodes."""

    node: yaml.Node
    path: str
    # Errors about the mapping as a whole (a missing key, two keys that exclude each other) point at the line of
    # the key it sits under ("condition:"), which is where a reader looks; a list item has none, so its own line.
    anchor: yaml.Node | None = None
    present: bool = True  # False for a required section that is absent (its own keys then go unreported)
    values: dict[str, yaml.Node] = field(default_factory=dict)
    key_nodes: dict[str, yaml.Node] = field(default_factory=dict)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def where(self) -> yaml.Node:
        return self.anchor or self.node

    def line_node(self, *keys: str) -> yaml.Node:
        """The value node of the first of `keys` given, for cross-field errors; else the mapping itself."""
        return next((self.values[k] for k in keys if k in self.values), self.where())


@dataclass
class _Reader:
    source: str
    loader: yaml.SafeLoader  # converts scalars exactly as yaml.safe_load would
    errors: list[tuple[int, str]] = field(default_factory=list)

    def error(self, node: yaml.Node, path: str, message: str) -> None:
        line = node.start_mark.line + 1
        self.errors.append((line, f"{self.source}:{line}: {path}: {message}"))

    def value(self, node: yaml.Node, path: str) -> object:
        """A scalar's Python value; a list or mapping comes back as-is for the caller to reject with its type."""
        if not isinstance(node, yaml.ScalarNode):
            return node
        try:
            return self.loader.construct_object(node)
        except (yaml.YAMLError, ValueError, TypeError) as e:
            self.error(node, path, f"unreadable value {node.value!r}: {e}")
            return _BAD

    def wrong(self, node: yaml.Node, path: str, expected: str, got: object) -> None:
        if got is _BAD:
            return
        message = f"must be {expected}, got {_describe(got)}"
        if expected == "a string" and isinstance(node, yaml.ScalarNode) and got is not None:
            message += f"; quote it if you meant the text: \"{node.value}\""
        self.error(node, path, message)

    def mapping(self, node: yaml.Node, path: str, allowed: Sequence[str] | None) -> _Map:
        """The mapping's keys, checked: strings, no duplicates and, when `allowed` is given, no unknown names."""
        m = _Map(node, path)
        if _is_null(node):
            return m
        if not isinstance(node, yaml.MappingNode):
            self.wrong(node, path or DOCUMENT, "a mapping", self.value(node, path))
            m.present = False  # its required keys are not missing: the whole value is wrong, and said so
            return m
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = self.value(key_node, path) if isinstance(key_node, yaml.ScalarNode) else key_node
            if not isinstance(key, str):
                self.wrong(key_node, path or DOCUMENT, "a string key", key)
                continue
            if key in first_line:
                self.error(key_node, m.at(key), f"duplicate key (first given on line {first_line[key]})")
                continue
            first_line[key] = key_node.start_mark.line + 1
            if allowed is not None and key not in allowed:
                self.error(key_node, m.at(key), _unknown_key(key, allowed))
                continue
            m.values[key], m.key_nodes[key] = value_node, key_node
        return m

    def section(self, parent: _Map, key: str, allowed: Sequence[str] | None, *, required: bool = False) -> _Map:
        """parent[key] as a mapping; absent or null reads as an empty one (and is an error when required)."""
        node = parent.values.get(key)
        if node is not None:
            m = self.mapping(node, parent.at(key), allowed)
            m.anchor = parent.key_nodes[key]
            return m
        if required and parent.present:
            self.error(parent.where(), parent.at(key), "required")
        return _Map(parent.node, parent.at(key), parent.anchor, present=not required)

    def sequence(self, parent: _Map, key: str) -> list[tuple[yaml.Node, str]] | None:
        """parent[key]'s items with their paths; None when absent or null, [] (after an error) when not a list."""
        node = parent.values.get(key)
        if node is None or _is_null(node):
            return None
        if not isinstance(node, yaml.SequenceNode):
            self.wrong(node, parent.at(key), "a list", self.value(node, parent.at(key)))
            return []
        return [(item, f"{parent.at(key)}[{i}]") for i, item in enumerate(node.value)]

    def text(self, m: _Map, key: str, default: str = "", *, required: bool = False,
             check: Callable[[str], str | None] | None = None) -> str:
        node = m.values.get(key)
        if node is None:
            if required and m.present:
                self.error(m.where(), m.at(key), "required")
            return default
        got = self.value(node, m.at(key))
        if not isinstance(got, str):
            self.wrong(node, m.at(key), "a string", got)
            return default
        if required and not got:
            self.error(node, m.at(key), "must not be empty")
            return default
        problem = check(got) if check else None
        if problem:
            self.error(node, m.at(key), problem)
            return default
        return got

    def flag(self, m: _Map, key: str, default: bool) -> bool:
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if isinstance(got, bool):
            return got
        self.wrong(node, m.at(key), "true or false", got)
        return default

    def optional_integer(self, m: _Map, key: str, default: int | None, *, minimum: int = 0,
                         maximum: int | None = None, nullable: bool = True) -> int | None:
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if got is None and nullable:
            return None
        expected = "an integer" + (" or null" if nullable else "")
        if isinstance(got, bool) or not isinstance(got, int):
            self.wrong(node, m.at(key), expected, got)
            return default
        if got < minimum or (maximum is not None and got > maximum):
            upper = f" and at most {maximum}" if maximum is not None else ""
            self.error(node, m.at(key), f"must be at least {minimum}{upper}, got {got}")
            return default
        return got

    def integer(self, m: _Map, key: str, default: int, *, minimum: int = 0) -> int:
        got = self.optional_integer(m, key, default, minimum=minimum, nullable=False)
        return default if got is None else got

    def percent(self, m: _Map, key: str, default: float | None) -> float | None:
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if got is None:
            return None
        if isinstance(got, bool) or not isinstance(got, int | float):
            self.wrong(node, m.at(key), "a number from 0 to 100 or null", got)
            return default
        if not 0 <= got <= 100:  # also rejects .nan
            self.error(node, m.at(key), f"must be from 0 to 100, got {got}")
            return default
        return float(got)

    def optional_duration(self, m: _Map, key: str, default: dt.timedelta | None, *,
                          nullable: bool = True, positive: bool = False) -> dt.timedelta | None:
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if got is None and nullable:
            return None
        if got is _BAD or not isinstance(node, yaml.ScalarNode):
            self.wrong(node, m.at(key), "a duration", got)
            return default
        try:
            result = parse_duration(got)
        except ValueError as e:
            self.error(node, m.at(key), str(e))
            return default
        if positive and not result:
            self.error(node, m.at(key), "must be more than 0s")
            return default
        return result

    def duration(self, m: _Map, key: str, default: dt.timedelta, *, positive: bool = False) -> dt.timedelta:
        got = self.optional_duration(m, key, default, nullable=False, positive=positive)
        return default if got is None else got

    def strings(self, parent: _Map, key: str, check: Callable[[str], str | None]) -> tuple[str, ...] | None:
        items = self.sequence(parent, key)
        if items is None:
            return None
        out: list[str] = []
        for node, path in items:
            got = self.value(node, path)
            if not isinstance(got, str):
                self.wrong(node, path, "a string", got)
            elif problem := check(got):
                self.error(node, path, problem)
            else:
                out.append(got)
        return tuple(out)

    def string_map(self, parent: _Map, key: str, check_key: Callable[[str], str | None],
                   check_value: Callable[[str], str | None]) -> tuple[tuple[str, str], ...]:
        m = self.section(parent, key, None)
        out: list[tuple[str, str]] = []
        for k in m.values:
            if problem := check_key(k):
                self.error(m.key_nodes[k], m.at(k), problem)
                continue
            value = self.text(m, k, check=check_value)
            out.append((k, value))
        return tuple(out)


def _is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _describe(value: object) -> str:
    if isinstance(value, yaml.MappingNode):
        return "a mapping"
    if isinstance(value, yaml.SequenceNode):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    return f"{type(value).__name__} {value}"


# --- sections -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _ReadRule:
    rule: TaintRule
    path: str
    name_node: yaml.Node  # where to point at a duplicate name (the rule itself when the name is defaulted)
    value_node: yaml.Node  # where to point at a conflicting taint value


def _rule(r: _Reader, node: yaml.Node, path: str) -> _ReadRule:
    m = r.mapping(node, path, _RULE_KEYS)
    c = r.section(m, "condition", _CONDITION_KEYS, required=True)
    t = r.section(m, "taint", _TAINT_KEYS, required=True)
    condition_type = r.text(c, "type", required=True)
    status = _condition_status(r, c)
    taint = Taint(key=r.text(t, "key", required=True, check=_qualified_name_problem),
                  value=r.text(t, "value", check=_label_value_problem), effect=Effect.NO_SCHEDULE)
    allow_no_execute = r.flag(m, "allowNoExecute", False)
    effect_text = r.text(t, "effect", str(Effect.NO_SCHEDULE))
    if effect_text not in set(Effect):
        r.error(t.values["effect"], t.at("effect"), "must be one of NoSchedule, PreferNoSchedule, NoExecute "
                f"(NoExecute needs allowNoExecute: true), got {effect_text!r}")
    elif effect_text == Effect.NO_EXECUTE and not allow_no_execute:
        # NoExecute makes the kubelet evict every intolerant pod at once, bypassing PDBs, limits and node fit.
        r.error(t.values["effect"], t.at("effect"),
                "must be one of NoSchedule, PreferNoSchedule (NoExecute needs allowNoExecute: true)")
    else:
        taint = Taint(taint.key, taint.value, Effect(effect_text))
    default_name = f"{condition_type}-{status}".lower()
    rule = TaintRule(
        name=r.text(m, "name", default_name, check=_rule_name_problem),
        condition_type=condition_type,
        condition_status=status,
        for_=r.duration(c, "for", dt.timedelta(0)),
        taint=taint,
        evict=r.flag(m, "evict", TaintRule.evict),
        recover_after=r.duration(m, "recoverAfter", TaintRule.recover_after),
        allow_no_execute=allow_no_execute,
    )
    return _ReadRule(rule, path, m.line_node("name"), t.line_node("value", "key"))


def _condition_status(r: _Reader, c: _Map) -> str:
    node = c.values.get("status")
    if node is None:
        return "True"
    got = r.value(node, c.at("status"))
    if isinstance(got, bool):
        # YAML reads a bare True/true/yes as a boolean; the API's condition status is the string "True".
        r.error(node, c.at("status"), f"must be a quoted string (\"{got}\"): bare {node.value} is a YAML boolean")
        return "True"
    if got not in CONDITION_STATUSES:
        r.wrong(node, c.at("status"), f"one of {', '.join(CONDITION_STATUSES)}", got)
        return "True"
    return str(got)


def _rules(r: _Reader, top: _Map) -> tuple[TaintRule, ...]:
    read = [_rule(r, node, path) for node, path in r.sequence(top, "rules") or []]
    names: dict[str, _ReadRule] = {}
    values: dict[tuple[str, str], _ReadRule] = {}
    for rr in read:
        first = names.setdefault(rr.rule.name, rr)
        if first is not rr:
            r.error(rr.name_node, f"{rr.path}.name", f"duplicate rule name {rr.rule.name!r} (also {first.path})")
        if not rr.rule.taint.key:
            continue  # an invalid key is reported already
        owner = values.setdefault(rr.rule.taint.identity(), rr)
        if owner.rule.taint.value != rr.rule.taint.value:
            r.error(rr.value_node, f"{rr.path}.taint.value",
                    f"{rr.rule.taint.value!r} conflicts with {owner.rule.taint.value!r} in {owner.path} for taint "
                    f"{rr.rule.taint.key}:{rr.rule.taint.effect}; a node carries one value per key and effect")
    return tuple(rr.rule for rr in read)


def _namespaces(r: _Reader, parent: _Map) -> Namespaces:
    m = r.section(parent, "namespaces", ("include", "exclude"))
    include = r.strings(m, "include", _namespace_problem) or ()
    exclude = r.strings(m, "exclude", _namespace_problem) or ()
    if "include" in m.values and "exclude" in m.values:
        r.error(m.where(), m.path, "include and exclude are mutually exclusive; give one of them")
    return Namespaces(include=include, exclude=exclude)


def _label_selector(r: _Reader, parent: _Map) -> LabelSelector | None:
    node = parent.values.get("labelSelector")
    if node is None or _is_null(node):
        return None
    m = r.mapping(node, parent.at("labelSelector"), ("matchLabels", "matchExpressions"))
    labels = r.string_map(m, "matchLabels", _qualified_name_problem, _label_value_problem)
    expressions: list[SelectorRequirement] = []
    for item, path in r.sequence(m, "matchExpressions") or []:
        e = r.mapping(item, path, ("key", "operator", "values"))
        key = r.text(e, "key", required=True, check=_qualified_name_problem)
        operator = r.text(e, "operator", required=True)
        values = r.strings(e, "values", _label_value_problem) or ()
        if operator and operator not in SELECTOR_OPERATORS:
            r.error(e.values["operator"], e.at("operator"),
                    f"must be one of {', '.join(SELECTOR_OPERATORS)}, got {operator!r}")
        elif operator in ("In", "NotIn") and not values:
            r.error(e.line_node("values", "operator"), e.at("values"), f"{operator} needs at least one value")
        elif operator in ("Exists", "DoesNotExist") and values:
            r.error(e.values["values"], e.at("values"), f"{operator} takes no values")
        expressions.append(SelectorRequirement(key, operator, values))
    return LabelSelector(match_labels=labels, match_expressions=tuple(expressions))


def _evictor(r: _Reader, top: _Map) -> EvictorArgs:
    m = r.section(top, "evictor", _EVICTOR_KEYS)
    d = EvictorArgs()
    p = r.section(m, "priorityThreshold", ("value", "name"))
    threshold = r.optional_integer(p, "value", d.priority_threshold, minimum=_INT32[0], maximum=_INT32[1])
    threshold_name = r.text(p, "name", d.priority_threshold_name,
                            check=lambda s: None if _DNS_SUBDOMAIN.fullmatch(s) else
                            f"invalid PriorityClass name {s!r}: must be a lowercase DNS subdomain")
    if "value" in p.values and "name" in p.values:
        r.error(p.where(), p.path, "value and name are mutually exclusive; give one of them")
    return EvictorArgs(
        evict_local_storage_pods=r.flag(m, "evictLocalStoragePods", d.evict_local_storage_pods),
        evict_daemonset_pods=r.flag(m, "evictDaemonSetPods", d.evict_daemonset_pods),
        evict_system_critical_pods=r.flag(m, "evictSystemCriticalPods", d.evict_system_critical_pods),
        evict_failed_bare_pods=r.flag(m, "evictFailedBarePods", d.evict_failed_bare_pods),
        ignore_pvc_pods=r.flag(m, "ignorePvcPods", d.ignore_pvc_pods),
        priority_threshold=threshold,
        priority_threshold_name=threshold_name,
        label_selector=_label_selector(r, m),
        namespaces=_namespaces(r, m),
        min_replicas=r.integer(m, "minReplicas", d.min_replicas),
        min_pod_age=r.optional_duration(m, "minPodAge", d.min_pod_age),
        node_fit=r.flag(m, "nodeFit", d.node_fit),
        honor_safe_to_evict=r.flag(m, "honorSafeToEvict", d.honor_safe_to_evict),
    )


def _remove_pods_violating_node_taints_args(r: _Reader, strategy: _Map) -> RemovePodsViolatingNodeTaintsArgs:
    m = r.section(strategy, "args", _TAINTS_ARGS_KEYS)
    d = RemovePodsViolatingNodeTaintsArgs()
    excluded = r.strings(m, "excludedTaints", _taint_filter_problem)
    included = r.strings(m, "includedTaints", _taint_filter_problem)
    if excluded is not None and included is not None:
        r.error(m.values["includedTaints"], m.at("includedTaints"),
                "includedTaints and excludedTaints are mutually exclusive; give one of them")
    return RemovePodsViolatingNodeTaintsArgs(
        namespaces=_namespaces(r, m),
        label_selector=_label_selector(r, m),
        include_prefer_no_schedule=r.flag(m, "includePreferNoSchedule", d.include_prefer_no_schedule),
        excluded_taints=excluded if excluded is not None else d.excluded_taints,
        included_taints=included if included is not None else d.included_taints,
    )


def _resource_percentages(r: _Reader, m: _Map, key: str) -> tuple[tuple[str, float], ...]:
    """thresholds/targetThresholds: resource name -> percent of allocatable (0-100)."""
    section = r.section(m, key, None, required=True)
    if section.present and key in m.values and not section.values and not _is_null(m.values[key]):
        r.error(m.values[key], m.at(key), "must name at least one resource")
    out: list[tuple[str, float]] = []
    for name in section.values:
        problem = None if name in ("cpu", "memory", "pods") else _qualified_name_problem(name)
        if problem is not None:
            r.error(section.key_nodes[name], section.at(name),
                    f"unknown resource {name!r}: use cpu, memory, pods or an extended resource (e.g. nvidia.com/gpu)")
            continue
        value = r.percent(section, name, None)
        if value is None:
            if _is_null(section.values[name]):
                r.error(section.values[name], section.at(name), "must be a number from 0 to 100, got null")
            continue
        out.append((name, value))
    return tuple(sorted(out))


def _evictable_namespaces(r: _Reader, m: _Map) -> tuple[str, ...]:
    section = r.section(m, "evictableNamespaces", ("exclude", "include"))
    if "include" in section.values:
        r.error(section.key_nodes["include"], section.at("include"),
                "only exclude is supported (as in descheduler): the utilization strategies count every namespace")
    return r.strings(section, "exclude", _namespace_problem) or ()


def _low_node_utilization_args(r: _Reader, strategy: _Map) -> LowNodeUtilizationArgs:
    m = r.section(strategy, "args", _LNU_ARGS_KEYS, required=True)
    thresholds = _resource_percentages(r, m, "thresholds")
    targets = _resource_percentages(r, m, "targetThresholds")
    deviation = r.flag(m, "useDeviationThresholds", False)
    if "metricsUtilization" in m.values:
        r.error(m.key_nodes["metricsUtilization"], m.at("metricsUtilization"),
                "not supported: nodemedic uses requests, as kube-scheduler does (see docs/utilization.md)")
    if thresholds and targets:
        low, high = dict(thresholds), dict(targets)
        if set(low) != set(high):
            r.error(m.line_node("targetThresholds"), m.at("targetThresholds"),
                    f"must name the same resources as thresholds ({', '.join(sorted(low))}), got "
                    f"{', '.join(sorted(high))}")
        elif not deviation:
            for name in sorted(low):
                if low[name] > high[name]:
                    r.error(m.line_node("targetThresholds"), m.at(f"targetThresholds.{name}"),
                            f"{high[name]:g} is below thresholds.{name} ({low[name]:g})")
    limits = r.section(m, "evictionLimits", ("node",))
    return LowNodeUtilizationArgs(
        thresholds=thresholds,
        target_thresholds=targets,
        use_deviation_thresholds=deviation,
        number_of_nodes=r.integer(m, "numberOfNodes", 0),
        evictable_namespaces_exclude=_evictable_namespaces(r, m),
        eviction_limit_per_node=r.optional_integer(limits, "node", None),
    )


def _high_node_utilization_args(r: _Reader, strategy: _Map) -> HighNodeUtilizationArgs:
    m = r.section(strategy, "args", _HNU_ARGS_KEYS, required=True)
    d = HighNodeUtilizationArgs()
    thresholds = _resource_percentages(r, m, "thresholds")
    modes = r.strings(m, "evictionModes",
                      lambda s: None if s in EVICTION_MODES else f"must be one of {', '.join(EVICTION_MODES)}")
    return HighNodeUtilizationArgs(
        thresholds=thresholds,
        number_of_nodes=r.integer(m, "numberOfNodes", d.number_of_nodes),
        evictable_namespaces_exclude=_evictable_namespaces(r, m),
        only_thresholding_resources="OnlyThresholdingResources" in (modes or ()),
        taint_drained_nodes=r.flag(m, "taintDrainedNodes", d.taint_drained_nodes),
        max_consolidating_nodes=r.integer(m, "maxConsolidatingNodes", d.max_consolidating_nodes, minimum=1),
        consolidation_timeout=r.duration(m, "consolidationTimeout", d.consolidation_timeout),
    )


# Every strategy the policy may name, with the function that reads its `args`. The planner's registry
# (remediator.strategies.STRATEGIES) must name the same strategies; a unit test keeps the two in step.
STRATEGY_ARGS: dict[str, Callable[[_Reader, _Map], object]] = {
    "RemovePodsViolatingNodeTaints": _remove_pods_violating_node_taints_args,
    "LowNodeUtilization": _low_node_utilization_args,
    "HighNodeUtilization": _high_node_utilization_args,
}
DEFAULT_STRATEGIES = (StrategyConfig("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs()),)


def _strategies(r: _Reader, top: _Map) -> tuple[StrategyConfig, ...]:
    items = r.sequence(top, "strategies")
    if items is None:
        return DEFAULT_STRATEGIES  # an explicit empty list means "taint only, never evict"
    out: list[StrategyConfig] = []
    seen: dict[str, str] = {}
    for node, path in items:
        m = r.mapping(node, path, _STRATEGY_KEYS)
        name = r.text(m, "name", required=True)
        if not name:
            continue
        if name not in STRATEGY_ARGS:
            r.error(m.values["name"], m.at("name"),
                    f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGY_ARGS))}")
            continue
        if name in seen:
            r.error(m.values["name"], m.at("name"), f"duplicate strategy {name!r} (also {seen[name]})")
            continue
        seen[name] = path
        out.append(StrategyConfig(name, STRATEGY_ARGS[name](r, m)))
    return tuple(out)


def _limits(r: _Reader, top: _Map) -> Limits:
    m = r.section(top, "limits", _LIMITS_KEYS)
    d = Limits()
    return Limits(
        max_pods_to_evict_per_node=r.optional_integer(m, "maxNoOfPodsToEvictPerNode", d.max_pods_to_evict_per_node),
        max_pods_to_evict_per_namespace=r.optional_integer(m, "maxNoOfPodsToEvictPerNamespace",
                                                           d.max_pods_to_evict_per_namespace),
        max_pods_to_evict_total=r.optional_integer(m, "maxNoOfPodsToEvictTotal", d.max_pods_to_evict_total),
        owner_cooldown=r.duration(m, "ownerCooldown", d.owner_cooldown),
    )


def _check_backoff(r: _Reader, m: _Map, initial: dt.timedelta, maximum: dt.timedelta) -> None:
    if maximum < initial:
        key = "maxBackoff" if "maxBackoff" in m.values else "initialBackoff"
        r.error(m.line_node(key), m.at(key), f"maxBackoff ({maximum.total_seconds():g}s) must not be below "
                                             f"initialBackoff ({initial.total_seconds():g}s)")


def _eviction(r: _Reader, top: _Map) -> EvictionSettings:
    m = r.section(top, "eviction", _EVICTION_KEYS)
    d = EvictionSettings()
    settings = EvictionSettings(
        retry_deadline=r.duration(m, "retryDeadline", d.retry_deadline),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        grace_period_seconds=r.optional_integer(m, "gracePeriodSeconds", d.grace_period_seconds),
    )
    _check_backoff(r, m, settings.initial_backoff, settings.max_backoff)
    return settings


def _safety(r: _Reader, top: _Map) -> Safety:
    m = r.section(top, "safety", _SAFETY_KEYS)
    d = Safety()
    safety = Safety(
        max_tainted_nodes=r.optional_integer(m, "maxTaintedNodes", d.max_tainted_nodes),
        max_tainted_nodes_percent=r.percent(m, "maxTaintedNodesPercent", d.max_tainted_nodes_percent),
        min_tainted_nodes=r.integer(m, "minTaintedNodes", d.min_tainted_nodes),
        paused=r.flag(m, "paused", d.paused),
        exclude_label=r.text(m, "excludeLabel", d.exclude_label, check=_qualified_name_problem),
    )
    if safety.max_tainted_nodes is not None and safety.min_tainted_nodes > safety.max_tainted_nodes:
        # The floor wins over the count (docs: limit = max(min, ...)), so the count would silently mean nothing.
        key = "minTaintedNodes" if "minTaintedNodes" in m.values else "maxTaintedNodes"
        r.error(m.line_node(key), m.at(key),
                f"minTaintedNodes ({safety.min_tainted_nodes}) must not exceed maxTaintedNodes "
                f"({safety.max_tainted_nodes}); to stop tainting altogether use paused: true")
    return safety


def _autoscaler(r: _Reader, top: _Map, strategies: tuple[StrategyConfig, ...]) -> AutoscalerSettings:
    m = r.section(top, "autoscaler", _AUTOSCALER_KEYS)
    d = AutoscalerSettings()
    settings = AutoscalerSettings(adds_nodes=r.flag(m, "addsNodes", d.adds_nodes),
                                  consolidates=r.flag(m, "consolidates", d.consolidates))
    if settings.consolidates and any(s.name == "HighNodeUtilization" for s in strategies):
        # Two consolidators race: each drains nodes the other counts on as destinations (docs/autoscalers.md).
        r.error(m.line_node("consolidates"), m.at("consolidates"),
                "the node autoscaler consolidates, so HighNodeUtilization must not: remove one of them "
                "(with Karpenter, consolidationPolicy WhenEmpty leaves packing to HighNodeUtilization)")
    return settings


def _sink(r: _Reader, node: yaml.Node, path: str, index: int) -> SinkConfig:
    m = r.mapping(node, path, _SINK_KEYS)
    kind = r.text(m, "type", required=True)
    if kind and kind not in SINK_TYPES:
        r.error(m.values["type"], m.at("type"), f"unknown sink type {kind!r}; known: {', '.join(SINK_TYPES)}")
    d = SinkConfig(type=kind, url="")
    sink = SinkConfig(
        type=kind,
        url=r.text(m, "url", required=True, check=_url_problem),
        name=r.text(m, "name", f"{kind}-{index}", check=lambda s: None if s else "must not be empty"),
        timeout=r.duration(m, "timeout", d.timeout, positive=True),
        max_attempts=r.integer(m, "maxAttempts", d.max_attempts, minimum=1),
        initial_backoff=r.duration(m, "initialBackoff", d.initial_backoff),
        max_backoff=r.duration(m, "maxBackoff", d.max_backoff),
        headers=r.string_map(m, "headers", lambda k: None if k.strip() else "header names must not be empty",
                             lambda v: None),
    )
    _check_backoff(r, m, sink.initial_backoff, sink.max_backoff)
    return sink


def _notifications(r: _Reader, top: _Map) -> Notifications:
    m = r.section(top, "notifications", _NOTIFICATIONS_KEYS)
    sinks: list[SinkConfig] = []
    for index, (node, path) in enumerate(r.sequence(m, "sinks") or []):
        sink = _sink(r, node, path, index)
        if any(s.name == sink.name for s in sinks):
            r.error(node, f"{path}.name", f"duplicate sink name {sink.name!r}; give each sink a distinct name")
        sinks.append(sink)
    return Notifications(queue_size=r.integer(m, "queueSize", Notifications.queue_size, minimum=1),
                         sinks=tuple(sinks))


# --- entry points ---------------------------------------------------------------------------------------


def parse_policy(text: str, *, source: str) -> Policy:
    """The policy in `text`, or PolicyError listing every problem; `source` names the file in messages."""
    try:
        loader = yaml.SafeLoader(text)
    except yaml.YAMLError as e:  # a non-printable character, caught before parsing starts
        raise PolicyError([_syntax_error(source, text, e)]) from None
    try:
        documents: list[yaml.Node] = []
        while loader.check_node():
            documents.append(loader.get_node())
        return _document(_Reader(source, loader), documents)
    except yaml.YAMLError as e:
        raise PolicyError([_syntax_error(source, text, e)]) from None
    finally:
        loader.dispose()


def _syntax_error(source: str, text: str, e: yaml.YAMLError) -> str:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    # A ReaderError (a non-printable character) knows only its character offset, not a mark.
    line = mark.line + 1 if mark is not None else text.count("\n", 0, getattr(e, "position", 0)) + 1
    if isinstance(e, yaml.reader.ReaderError):
        code = e.character if isinstance(e.character, int) else ord(e.character)
        problem = f"unacceptable character #x{code:04x}: {e.reason}"
    else:
        problem = getattr(e, "problem", None) or str(e)
    return f"{source}:{line}: {DOCUMENT}: YAML syntax error: {problem}"


def _document(r: _Reader, documents: list[yaml.Node]) -> Policy:
    if not documents or (len(documents) == 1 and _is_null(documents[0])):
        raise PolicyError([f"{r.source}:1: {DOCUMENT}: the file is empty; a policy needs at least "
                           f"apiVersion: {API_VERSION} and kind: {KIND}"])
    if len(documents) > 1:
        r.error(documents[1], DOCUMENT, "a policy file holds exactly one YAML document; this is a second one")
    root = documents[0]
    if not isinstance(root, yaml.MappingNode):
        r.wrong(root, DOCUMENT, f"a mapping with keys {', '.join(_TOP_KEYS)}", r.value(root, DOCUMENT))
        raise PolicyError([message for _, message in sorted(r.errors, key=lambda e: e[0])])
    top = r.mapping(root, "", _TOP_KEYS)
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        got = r.text(top, key, required=True)
        if got and got != expected:
            r.error(top.values[key], key, f"must be {expected}, got {got!r}")
    strategies = _strategies(r, top)
    policy = Policy(rules=_rules(r, top), evictor=_evictor(r, top), strategies=strategies,
                    limits=_limits(r, top), eviction=_eviction(r, top), safety=_safety(r, top),
                    notifications=_notifications(r, top), autoscaler=_autoscaler(r, top, strategies))
    if r.errors:
        raise PolicyError([message for _, message in sorted(r.errors, key=lambda e: e[0])])
    return policy


def load_policy(path: str | os.PathLike[str]) -> Policy:
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise PolicyError([f"{source}: cannot read the policy file: {e}"]) from None
    return parse_policy(text, source=source)


def validate_main(path: str) -> int:
    """`nodemedic-remediator validate`: 0 and a one-line summary, or 2 with every error on stderr."""
    try:
        policy = load_policy(path)
    except PolicyError as e:
        for message in e.errors:
            print(message, file=sys.stderr)
        return 2
    strategies = ", ".join(s.name for s in policy.strategies) or "none"
    print(f"OK: {path}: {len(policy.rules)} rules, strategies: {strategies}")
    return 0
