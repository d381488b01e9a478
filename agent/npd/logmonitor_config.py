"""Load node-problem-detector's system-log-monitor JSON as it is, so users can bring their rule files.

Field names, defaults and matching semantics follow NPD (`plugin`, `pluginConfig`, `logPath`, `lookback`,
`delay`, `skipList`, `bufferSize` = 10, `source`, `metricsReporting`, `conditions[]`, `rules[]`). Like Go's
encoding/json, keys match case-insensitively and unknown keys are ignored, but each ignored key is collected as
a warning, and a missing required field is an error that names the unknown key it was probably meant to be.
Every problem in a file is reported at once, each as `FILE: field.path: message`.

Differences from NPD, on purpose:
- `plugin: journald` reads the host's journal through libsystemd, in process (`agent/logsources/journald.py`);
  `pluginConfig.source` is matched against SYSLOG_IDENTIFIER as in NPD, and `logPath` (a journal directory) is
  optional: without it the host root's /var/log/journal and /run/log/journal are both read.
- A permanent rule must name a condition declared in `conditions[]` (NPD silently never sets it), and a
  condition type the kubelet owns (`Ready`, `MemoryPressure`, ...) is refused.
- Patterns are RE2 (Go) syntax and run on RE2 itself (`agent/npd/re2.py`): linear time, NPD's meaning, and what
  RE2 refuses (backreferences, lookaround) is an error naming the field. A line is matched on its first 16 KiB and
  a multi-line rule on the buffer's newest 64 KiB (`MAX_MATCHED_LINE`, `MAX_MATCHED_BUFFER`).
- The end anchor wraps the whole pattern (`(?:PATTERN)\\Z`); NPD appends `\\z` to the text, so a top-level
  `A|B` there anchors only `B`.
- `logPath` is honoured for kmsg too (default /dev/kmsg; NPD always reads /dev/kmsg), so a fixture file or FIFO
  in the same record format can stand in for the kernel.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from agent.npd.re2 import Regex, compile_plain_pattern, compile_rule_pattern
from agent.npd.timestamps import go_layout_to_strptime
from agent.npd.vocabulary import KUBELET_CONDITIONS, DefaultCondition, RuleType
from nodemedic_common.config_errors import ConfigError
from nodemedic_common.durations import parse_go_duration
from nodemedic_common.inputs import MAX_DEPTH, Problem, json_depth_problem, read_text

DEFAULTS_DIR = Path(__file__).parents[1] / "defaults"
# The monitors an agent runs when its config names none (`systemLogMonitors` unset). readonly-monitor.json, in
# node-problem-detector's own default set, is shipped for its users but not run: the filesystem check owns
# ReadonlyFilesystem (it sees the current mount state; a log line only says a remount happened once).
# The kernel log's, and the journal's: every journald monitor shares one journal reader
# (agent/logsources/journal_hub.py), and a host without a journal opens none.
DEFAULT_MONITORS = tuple(DEFAULTS_DIR / name for name in (
    "kernel-monitor.json", "gpu-monitor.json", "systemd-journal-monitor.json", "kubelet-journal-monitor.json",
    "containerd-journal-monitor.json", "smartd-journal-monitor.json", "abrt-journal-monitor.json"))
DEFAULT_BUFFER_SIZE = 10
MAX_BUFFER_SIZE = 1000  # every line re-matches the whole buffer; beyond this a log flood would stall the agent


class Plugin(StrEnum):
    KMSG = "kmsg"
    FILELOG = "filelog"
    JOURNALD = "journald"



@dataclass(frozen=True)
class PluginConfig:
    """filelog's line translation: `timestamp` and `message` regexes (the last group is used), Go time layout."""

    timestamp: Regex | None = None
    message: Regex | None = None
    timestamp_format: str = ""  # the Go layout as written, e.g. "Jan _2 15:04:05"
    strptime_format: str = ""  # the same layout for datetime.strptime
    source: str = ""  # journald: the SYSLOG_IDENTIFIER to read



