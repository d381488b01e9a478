"""Load node-problem-detector's custom-plugin-monitor JSON unchanged; every mistake reported as FILE: field: message.

Users bring their NPD files unchanged: the same keys (snake_case inside `pluginConfig`, camelCase outside, as NPD
spells them), the same defaults and the same Go duration strings ("30s", "1m30s", "500ms"). Where NPD stops at the
first problem or at a fatal exit, this loader reads the whole file and lists every problem at once; it also rejects
keys NPD would silently ignore, because a misspelt `invoke_interval` otherwise runs plugins at the default rate with no
hint why.

Relative plugin paths resolve against the config file's directory first; when nothing is there, against the working
directory, which is where NPD itself looks (its shipped configs say `./config/plugin/check_ntp.sh`).
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.npd.vocabulary import KUBELET_CONDITIONS, DefaultCondition, RuleType
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.durations import below_floor, format_duration, parse_go_duration
from nodemedic_common.inputs import MAX_DEPTH, Problem, json_depth_problem, read_text

PLUGIN = "custom"
DEFAULT_INVOKE_INTERVAL = dt.timedelta(seconds=30)
DEFAULT_TIMEOUT = dt.timedelta(seconds=5)
# Each invocation forks a process per rule: faster than once a second is a fork bomb on the node, not a check.
MIN_INVOKE_INTERVAL = (dt.timedelta(seconds=1), "each run forks one process per rule")
DEFAULT_MAX_OUTPUT_LENGTH = 80
# The runner keeps up to this much of each plugin's output in memory and puts it in a condition's message: a bound,
# or one rule with a chatty plugin holds gigabytes on the node (10**12 was accepted). Far above any status line.
MAX_OUTPUT_LENGTH = 1024 * 1024
DEFAULT_CONCURRENCY = 3
DOCUMENT = "<document>"  # the field path of errors about the file as a whole

_TOP_KEYS = ("plugin", "pluginConfig", "source", "metricsReporting", "conditions", "rules")
_PLUGIN_CONFIG_KEYS = ("invoke_interval", "timeout", "max_output_length", "concurrency",
                       "enable_message_change_based_condition_update", "skip_initial_status")
_CONDITION_KEYS = ("type", "reason", "message")
_RULE_KEYS = ("type", "condition", "reason", "path", "args", "timeout", "invoke_interval")


@dataclass(frozen=True)
class PluginRule:
    type: RuleType
    reason: str
    path: Path  # absolute, and it existed when the file was loaded
    timeout: dt.timedelta  # effective: the rule's own, else the global one (never above the global one)
    invoke_interval: dt.timedelta  # effective: the rule's own, else the global one
    condition: str = ""  # only meaningful for permanent rules
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class PluginConfig:
    invoke_interval: dt.timedelta = DEFAULT_INVOKE_INTERVAL
    timeout: dt.timedelta = DEFAULT_TIMEOUT
    max_output_length: int = DEFAULT_MAX_OUTPUT_LENGTH
    concurrency: int = DEFAULT_CONCURRENCY
    enable_message_change_based_condition_update: bool = False
    skip_initial_status: bool = False


@dataclass(frozen=True)
class PluginMonitorConfig:
    source: str
    rules: tuple[PluginRule, ...]
    conditions: tuple[DefaultCondition, ...] = ()
    plugin_config: PluginConfig = PluginConfig()
    metrics_reporting: bool = True
    plugin: str = PLUGIN

    def condition(self, condition_type: str) -> DefaultCondition:
        return next(c for c in self.conditions if c.type == condition_type)



class _Object(dict[str, Any]):
    """A JSON object that remembers keys given twice (Go keeps the last one silently; we report them)."""

    duplicates: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    keys = [k for k, _ in pairs]
    obj.duplicates = tuple(k for i, k in enumerate(keys) if k in keys[:i])
    return obj


class _Reader:
    """Walks the decoded JSON, collecting errors with their field paths instead of stopping at the first."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.errors: list[str] = []

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"{self.file}: {where}: {message}")

    def mapping(self, value: Any, where: str, keys: Sequence[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.error(where or DOCUMENT, f"must be an object, got {_json_type(value)}")
            return {}
        for key in getattr(value, "duplicates", ()):
            self.error(_join(where, key), "given more than once")
        for key in value:
            if key not in keys:
                close = difflib.get_close_matches(key, keys, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; expected one of {', '.join(keys)}"
                self.error(_join(where, key), f"unknown field{hint}")
        return value

    def string(self, obj: dict[str, Any], key: str, where: str, *, required: bool = False, default: str = "") -> str:
        if key not in obj:
            if required:
                self.error(_join(where, key), "is required")
            return default
        value = obj[key]
        if not isinstance(value, str):
            self.error(_join(where, key), f"must be a string, got {_json_type(value)}")
            return default
        if required and not value.strip():
            self.error(_join(where, key), "must not be empty")
        return value

    def boolean(self, obj: dict[str, Any], key: str, where: str, default: bool) -> bool:
        value = obj.get(key, default)
        if not isinstance(value, bool):
            self.error(_join(where, key), f"must be true or false, got {_json_type(value)}")
            return default
        return value

    def integer(self, obj: dict[str, Any], key: str, where: str, default: int, *, minimum: int,
                maximum: tuple[int, str] | None = None) -> int:
        value = obj.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):  # JSON true is a Python int; NPD wants a number
            self.error(_join(where, key), f"must be an integer, got {_json_type(value)}")
            return default
        if value < minimum:
            self.error(_join(where, key), f"must be at least {minimum}, got {value}")
            return default
        if maximum is not None and value > maximum[0]:
            self.error(_join(where, key), f"must be at most {maximum[0]} ({maximum[1]}), got {value}")
            return default
        return value

    def duration(self, obj: dict[str, Any], key: str, where: str, default: dt.timedelta,
                 floor: tuple[dt.timedelta, str] | None = None) -> dt.timedelta:
        if key not in obj:
            return default
        value = obj[key]
        if not isinstance(value, str):  # NPD reads durations only as strings; a bare 30 would be 30ns there
            self.error(_join(where, key), f'must be a duration string such as "30s", got {_json_type(value)}')
            return default
        try:
            parsed = parse_go_duration(value)
        except ValueError as e:
            self.error(_join(where, key), str(e))
            return default
        if parsed < dt.timedelta(0):
            self.error(_join(where, key), f"must not be negative, got {value!r}")
            return default
        if parsed == dt.timedelta(0):
            self.error(_join(where, key), f"must be greater than 0, got {value!r}")
            return default
        if floor is not None and (problem := below_floor(parsed, *floor)):
            self.error(_join(where, key), problem)
            return default
        return parsed


def load(path: str | os.PathLike[str]) -> PluginMonitorConfig:
    """Read and validate one custom-plugin-monitor file; raise `ConfigError` listing every problem."""
    file = Path(path)
    try:
        text = read_text(file)
    except OSError as e:
        raise ConfigError([f"{file}: cannot read: {e}"]) from e
    if isinstance(text, Problem):
        raise ConfigError([f"{file}:{text.line}: cannot read: {text.message}"])
    try:
        doc = json.loads(text, object_pairs_hook=_object_pairs)
    except json.JSONDecodeError as e:
        raise ConfigError([f"{file}:{e.lineno}:{e.colno}: invalid JSON: {e.msg}"]) from e
    except RecursionError:  # the decoder recurses per level: far deeper than MAX_DEPTH, refused alike
        raise ConfigError([f"{file}: {DOCUMENT}: nested deeper than {MAX_DEPTH} levels"]) from None
    if problem := json_depth_problem(doc):
        raise ConfigError([f"{file}: {DOCUMENT}: {problem}"])
    r = _Reader(file)
    config = _read(r, doc, file.parent)
    if r.errors or config is None:
        raise ConfigError(r.errors)
    return config


def _read(r: _Reader, doc: Any, base: Path) -> PluginMonitorConfig | None:
    if not isinstance(doc, dict):
        r.mapping(doc, "", _TOP_KEYS)
        return None
    top = r.mapping(doc, "", _TOP_KEYS)
    plugin = r.string(top, "plugin", "", required=True)
    if plugin and plugin != PLUGIN:
        r.error("plugin", f'must be "{PLUGIN}", got {plugin!r} (a system-log-monitor file goes to the log monitor)')
    plugin_config = _read_plugin_config(r, top.get("pluginConfig", {}))
    source = r.string(top, "source", "")
    metrics = r.boolean(top, "metricsReporting", "", True)
    conditions = _read_conditions(r, top.get("conditions", []))
    declared = {c.type for c in conditions}
    raw_rules = top.get("rules", [])
    rules: list[PluginRule] = []
    if not isinstance(raw_rules, list):
        r.error("rules", f"must be a list, got {_json_type(raw_rules)}")
    elif not raw_rules:
        r.error("rules", "must list at least one rule; a monitor without rules never runs anything")
    else:
        for i, raw in enumerate(raw_rules):
            rule = _read_rule(r, raw, f"rules[{i}]", plugin_config=plugin_config, declared=declared, base=base)
            if rule is not None:
                rules.append(rule)
    return PluginMonitorConfig(source=source, rules=tuple(rules), conditions=conditions,
                               plugin_config=plugin_config, metrics_reporting=metrics, plugin=plugin)


def _read_plugin_config(r: _Reader, raw: Any) -> PluginConfig:
    where = "pluginConfig"
    obj = r.mapping(raw, where, _PLUGIN_CONFIG_KEYS)
    return PluginConfig(
        invoke_interval=r.duration(obj, "invoke_interval", where, DEFAULT_INVOKE_INTERVAL, MIN_INVOKE_INTERVAL),
        timeout=r.duration(obj, "timeout", where, DEFAULT_TIMEOUT),
        max_output_length=r.integer(obj, "max_output_length", where, DEFAULT_MAX_OUTPUT_LENGTH, minimum=1,
                                    maximum=(MAX_OUTPUT_LENGTH, "1 MiB: the output is held in memory and written to "
                                                                "the Node")),
        concurrency=r.integer(obj, "concurrency", where, DEFAULT_CONCURRENCY, minimum=1),
        enable_message_change_based_condition_update=r.boolean(
            obj, "enable_message_change_based_condition_update", where, False),
        skip_initial_status=r.boolean(obj, "skip_initial_status", where, False),
    )


def _read_conditions(r: _Reader, raw: Any) -> tuple[DefaultCondition, ...]:
    if not isinstance(raw, list):
        r.error("conditions", f"must be a list, got {_json_type(raw)}")
        return ()
    conditions: list[DefaultCondition] = []
    for i, item in enumerate(raw):
        where = f"conditions[{i}]"
        obj = r.mapping(item, where, _CONDITION_KEYS)
        if not isinstance(item, dict):
            continue
        ctype = r.string(obj, "type", where, required=True)
        reason = r.string(obj, "reason", where, required=True)
        message = r.string(obj, "message", where)
        if ctype in KUBELET_CONDITIONS:  # still declared below, so a rule naming it gets no second error
            r.error(_join(where, "type"), f"{ctype!r} is owned by the kubelet; choose another condition type")
        if ctype and any(c.type == ctype for c in conditions):
            r.error(_join(where, "type"), f"condition {ctype!r} is declared more than once")
        elif ctype:  # kept even when its reason is bad, so rules naming it get no second, misleading error
            conditions.append(DefaultCondition(type=ctype, reason=reason, message=message))
    return tuple(conditions)


def _read_rule(r: _Reader, raw: Any, where: str, *, plugin_config: PluginConfig, declared: set[str],
               base: Path) -> PluginRule | None:
    obj = r.mapping(raw, where, _RULE_KEYS)
    if not isinstance(raw, dict):
        return None
    errors_before = len(r.errors)
    raw_type = r.string(obj, "type", where, required=True)
    rule_type: RuleType | None = None
    if raw_type:
        try:
            rule_type = RuleType(raw_type)
        except ValueError:
            r.error(_join(where, "type"), f"must be one of {', '.join(RuleType)}, got {raw_type!r}")
    reason = r.string(obj, "reason", where, required=True)
    condition = r.string(obj, "condition", where, required=rule_type is RuleType.PERMANENT)
    if rule_type is RuleType.PERMANENT and condition and condition not in declared:
        known = ", ".join(sorted(declared)) or "none"
        r.error(_join(where, "condition"),
                f"{condition!r} has no default in conditions[] (declared: {known}); a permanent rule needs one")
    args = obj.get("args", [])
    if args is None:  # Go decodes JSON null into an empty slice
        args = []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        r.error(_join(where, "args"), "must be a list of strings")
        args = []
    timeout = r.duration(obj, "timeout", where, plugin_config.timeout)
    if timeout > plugin_config.timeout:
        r.error(_join(where, "timeout"), f"{obj['timeout']!r} is longer than the global pluginConfig.timeout "
                f"({format_duration(plugin_config.timeout)}); raise the global one or shorten this one")
    interval = r.duration(obj, "invoke_interval", where, plugin_config.invoke_interval, MIN_INVOKE_INTERVAL)
    path = _resolve(r, r.string(obj, "path", where, required=True), _join(where, "path"), base)
    if len(r.errors) > errors_before or rule_type is None or path is None:
        return None
    return PluginRule(type=rule_type, reason=reason, path=path, timeout=timeout, invoke_interval=interval,
                      condition=condition if rule_type is RuleType.PERMANENT else "", args=tuple(args))


def _resolve(r: _Reader, raw: str, where: str, base: Path) -> Path | None:
    if not raw.strip():
        return None
    given = Path(raw)
    candidates = [given] if given.is_absolute() else [base / given, Path.cwd() / given]
    for candidate in candidates:
        if candidate.exists():
            return candidate.absolute()
    looked = " or ".join(str(c.absolute()) for c in candidates)
    r.error(where, f"{raw!r} does not exist (looked for {looked})")
    return None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return "a list" if isinstance(value, list) else "an object"
