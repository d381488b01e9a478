"""What node-problem-detector's system-log-monitor and custom-plugin-monitor files have in common: the two rule
types, and the default conditions a monitor owns. (Their Go duration strings: `nodemedic_common.durations`.)"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# The kubelet writes these on every heartbeat; a monitor declaring one would fight it for the condition (and the
# reporter refuses to start with one), so both NPD loaders refuse them at load.
KUBELET_CONDITIONS = frozenset({"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"})


class RuleType(StrEnum):
    TEMPORARY = "temporary"  # a problem that happened: reported as an event
    PERMANENT = "permanent"  # a state of the node: sets its condition


@dataclass(frozen=True)
class DefaultCondition:
    """A condition the monitor owns, with the reason and message it carries while no rule reports a problem."""

    type: str
    reason: str
    message: str = ""
