"""Reading a YAML node tree field by field, each mistake recorded as FILE:LINE: field.path: message.

The policy file is composed into nodes instead of loaded into dicts: each value keeps its line, duplicate keys stay
visible (a dict keeps only the last one), and a bare `true` (a YAML boolean) stays distinct from "True". A section
reader (`rules.py`, `default_evictor.py`, a strategy's `args.py`, ...) asks a `Reader` for typed values; a wrong one is
recorded and replaced by the default, so one run lists every problem in the file."""

from __future__ import annotations

import datetime as dt
import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import yaml

from nodemedic_common.durations import above_ceiling, below_floor, parse_duration
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR

DOCUMENT = "<document>"  # the field path of errors about the file as a whole
BAD = object()  # marks a value whose error is already recorded


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key{hint}; valid keys: {', '.join(allowed)}"


@dataclass
class Section:
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
class Reader:
    source: str
    loader: yaml.SafeLoader  # converts scalars exactly as yaml.safe_load would
    errors: list[tuple[int, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # accepted, but said on stderr (deprecated forms)
    secrets_dir: str = DEFAULT_SECRETS_DIR  # the only directory `{file: PATH}` secrets are read from (--secrets-dir)

    def error(self, node: yaml.Node, path: str, message: str) -> None:
        line = node.start_mark.line + 1
        self.errors.append((line, f"{self.source}:{line}: {path}: {message}"))

    def warn(self, node: yaml.Node, path: str, message: str) -> None:
        self.warnings.append(f"{self.source}:{node.start_mark.line + 1}: {path}: warning: {message}")

    def value(self, node: yaml.Node, path: str, *, secret: bool = False) -> object:
        """A scalar's Python value; a list or mapping comes back as-is for the caller to reject with its type.
        `secret`: the value may be a credential, and an error never repeats it (it goes to stderr and an Event)."""
        if not isinstance(node, yaml.ScalarNode):
            return node
        try:
            return self.loader.construct_object(node)
        except (yaml.YAMLError, ValueError, TypeError) as e:
            self.error(node, path, "unreadable value (not shown: it may be a credential)" if secret
                       else f"unreadable value {node.value!r}: {e}")
            return BAD

    def wrong(self, node: yaml.Node, path: str, expected: str, got: object, *, secret: bool = False) -> None:
        if got is BAD:
            return
        if secret:  # the kind of value only: a token written unquoted may read as a number or a date
            self.error(node, path, f"must be {expected}, got {_kind(got)} (not shown: it may be a credential)")
            return
        message = f"must be {expected}, got {_describe(got)}"
        if expected == "a string" and isinstance(node, yaml.ScalarNode) and got is not None:
            message += f"; quote it if you meant the text: \"{node.value}\""
        self.error(node, path, message)

    def mapping(self, node: yaml.Node, path: str, allowed: Sequence[str] | None) -> Section:
        """The mapping's keys, checked: strings, no duplicates and, when `allowed` is given, no unknown names."""
        m = Section(node, path)
        if is_null(node):
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

    def section(self, parent: Section, key: str, allowed: Sequence[str] | None, *, required: bool = False) -> Section:
        """parent[key] as a mapping; absent or null reads as an empty one (and is an error when required)."""
        node = parent.values.get(key)
        if node is not None:
            m = self.mapping(node, parent.at(key), allowed)
            m.anchor = parent.key_nodes[key]
            return m
        if required and parent.present:
            self.error(parent.where(), parent.at(key), "required")
        return Section(parent.node, parent.at(key), parent.anchor, present=not required)

    def sequence(self, parent: Section, key: str) -> list[tuple[yaml.Node, str]] | None:
        """parent[key]'s items with their paths; None when absent or null, [] (after an error) when not a list."""
        node = parent.values.get(key)
        if node is None or is_null(node):
            return None
        if not isinstance(node, yaml.SequenceNode):
            self.wrong(node, parent.at(key), "a list", self.value(node, parent.at(key)))
            return []
        return [(item, f"{parent.at(key)}[{i}]") for i, item in enumerate(node.value)]

    def text(self, m: Section, key: str, default: str = "", *, required: bool = False,
             check: Callable[[str], str | None] | None = None, secret: bool = False) -> str:
        """m[key] as a string. `secret`: a credential's field (a sink URL, a header): no error quotes the value;
        `check` must not either."""
        node = m.values.get(key)
        if node is None:
            if required and m.present:
                self.error(m.where(), m.at(key), "required")
            return default
        got = self.value(node, m.at(key), secret=secret)
        if not isinstance(got, str):
            self.wrong(node, m.at(key), "a string", got, secret=secret)
            return default
        if required and not got:
            self.error(node, m.at(key), "must not be empty")
            return default
        problem = check(got) if check else None
        if problem:
            self.error(node, m.at(key), problem)
            return default
        return got

    def flag(self, m: Section, key: str, default: bool) -> bool:
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if isinstance(got, bool):
            return got
        self.wrong(node, m.at(key), "true or false", got)
        return default

    def optional_integer(self, m: Section, key: str, default: int | None, *, minimum: int = 0,
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

    def integer(self, m: Section, key: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
        got = self.optional_integer(m, key, default, minimum=minimum, maximum=maximum, nullable=False)
        return default if got is None else got

    def percent(self, m: Section, key: str, default: float | None) -> float | None:
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

    def optional_duration(self, m: Section, key: str, default: dt.timedelta | None, *,
                          nullable: bool = True, positive: bool = False,
                          floor: tuple[dt.timedelta, str] | None = None,
                          ceiling: tuple[dt.timedelta, str] | None = None) -> dt.timedelta | None:
        """A duration; `floor` is the smallest value that does no harm and why, `ceiling` the largest (bounds.md)."""
        node = m.values.get(key)
        if node is None:
            return default
        got = self.value(node, m.at(key))
        if got is None and nullable:
            return None
        if got is BAD or not isinstance(node, yaml.ScalarNode):
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
        if floor is not None and (problem := below_floor(result, *floor)):
            self.error(node, m.at(key), problem)
            return default
        if ceiling is not None and (problem := above_ceiling(result, *ceiling)):
            self.error(node, m.at(key), problem)
            return default
        return result

    def duration(self, m: Section, key: str, default: dt.timedelta, *, positive: bool = False,
                 floor: tuple[dt.timedelta, str] | None = None,
                 ceiling: tuple[dt.timedelta, str] | None = None) -> dt.timedelta:
        got = self.optional_duration(m, key, default, nullable=False, positive=positive, floor=floor, ceiling=ceiling)
        return default if got is None else got

    def strings(self, parent: Section, key: str, check: Callable[[str], str | None]) -> tuple[str, ...] | None:
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

    def integers(self, parent: Section, key: str, *, minimum: int, maximum: int) -> tuple[int, ...] | None:
        items = self.sequence(parent, key)
        if items is None:
            return None
        out: list[int] = []
        for node, path in items:
            got = self.value(node, path)
            if isinstance(got, bool) or not isinstance(got, int):
                self.wrong(node, path, "an integer", got)
            elif not minimum <= got <= maximum:
                self.error(node, path, f"must be from {minimum} to {maximum}, got {got}")
            else:
                out.append(got)
        return tuple(out)

    def string_map(self, parent: Section, key: str, check_key: Callable[[str], str | None],
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


def is_null(node: yaml.Node) -> bool:
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _kind(value: object) -> str:
    """What `_describe` says without the value."""
    if value is None or isinstance(value, yaml.Node):
        return _describe(value)
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a number"}.get(type(value),
                                                                                      type(value).__name__)


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
