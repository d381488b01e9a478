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
_MICROSECOND = dt.timedelta(microseconds=1)
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
    """`value` as Go's `time.Duration.String` writes it, the grammar the files are read in, so every message spells
    a duration one way: 0s, 250ms, 45s, 1m30s, 2h0m0s, 1h1m1.5s (exact to the microsecond, timedelta's unit)."""
    micros = value // _MICROSECOND
    sign, micros = ("-" if micros < 0 else ""), abs(micros)
    if micros == 0:
        return "0s"
    if micros < 1000:
        return f"{sign}{micros}µs"
    if micros < 1_000_000:
        return f"{sign}{_decimal(micros, 1000)}ms"
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds = f"{_decimal(rest, 1_000_000)}s"
    if hours:
        return f"{sign}{hours}h{minutes}m{seconds}"
    return f"{sign}{minutes}m{seconds}" if minutes else sign + seconds


def _decimal(value: int, unit: int) -> str:
    """`value` / `unit` (a power of ten) in decimal, without trailing zeros: (1500, 1000) -> "1.5"."""
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    return f"{whole}.{fraction:0{len(str(unit)) - 1}d}".rstrip("0")


def whole_seconds(value: dt.timedelta) -> dt.timedelta:
    """How long something has lasted by a clock, as a message says it: cut to whole seconds (a clock's fraction of a
    second is noise there, and would change the text on every cycle), and 0s when the clock stepped back."""
    return dt.timedelta(seconds=max(0, int(value.total_seconds())))


def below_floor(value: dt.timedelta, floor: dt.timedelta, why: str) -> str | None:
    """The message for a setting under the smallest value that does no harm ("must be at least 10s (why), got
    0s"), or None. Each bound is chosen, and its reason given, where the setting is read (docs/bounds.md)."""
    if value >= floor:
        return None
    return f"must be at least {format_duration(floor)} ({why}), got {format_duration(value)}"


def above_ceiling(value: dt.timedelta, ceiling: dt.timedelta, why: str) -> str | None:
    """The message for a setting over the largest value that does no harm ("must be at most 30m0s (why), got
    8760h0m0s"), or None; the twin of `below_floor`."""
    if value <= ceiling:
        return None
    return f"must be at most {format_duration(ceiling)} ({why}), got {format_duration(value)}"
