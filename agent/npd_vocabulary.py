"""What node-problem-detector's system-log-monitor and custom-plugin-monitor files have in common: the two rule
types, the default conditions a monitor owns, and Go duration strings. Both loaders read these the same way."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from enum import StrEnum

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_HINT = 'use a Go duration such as "30s", "5m", "1h30m", "500ms" or "0"'
_GO_MAX_SECONDS = (2**63 - 1) / 1e9  # time.Duration is an int64 of nanoseconds: about 292 years


class RuleType(StrEnum):
    TEMPORARY = "temporary"  # a problem that happened: reported as an event
    PERMANENT = "permanent"  # a state of the node: sets its condition


@dataclass(frozen=True)
class DefaultCondition:
    """A condition the monitor owns, with the reason and message it carries while no rule reports a problem."""

    type: str
    reason: str
    message: str = ""


def parse_go_duration(text: str) -> dt.timedelta:
    """A Go duration string ("1m30s", "1.5h", "-5s", "0") as Go's time.ParseDuration reads it; ValueError otherwise."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return dt.timedelta(0)
    pos, seconds = 0, 0.0
    while pos < len(body):
        m = _DURATION_PART.match(body, pos)
        if m is None:
            raise ValueError(f"not a duration: {text!r}; {_DURATION_HINT}")
        seconds += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    if not body:
        raise ValueError(f"not a duration: {text!r}; {_DURATION_HINT}")
    if seconds > _GO_MAX_SECONDS:  # Go refuses it too ("invalid duration"); a timedelta would overflow
        raise ValueError(f"duration {text!r} is out of range: a Go duration is at most 2562047h47m16s")
    return dt.timedelta(seconds=-seconds if text.startswith("-") else seconds)
