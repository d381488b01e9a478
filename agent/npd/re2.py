"""Patterns from configuration files, on the RE2 engine node-problem-detector's patterns are written for.

NPD's patterns are Go regexps: RE2 syntax, matched in time linear in the text. Python's `re` backtracks, and a
check's timeout cannot interrupt a regex: `(a+)+b` on a 40-byte kernel line hung the whole agent, the shipped
ProbeFailureStorm pattern took ~20 s per search on a line repeating its phrase 8 times, and every `.+`-led kernel
pattern was quadratic in the line's length. So every pattern a config brings (NPD JSON rules and filelog
`timestamp`/`message`, the shipped defaults included) is compiled by RE2 itself (the `google-re2` binding): the same
syntax and meaning as in NPD, linear time, and what RE2 refuses (backreferences, lookaround) refused at load with
RE2's own words. `\\d \\w \\s \\b` are ASCII, as in Go.

The work per line is bounded too (`MAX_MATCHED_LINE`, `MAX_MATCHED_BUFFER`): linear time is still time, and a log
line has no length limit of its own (journald and files; the kernel's is 1 KiB).
"""

from __future__ import annotations

from typing import Protocol, cast

import re2 as _engine  # google-re2

# A line is matched on its first 16 KiB. Kernel records are at most 1 KiB (printk), kubelet and runtime lines a few
# KiB; what a rule looks for is at a line's start (patterns are searched, so a match may start anywhere, and most
# end in `.*`), and a longer line is a dump (a stack, a config) whose tail no shipped rule reads.
MAX_MATCHED_LINE = 16 << 10
# A multi-line rule searches the buffer's newest lines up to 64 KiB in all: the match must end at the newest line
# (patterns are anchored at the end), so the oldest lines go first; bufferSize lines of 16 KiB could be 16 MiB.
MAX_MATCHED_BUFFER = 64 << 10


class Match(Protocol):
    def group(self, group: int | str = 0) -> str | None: ...

    def start(self, group: int = 0) -> int: ...


class Regex(Protocol):
    """What the log monitor uses of a compiled pattern (an RE2 pattern; Python's re.Pattern has the same shape)."""

    @property
    def groups(self) -> int: ...

    def search(self, text: str) -> Match | None: ...


def compile_rule_pattern(pattern: str) -> tuple[Regex, bool]:
    """(the pattern anchored at the end of the text as a whole, whether a match can span lines); ValueError with
    RE2's reason. NPD appends `\\z` to the text, so its top-level `A|B` anchors only `B`; here `(?:A|B)\\z`."""
    _compile(pattern, capture=False)  # alone first: refused as written (not as wrapped), and "a)|(b" is refused
    return _compile(f"(?:{pattern})\\z", capture=False), may_match_newline(pattern)


def compile_plain_pattern(pattern: str) -> Regex:
    """A pattern whose groups are read (filelog's `timestamp` and `message`: the last group)."""
    return _compile(pattern, capture=True)


def bounded(text: str) -> str:
    """The part of a line that is matched (MAX_MATCHED_LINE)."""
    return text if len(text) <= MAX_MATCHED_LINE else text[:MAX_MATCHED_LINE]


def _compile(pattern: str, *, capture: bool) -> Regex:
    options = _engine.Options()
    options.log_errors = False  # RE2 would print each refusal to stderr; the caller reports it with the field
    options.never_capture = not capture  # a rule only asks whether and where it matched: the fastest engines
    try:
        return cast(Regex, _engine.compile(pattern, options))
    except _engine.error as exc:
        reason = exc.args[0] if exc.args else "refused"
        reason = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
        raise ValueError(f"{reason} (RE2 syntax, as in node-problem-detector)") from None
    finally:
        # The binding keeps every pattern it compiled (an LRU of 128); each caller keeps its own, so the cache would
        # only hold a second copy of each (and the validation and newline-test compiles) for the agent's lifetime.
        _engine.purge()


def may_match_newline(pattern: str) -> bool:
    """Whether any piece of the pattern can match "\\n" (each escape and class is tried on RE2, not guessed; what
    is not understood counts as yes). If none can, a match always lies within one line, so the monitor searches only
    the newest line instead of the whole buffer (the same result: the pattern is anchored at the end)."""
    pos = 0
    while pos < len(pattern):
        char = pattern[pos]
        if char == "\\":
            end = _escape_end(pattern, pos)
            piece = pattern[pos:end]
        elif char == "[":
            end = _class_end(pattern, pos)
            piece = pattern[pos:end]
        elif char == "(" and pattern.startswith("(?", pos):
            end = pos + 2
            while end < len(pattern) and (pattern[end].isalpha() or pattern[end] == "-"):
                end += 1
            if pattern[end:end + 1] in (":", ")") and "s" in pattern[pos + 2:end].partition("-")[0]:
                return True  # a flag group turning on s: "." then matches a newline
            pos = end  # (a named group's "(?P<name>" or "(?<name>" holds nothing that matches)
            if pattern.startswith(("P<", "<"), pos):
                pos = max(pos, pattern.find(">", pos) + 1)
            continue
        else:
            if char == "\n":
                return True
            pos += 1
            continue
        if _piece_matches_newline(piece):
            return True
        pos = end
    return False


def _escape_end(pattern: str, pos: int) -> int:
    if pattern.startswith("\\Q", pos):
        end = pattern.find("\\E", pos + 2)
        return len(pattern) if end < 0 else end + 2
    if pattern.startswith(("\\x{", "\\p{", "\\P{"), pos):
        end = pattern.find("}", pos)
        return len(pattern) if end < 0 else end + 1
    if pattern.startswith("\\x", pos):
        return pos + 4
    if pattern.startswith(("\\p", "\\P"), pos):
        return pos + 3
    digits = pos + 1
    while digits < len(pattern) and digits < pos + 4 and pattern[digits] in "01234567":
        digits += 1
    return max(digits, pos + 2)


def _class_end(pattern: str, start: int) -> int:
    pos = start + 1
    if pattern.startswith("^", pos):
        pos += 1
    if pattern.startswith("]", pos):  # a leading ] is a literal
        pos += 1
    while pos < len(pattern):
        if pattern[pos] == "\\":
            pos = _escape_end(pattern, pos)
        elif pattern.startswith("[:", pos) and (end := pattern.find(":]", pos + 2)) > 0:
            pos = end + 2
        elif pattern[pos] == "]":
            return pos + 1
        else:
            pos += 1
    return len(pattern)


def _piece_matches_newline(piece: str) -> bool:
    """Does the escape or class consume a newline? (Zero-width ones, such as the end and word anchors, do not.)"""
    try:
        regex = _compile(piece, capture=False)
    except ValueError:
        return True  # the whole pattern is refused right after; be conservative until then
    return cast(_Full, regex).fullmatch("\n") is not None


class _Full(Protocol):
    def fullmatch(self, text: str) -> Match | None: ...
