"""Bounds on the configuration files both programs read (the remediation policy, the agent config, NPD's JSON),
checked before anything recursive or expanding touches their contents.

PyYAML composes a document recursively and expands aliases by reference: a file nested a thousand levels deep
raised RecursionError (a crash at start, a silently skipped reload), and a few lines of "billion laughs" aliases
became a tree that a comparison or an error message walked for minutes. The text is therefore first scanned as a
flat stream of parser events (PyYAML's parser keeps its own stack, so deep nesting costs no recursion), counting
depth and the size every alias expands to. Each problem comes back as a line and a message, which the caller's
reader words as its file's other errors are worded before it raises ConfigError (config_errors.py).
"""

from __future__ import annotations

import os
import reprlib
from dataclasses import dataclass

import yaml

MAX_FILE_BYTES = 4 << 20  # 4 MiB: the shipped policy is ~12 KiB; a ConfigMap holds at most 1 MiB
MAX_DEPTH = 64  # nested lists/mappings; the deepest real setting (a label selector in a strategy) is ~8
MAX_NODES = 100_000  # YAML nodes after alias expansion; a 1000-rule policy is ~15,000
MAX_QUOTED = 200  # characters of a user's value an error message repeats


@dataclass(frozen=True)
class Problem:
    line: int  # 1-based
    message: str


def read_text(path: str | os.PathLike[str]) -> str | Problem:
    """The file's text, or the Problem that it is over MAX_FILE_BYTES or not UTF-8; OSError as open() raises it.
    Only MAX_FILE_BYTES + 1 bytes are ever read, whatever the file's size."""
    with open(path, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        return Problem(1, f"the file is larger than {MAX_FILE_BYTES >> 20} MiB, the bound on a config file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        return Problem(line, f"not UTF-8 text: byte 0x{data[e.start]:02x} at offset {e.start} ({e.reason})")


@dataclass
class _Open:
    anchor: str | None
    nodes: int = 1  # itself and, so far, what it holds (aliases expanded)


def yaml_problem(text: str) -> Problem | None:
    """A Problem when `text` nests deeper than MAX_DEPTH or its aliases expand past MAX_NODES, else None.
    yaml.YAMLError for a syntax error, as composing it would raise."""
    sizes: dict[str, int] = {}  # anchor -> nodes it expands to
    stack: list[_Open] = []
    closed = 0  # nodes of finished top-level values (all documents)
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1 if event.start_mark else 1
        if isinstance(event, yaml.CollectionStartEvent):
            if len(stack) >= MAX_DEPTH:
                return Problem(line, f"nested deeper than {MAX_DEPTH} levels, the bound on a config file")
            stack.append(_Open(event.anchor))
            continue
        added = _expanded(event, stack, sizes)
        if stack:
            stack[-1].nodes += added
        else:
            closed += added
        if closed + sum(o.nodes for o in stack) > MAX_NODES:
            return Problem(line, f"expands to more than {MAX_NODES} values (YAML aliases, as in \"billion laughs\"), "
                                 "the bound on a config file")
    return None


def _expanded(event: yaml.Event, stack: list[_Open], sizes: dict[str, int]) -> int:
    """How many nodes `event` completes, aliases expanded; a finished anchored node's size goes into `sizes`."""
    if isinstance(event, yaml.CollectionEndEvent):
        done = stack.pop()
        if done.anchor:
            sizes[done.anchor] = done.nodes
        return done.nodes
    if isinstance(event, yaml.ScalarEvent):
        if event.anchor:
            sizes[event.anchor] = 1
        return 1
    if isinstance(event, yaml.AliasEvent):
        return sizes.get(event.anchor or "", 1)
    return 0  # stream and document boundaries


def json_depth_problem(document: object) -> str | None:
    """Why a decoded JSON document is nested deeper than MAX_DEPTH, else None (walked without recursion)."""
    stack: list[tuple[object, int]] = [(document, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels, the bound on a config file"
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    return None


_QUOTE = reprlib.Repr()  # Python 3.11's takes no arguments
_QUOTE.maxlevel, _QUOTE.maxdict, _QUOTE.maxlist, _QUOTE.maxtuple, _QUOTE.maxset = 3, 4, 4, 4, 4
_QUOTE.maxstring, _QUOTE.maxother, _QUOTE.maxlong = MAX_QUOTED, MAX_QUOTED, 40


def quoted(value: object) -> str:
    """repr(value) for an error message, bounded (reprlib: a few items per level, three levels, long strings cut):
    a user's value may be huge, and repr of a shared, alias-expanded tree walks every path through it."""
    return _QUOTE.repr(value)