@dataclass(frozen=True)
class Rule:
    type: RuleType
    reason: str
    pattern: str  # as written (RE2 syntax)
    regex: Regex  # RE2, anchored at the end of the text searched
    spans_lines: bool  # False when the pattern cannot match a newline: then only the newest line is searched
    condition: str = ""  # permanent rules only
    pattern_generated_message_suffix: str = ""


@dataclass(frozen=True)
class LogMonitorConfig:
    path: Path
    plugin: Plugin
    log_path: str
    source: str
    rules: tuple[Rule, ...]
    conditions: tuple[DefaultCondition, ...] = ()
    plugin_config: PluginConfig = PluginConfig()
    lookback: dt.timedelta = dt.timedelta(0)
    delay: dt.timedelta = dt.timedelta(0)
    skip_list: tuple[str, ...] = ()
    buffer_size: int = DEFAULT_BUFFER_SIZE
    metrics_reporting: bool = True
    warnings: tuple[str, ...] = ()  # ignored keys, as "FILE: field: message"


_TOP_KEYS = ("plugin", "pluginConfig", "logPath", "lookback", "delay", "skipList", "bufferSize", "source",
             "metricsReporting", "conditions", "rules")
_REQUIRED_TOP = ("plugin", "rules")
_PLUGIN_CONFIG_KEYS = ("timestamp", "message", "timestampFormat", "source")
_CONDITION_KEYS = ("type", "reason", "message")
_RULE_KEYS = ("type", "condition", "reason", "pattern", "patternGeneratedMessageSuffix")
_DEFAULT_LOG_PATHS = {Plugin.KMSG: "/dev/kmsg"}


def load(path: Path | str) -> LogMonitorConfig:
    """Read and validate one system-log-monitor file; ConfigError lists every problem."""
    path = Path(path)
    try:
        text = read_text(path)
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc}"]) from None
    if isinstance(text, Problem):
        raise ConfigError([f"{path}:{text.line}: cannot read: {text.message}"])
    return loads(text, path=path)


def loads(text: str, *, path: Path | str = "<string>") -> LogMonitorConfig:
    path = Path(path)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}"]) from None
    except RecursionError:  # the decoder recurses per level: far deeper than MAX_DEPTH, refused alike
        raise ConfigError([f"{path}: <document>: nested deeper than {MAX_DEPTH} levels"]) from None
    if problem := json_depth_problem(document):
        raise ConfigError([f"{path}: <document>: {problem}"])
    return _Parser(path).document(document)


