"""The agent's configuration file (YAML), validated with file, line and field in every message.

```yaml
apiVersion: nodemedic.io/v1alpha1
kind: AgentConfig
heartbeat: 5m                  # status re-sent at least this often
logMonitorRecoverAfter: 10m    # a log-based condition goes back to False after this long without a new match
                               # ("never": node-problem-detector's behaviour)
checks:                        # every built-in check is on by default; give one to change it
  cpu: {interval: 30s, timeout: 10s, window: 5m}
  ntp: {enabled: false}
systemLogMonitors: [...]       # node-problem-detector system-log-monitor JSON files (default: shipped ones)
customPluginMonitors: [...]    # node-problem-detector custom-plugin-monitor JSON files
repair: {enabled: true, ...}   # acting on the remediator's repair asks for this Node (agent/repair/config.py)
```
A check's keys are its `Config` dataclass fields in camelCase (`someAvg10` for `some_avg10`); `interval` and
`timeout` set its `timing`. Values are converted from the field's type: durations ("30s", "5m", "1h30m", "500ms"
or a number of seconds; `nodemedic_common.durations`), numbers, booleans, strings, lists. Each field's bounds are
declared on it (`agent/bounds.py`), and a value out of them is named at its own line with the key as written
("agent.yaml:5: checks.cpu.thresholds.someAvg60: must be above 0 and at most 100, got 150").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.bounds import camel_case, field_problems
from agent.model import CheckTiming
from agent.repair.config import RepairConfig, parse_repair
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.durations import below_floor, parse_duration
from nodemedic_common.inputs import Problem, quoted, read_text, yaml_problem


@dataclass(frozen=True)
class CheckSpec:
    """How one built-in check is configured and built (the registry in agent/checks/__init__.py)."""

    config_type: type  # a dataclass whose fields declare their bounds (agent/bounds.py)
    build: Callable[..., Any]  # (config, host) -> Check


@dataclass(frozen=True)
class AgentConfig:
    heartbeat: dt.timedelta = dt.timedelta(minutes=5)
    checks: dict[str, Any] = field(default_factory=dict)  # name -> that check's Config (enabled ones only)
    system_log_monitors: tuple[Path, ...] | None = None  # None = the shipped defaults
    custom_plugin_monitors: tuple[Path, ...] = ()
    # Quiet period after which a log-based (permanent) condition goes back to False; None = never (NPD).
    log_monitor_recover_after: dt.timedelta | None = dt.timedelta(minutes=10)
    repair: RepairConfig = field(default_factory=RepairConfig)


# The smallest values that do no harm (docs/bounds.md). The heartbeat is a status PATCH per node: the kubelet's
# own node-status-update-frequency (10s) is what an API server is sized for; 0s was 20 PATCHes a second per node.
MIN_HEARTBEAT = (dt.timedelta(seconds=10), "one status PATCH per node per heartbeat; the kubelet's own rate is 10s")
# A log condition that clears sooner is gone before a remediation rule's `for`, or a person, can see it, and each
# repeat of its kernel line would cost two PATCHes (0s cleared it the moment it was set).
MIN_RECOVER_AFTER = (dt.timedelta(minutes=1), "a log condition must stay set long enough to be seen and acted on; "
                                             "use never to keep it")


def _at_least(value: dt.timedelta, floor: dt.timedelta, why: str) -> dt.timedelta:
    if problem := below_floor(value, floor, why):
        raise ValueError(problem)
    return value


def _snake(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


class _Lines(yaml.SafeLoader):
    """A loader that remembers each mapping key's line, for error messages."""


def _construct_mapping(loader: _Lines, node: yaml.MappingNode) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    lines: dict[Any, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):  # `? [a, b] : 1`: a list key is unhashable, and no field
            kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
            raise yaml.constructor.ConstructorError(None, None, f"a mapping key must be a plain value, got a {kind}",
                                                    key_node.start_mark)
        key = loader.construct_object(key_node, deep=True)
        if key in out:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {quoted(key)}", key_node.start_mark)
        out[key] = loader.construct_object(value_node, deep=True)
        lines[key] = key_node.start_mark.line + 1
    out["__lines__"] = lines
    return out


