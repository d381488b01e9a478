"""What node-problem-detector's system-log-monitor and custom-plugin-monitor files have in common: the two rule
types, and the default conditions a monitor owns. (Their Go duration strings: `nodemedic_common.durations`.)"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RuleType(StrEnum):
    TEMPORARY = "temporary"  # a problem that happened: reported as an event
    PERMANENT = "permanent"  # a state of the node: sets its condition


@dataclass(frozen=True)
class DefaultCondition:
    """A condition the monitor owns, with the reason and message it carries while no rule reports a problem."""

    type: str
    reason: str
    message: str = ""