class _Parser:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, field: str, message: str) -> None:
        self.errors.append(f"{self.path}: {field}: {message}")

    def fields(self, value: object, where: str, known: tuple[str, ...], required: tuple[str, ...] = (),
               ) -> dict[str, object] | None:
        """The known keys of one JSON object, matched like Go (case-insensitively); unknown keys are warnings."""
        if not isinstance(value, dict):
            self.error(where or "<document>", f"must be a JSON object, got {_json_type(value)}")
            return None
        found: dict[str, object] = {}
        unknown: list[str] = []
        for key, item in value.items():
            name = key if key in known else next((k for k in known if k.lower() == key.lower()), None)
            if name is None or (name in found and key != name):
                unknown.append(key)
            else:
                found[name] = item
        prefix = f"{where}." if where else ""
        for key in unknown:
            self.warnings.append(f"{self.path}: {prefix}{key}: unknown field, ignored")
        for key in required:
            if key not in found:
                close = difflib.get_close_matches(key, unknown, n=1, cutoff=0.6)
                hint = f" (found unknown field {close[0]!r}; a typo?)" if close else ""
                self.error(prefix + key, f"required field is missing{hint}")
        return found

    def string(self, fields: Mapping[str, object], key: str, where: str, *, default: str = "",
               non_empty: bool = False) -> str:
        value = fields.get(key, default)
        field = f"{where}.{key}" if where else key
        if not isinstance(value, str):
            self.error(field, f"must be a string, got {_json_type(value)}")
            return default
        if non_empty and key in fields and not value:
            self.error(field, "must not be empty")
        return value

    def duration(self, fields: Mapping[str, object], key: str) -> dt.timedelta:
        text = self.string(fields, key, "", default="0") or "0"  # NPD reads "" as "0"
        try:
            value = parse_go_duration(text)
        except ValueError as exc:
            self.error(key, str(exc))
            return dt.timedelta(0)
        if value < dt.timedelta(0):
            self.error(key, f"must not be negative, got {text!r}")
            return dt.timedelta(0)
        return value

    def document(self, document: object) -> LogMonitorConfig:
        top = self.fields(document, "", _TOP_KEYS, _REQUIRED_TOP)
        if top is None:
            raise ConfigError(self.errors)
        plugin = self.plugin(top)
        plugin_config = self.plugin_config(top.get("pluginConfig", {}), plugin)
        log_path = self.string(top, "logPath", "", default=_DEFAULT_LOG_PATHS.get(plugin, ""))
        if plugin is Plugin.FILELOG and not log_path:
            self.error("logPath", "required for the filelog plugin (the file to tail)")
        if "\x00" in log_path:  # no file has one; os.stat would raise ValueError at the first read
            self.error("logPath", "must not contain a NUL character")
        conditions = self.conditions(top.get("conditions", []))
        rules = self.rules(top.get("rules", []), {c.type for c in conditions})
        config = LogMonitorConfig(
            path=self.path, plugin=plugin, log_path=log_path, source=self.string(top, "source", ""),
            rules=rules, conditions=conditions, plugin_config=plugin_config, lookback=self.duration(top, "lookback"),
            delay=self.duration(top, "delay"), skip_list=self.skip_list(top.get("skipList", [])),
            buffer_size=self.buffer_size(top.get("bufferSize", 0)), metrics_reporting=self.metrics(top),
            warnings=tuple(self.warnings))
        if self.errors:
            raise ConfigError(self.errors)
        return config

    def plugin(self, top: Mapping[str, object]) -> Plugin:
        value = top.get("plugin", Plugin.KMSG.value)
        if value not in tuple(Plugin):
            self.error("plugin", f"must be one of kmsg, filelog, journald, got {value!r}")
            return Plugin.KMSG
        return Plugin(str(value))

    def journald_config(self, source: str) -> PluginConfig:
        if not source:
            self.error("pluginConfig.source", "required for the journald plugin (the SYSLOG_IDENTIFIER to read, "
                                              "e.g. \"kubelet\")")
        return PluginConfig(source=source)

    def plugin_config(self, value: object, plugin: Plugin) -> PluginConfig:
        fields = self.fields(value, "pluginConfig", _PLUGIN_CONFIG_KEYS)
        if fields is None:
            return PluginConfig()
        texts = {key: self.string(fields, key, "pluginConfig") for key in _PLUGIN_CONFIG_KEYS}
        if plugin is Plugin.JOURNALD:
            return self.journald_config(texts["source"])
        if plugin is not Plugin.FILELOG:
            return PluginConfig()  # kmsg lines carry their own time and message
        regexes: dict[str, Regex | None] = {}
        for key in ("timestamp", "message"):
            regexes[key] = None
            if texts[key]:
                try:
                    regexes[key] = compile_plain_pattern(texts[key])
                except ValueError as exc:
                    self.error(f"pluginConfig.{key}", f"invalid regular expression: {exc}")
        layout, strptime_format = texts["timestampFormat"], ""
        if bool(texts["timestamp"]) != bool(layout):
            missing = "timestampFormat" if texts["timestamp"] else "timestamp"
            self.error(f"pluginConfig.{missing}", "timestamp and timestampFormat go together: set both or neither")
        elif layout:
            try:
                strptime_format = go_layout_to_strptime(layout)
            except ValueError as exc:
                self.error("pluginConfig.timestampFormat", str(exc))
        return PluginConfig(timestamp=regexes["timestamp"], message=regexes["message"], timestamp_format=layout,
                            strptime_format=strptime_format)

    def conditions(self, value: object) -> tuple[DefaultCondition, ...]:
        if not isinstance(value, list):
            self.error("conditions", f"must be a list, got {_json_type(value)}")
            return ()
        result: list[DefaultCondition] = []
        for index, item in enumerate(value):
            where = f"conditions[{index}]"
            fields = self.fields(item, where, _CONDITION_KEYS, ("type", "reason"))
            if fields is None:
                continue
            kind = self.string(fields, "type", where, non_empty=True)
            if kind in KUBELET_CONDITIONS:
                self.error(f"{where}.type", f"{kind!r} is owned by the kubelet; choose another condition type")
            elif kind in {c.type for c in result}:
                self.error(f"{where}.type", f"duplicate condition type {kind!r}")
            result.append(DefaultCondition(type=kind, reason=self.string(fields, "reason", where, non_empty=True),
                                           message=self.string(fields, "message", where)))
        return tuple(result)

    def rules(self, value: object, declared: set[str]) -> tuple[Rule, ...]:
        if not isinstance(value, list):
            self.error("rules", f"must be a list, got {_json_type(value)}")
            return ()
        result: list[Rule] = []
        for index, item in enumerate(value):
            where = f"rules[{index}]"
            fields = self.fields(item, where, _RULE_KEYS, ("type", "reason", "pattern"))
            if fields is None:
                continue
            kind_text = self.string(fields, "type", where)
            kind = RuleType(kind_text) if kind_text in tuple(RuleType) else None
            if kind is None and "type" in fields:
                self.error(f"{where}.type", f"must be temporary or permanent, got {kind_text!r}")
            condition = self.string(fields, "condition", where)
            if kind is RuleType.PERMANENT:
                if not condition:
                    self.error(f"{where}.condition", "required for a permanent rule")
                elif condition not in declared:
                    self.error(f"{where}.condition", f"{condition!r} is not declared in conditions[] (it needs a "
                                                     "default reason and message)")
            reason = self.string(fields, "reason", where, non_empty=True)
            pattern = self.string(fields, "pattern", where, non_empty=True)
            suffix = self.string(fields, "patternGeneratedMessageSuffix", where)
            try:
                regex, spans_lines = compile_rule_pattern(pattern)
            except ValueError as exc:
                self.error(f"{where}.pattern", f"invalid regular expression: {exc}")
                continue
            if kind is not None:
                result.append(Rule(type=kind, reason=reason, pattern=pattern, regex=regex, spans_lines=spans_lines,
                                   condition=condition if kind is RuleType.PERMANENT else "",
                                   pattern_generated_message_suffix=suffix))
        return tuple(result)

    def skip_list(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.error("skipList", "must be a list of strings")
            return ()
        return tuple(item for item in value if item)  # "" is in every line: NPD would drop everything

    def buffer_size(self, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error("bufferSize", f"must be an integer, got {_json_type(value)}")
            return DEFAULT_BUFFER_SIZE
        if not 0 <= value <= MAX_BUFFER_SIZE:
            self.error("bufferSize", f"must be between 1 and {MAX_BUFFER_SIZE} (0 means the default, "
                                     f"{DEFAULT_BUFFER_SIZE}), got {value}")
            return DEFAULT_BUFFER_SIZE
        return value or DEFAULT_BUFFER_SIZE

    def metrics(self, top: Mapping[str, object]) -> bool:
        value = top.get("metricsReporting", True)
        if not isinstance(value, bool):
            self.error("metricsReporting", f"must be true or false, got {_json_type(value)}")
            return True
        return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    names = {str: "a string", int: "a number", float: "a number", list: "a list", dict: "an object"}
    return f"{names.get(type(value), type(value).__name__)} ({json.dumps(value)[:40]})"