_Lines.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _convert(value: Any, hint: Any, where: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if value is None:
            return None
        return _convert(value, args[0], where)
    if hint is dt.timedelta:
        return parse_duration(value)
    if hint is bool:
        if not isinstance(value, bool):
            raise ValueError(f"must be true or false, not {quoted(value)}")
        return value
    if hint in (int, float):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"must be a number, not {quoted(value)}")
        if hint is int and not float(value).is_integer():
            raise ValueError(f"must be a whole number, not {quoted(value)}")
        return hint(value)
    if hint is str:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, not {quoted(value)}")
        return value
    if hint is Path:
        return Path(str(value))
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, dict):
            raise ValueError(f"must be a mapping, not {quoted(value)}")
        nested: list[str] = []
        built = build_dataclass(hint, value, where.split(": ", 1)[-1], errors=nested, source=where.split(":", 1)[0],
                                line=0)
        if nested:
            raise ValueError("; ".join(m.split(": ", 2)[-1] for m in nested))
        return built
    if origin in (tuple, list):
        if not isinstance(value, list):
            raise ValueError(f"must be a list, not {quoted(value)}")
        (item,) = typing.get_args(hint)[:1]
        return tuple(_convert(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    return value


def build_dataclass(cls: type, raw: Mapping[str, Any], where: str, *, errors: list[str], source: str,
                    line: int) -> Any:
    """`cls(**raw)` with camelCase keys, type conversion and one error per bad field (`FILE:LINE: path: msg`)."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    lines = raw.get("__lines__", {}) if isinstance(raw, dict) else {}
    kwargs: dict[str, Any] = {}
    timing: dict[str, dt.timedelta] = {}
    for key, value in raw.items():
        if key == "__lines__":
            continue
        at = f"{source}:{lines.get(key, line)}: {where}.{key}"
        if key in ("interval", "timeout") and "timing" in names:
            try:
                timing[key] = parse_duration(value)
            except ValueError as e:
                errors.append(f"{at}: {e}")
            continue
        name = _snake(str(key))
        if name not in names or name == "timing":
            valid = sorted({camel_case(n) for n in names if n != "timing"} | ({"interval", "timeout"} & (
                {"interval", "timeout"} if "timing" in names else set())))
            errors.append(f"{at}: unknown field; valid: {', '.join(valid)}")
            continue
        try:
            kwargs[name] = _convert(value, hints[name], at)
        except (ValueError, TypeError) as e:
            errors.append(f"{at}: {e}")
    if timing:
        # The check's own default timing (a default_factory is common), with just the given keys replaced.
        default = getattr(cls(), "timing", CheckTiming())
        kwargs["timing"] = dataclasses.replace(default, **timing)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        errors.append(f"{source}:{line}: {where}: {e}")
        return None


def _line_of(raw: Mapping[str, Any], keys: tuple[str, ...], line: int) -> int:
    """The line of the deepest of `keys` the file gives (a bound broken by a default is at the check's line)."""
    for key in keys:
        if not isinstance(raw, dict) or key not in raw:
            break
        line, raw = raw["__lines__"].get(key, line), raw[key]
    return line


def parse_config(text: str, *, source: str, registry: Mapping[str, CheckSpec]) -> AgentConfig:
    try:
        # Before composing: nesting and alias expansion are what make loading (and quoting a value) blow up.
        if problem := yaml_problem(text):
            raise ConfigError([f"{source}:{problem.line}: <document>: {problem.message}"])
        doc = yaml.load(text, Loader=_Lines)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = f"{mark.line + 1}" if mark else "1"
        raise ConfigError([f"{source}:{line}: <document>: {getattr(e, 'problem', e)}"]) from None
    if doc is None:
        doc = {"__lines__": {}}
    if not isinstance(doc, dict):
        raise ConfigError([f"{source}:1: <document>: must be a mapping"])
    errors: list[str] = []
    lines = doc.get("__lines__", {})
    known = {"apiVersion", "kind", "heartbeat", "checks", "systemLogMonitors", "customPluginMonitors",
             "logMonitorRecoverAfter", "repair", "__lines__"}
    for key in doc:
        if key not in known:
            errors.append(f"{source}:{lines.get(key, 1)}: {key}: unknown field; valid: "
                          f"{', '.join(sorted(known - {'__lines__'}))}")
    if doc.get("apiVersion", "nodemedic.io/v1alpha1") != "nodemedic.io/v1alpha1":
        errors.append(f"{source}:{lines.get('apiVersion', 1)}: apiVersion: must be nodemedic.io/v1alpha1")
    if doc.get("kind", "AgentConfig") != "AgentConfig":
        errors.append(f"{source}:{lines.get('kind', 1)}: kind: must be AgentConfig")
    heartbeat = AgentConfig.heartbeat
    if "heartbeat" in doc:
        try:
            heartbeat = _at_least(parse_duration(doc["heartbeat"]), *MIN_HEARTBEAT)
        except ValueError as e:
            errors.append(f"{source}:{lines['heartbeat']}: heartbeat: {e}")
    recover: dt.timedelta | None = AgentConfig.log_monitor_recover_after
    if "logMonitorRecoverAfter" in doc:
        value = doc["logMonitorRecoverAfter"]
        try:
            recover = None if value in (None, "never") else _at_least(parse_duration(value), *MIN_RECOVER_AFTER)
        except ValueError as e:
            errors.append(f"{source}:{lines['logMonitorRecoverAfter']}: logMonitorRecoverAfter: {e}")
    raw_checks = doc.get("checks") or {}
    if not isinstance(raw_checks, dict):
        errors.append(f"{source}:{lines.get('checks', 1)}: checks: must be a mapping of check name to settings")
        raw_checks = {}
    check_lines = raw_checks.get("__lines__", {})
    checks: dict[str, Any] = {}
    for name in raw_checks:
        if name != "__lines__" and name not in registry:
            errors.append(f"{source}:{check_lines.get(name, 1)}: checks.{name}: unknown check; valid: "
                          f"{', '.join(sorted(registry))}")
    for name, spec in registry.items():
        raw = raw_checks.get(name) or {}
        line = check_lines.get(name, 1)
        if not isinstance(raw, dict):
            errors.append(f"{source}:{line}: checks.{name}: must be a mapping")
            continue
        raw = dict(raw)
        enabled = raw.pop("enabled", True)
        if not isinstance(enabled, bool):
            errors.append(f"{source}:{line}: checks.{name}.enabled: must be true or false")
            continue
        cfg = build_dataclass(spec.config_type, raw, f"checks.{name}", errors=errors, source=source, line=line)
        if cfg is None:
            continue
        errors += [f"{source}:{_line_of(raw, problem.keys, line)}: checks.{name}.{problem}"
                   for problem in field_problems(cfg)]
        if enabled:
            checks[name] = cfg
    monitors: dict[str, tuple[Path, ...] | None] = {}
    base = Path(source).parent
    for key in ("systemLogMonitors", "customPluginMonitors"):
        value = doc.get(key)
        if value is None:
            monitors[key] = None
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            monitors[key] = tuple((base / v) if not Path(v).is_absolute() else Path(v) for v in value)
        else:
            errors.append(f"{source}:{lines.get(key, 1)}: {key}: must be a list of file paths")
    repair = parse_repair(doc.get("repair"), source=source, line=lines.get("repair", 1), errors=errors)
    if errors:
        raise ConfigError(errors)
    return AgentConfig(heartbeat=heartbeat, checks=checks, system_log_monitors=monitors["systemLogMonitors"],
                       custom_plugin_monitors=monitors["customPluginMonitors"] or (),
                       log_monitor_recover_after=recover, repair=repair)


def load_config(path: str | Path | None, *, registry: Mapping[str, CheckSpec]) -> AgentConfig:
    """The file at `path`, or the embedded defaults (every check on) when `path` is None."""
    if path is None:
        return parse_config("", source="<defaults>", registry=registry)
    try:
        text = read_text(path)
    except OSError as e:
        raise ConfigError([f"{path}: cannot read the agent config: {e.strerror}"]) from None
    if isinstance(text, Problem):
        raise ConfigError([f"{path}:{text.line}: <document>: cannot read the agent config: {text.message}"])
    return parse_config(text, source=str(path), registry=registry)
