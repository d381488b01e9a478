"""The one duration grammar of every file a user writes: agent config, remediation policy, NPD monitor JSON.

The text form is Go's `time.ParseDuration`, because node-problem-detector's files (which nodemedic reads unchanged)
already use it and descheduler users know it: an optional sign, then "0" or one or more decimal numbers each with
a unit, ns, us (µs), ms, s, m or h — "500ms", "30s", "5m", "1.5h", "1h30m", "1h1h" (= 2h, as Go reads it).
No spaces inside, no days. YAML files also take a plain number, read as seconds (`timeout: 2.5`), and ignore spaces
around the text. No file may give a negative duration: `parse_duration` refuses one, and the NPD loaders, which
call `parse_go_duration` directly (a JSON number is not a duration there), refuse it themselves.
"""

from __future__ import annotations

import datetime as dt
import math
import re

from nodemedic_common.inputs import quoted

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
GO_HINT = 'use a Go duration such as "30s", "5m", "1h30m", "500ms" or "0"'
YAML_HINT = "use a number with a unit h, m, s or ms (30s, 5m, 1h30m, 500ms) or a number of seconds"
# Go's time.Duration is an int64 of nanoseconds, about 292 years: Go refuses more, and so does every file here
# (a timedelta would overflow later, where the value is used, instead of at the line that gives it).
_GO_MAX_SECONDS = (2**63 - 1) / 1e9
_GO_MAX = "a duration is at most 2562047h47m16s (Go's limit)"
# The same limit for a duration given as a whole number of seconds (descheduler's `...Seconds` arguments).
MAX_SECONDS = int(_GO_MAX_SECONDS)


def parse_go_duration(text: str) -> dt.timedelta:
    """`text` as Go's time.ParseDuration reads it ("1m30s", "1.5h", "-5s", "0"); ValueError otherwise."""
    return _parse_text(text, GO_HINT)


def parse_duration(value: object) -> dt.timedelta:
    """A YAML value: a Go duration string or a number of seconds, never negative; ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a duration: {quoted(value)}; {YAML_HINT}")
    if isinstance(value, str):
        result = _parse_text(value.strip(), YAML_HINT, shown=value)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"not a duration: {quoted(value)}; {YAML_HINT}")
    elif abs(value) > _GO_MAX_SECONDS:
        raise ValueError(f"duration {quoted(value)} is too long: {_GO_MAX}")
    else:
        result = dt.timedelta(seconds=value)
    if result < dt.timedelta(0):
        raise ValueError(f"must not be negative, got {quoted(value)}")
    return result


def _parse_text(text: str, hint: str, *, shown: str | None = None) -> dt.timedelta:
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":  # the one unit-less duration Go accepts
        return dt.timedelta(0)
    seconds, pos = 0.0, 0
    while pos < len(body):
        part = _PART.match(body, pos)
        if part is None:
            break
        seconds += float(part.group(1)) * _SECONDS[part.group(2)]
        pos = part.end()
    if not body or pos < len(body):
        raise ValueError(f"not a duration: {quoted(shown if shown is not None else text)}; {hint}")
    if seconds > _GO_MAX_SECONDS:  # Go refuses it too ("invalid duration"); a timedelta would overflow
        raise ValueError(f"duration {quoted(shown if shown is not None else text)} is too long: {_GO_MAX}")
    return dt.timedelta(seconds=-seconds if text.startswith("-") else seconds)


def format_duration(value: dt.timedelta) -> str:
    """`value` in the same grammar, for messages: 0s, 500ms, 45s, 1m30s, 2h."""
    total_ms = round(value.total_seconds() * 1000)
    if total_ms < 1000:
        return f"{total_ms}ms" if total_ms else "0s"
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest / 1000:g}s" if rest else ""
    return f"{hours}h" * bool(hours) + f"{minutes}m" * bool(minutes) + seconds


def below_floor(value: dt.timedelta, floor: dt.timedelta, why: str) -> str | None:
    """The message for a setting under the smallest value that does no harm ("must be at least 10s (why), got
    0s"), or None. Each bound is chosen, and its reason given, where the setting is read (docs/bounds.md)."""
    if value >= floor:
        return None
    return f"must be at least {format_duration(floor)} ({why}), got {format_duration(value)}"
