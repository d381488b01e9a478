"""The agent's contract types: what a check observes, with no Kubernetes types (STYLE: one contract module).

A check looks at the host and returns an `Observation`: the current status of each condition type it owns
(`ConditionReport`) and any one-off problems it saw (`EventReport`). The condition state machine, the
reporter and the API client live elsewhere; a check never imports them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Status(StrEnum):
    TRUE = "True"  # the problem is present
    FALSE = "False"  # checked, no problem
    UNKNOWN = "Unknown"  # could not tell (bad sensor data, timeout, plugin error)


class Severity(StrEnum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass(frozen=True)
class ConditionReport:
    type: str  # e.g. "KernelDeadlock"; never a kubelet-owned type
    status: Status
    reason: str  # CamelCase, e.g. "TaskHung"
    message: str = ""


@dataclass(frozen=True)
class EventReport:
    reason: str  # CamelCase, e.g. "OOMKilling"
    message: str
    severity: Severity = Severity.WARNING


@dataclass(frozen=True)
class Observation:
    check: str  # the check's name, e.g. "cpu", "kernel-monitor"
    at: dt.datetime  # when it was observed (timezone-aware UTC)
    conditions: tuple[ConditionReport, ...] = ()
    events: tuple[EventReport, ...] = ()
    error: str = ""  # set when the check itself failed; its conditions are then Unknown


@dataclass(frozen=True)
class CheckTiming:
    interval: dt.timedelta = dt.timedelta(seconds=30)
    timeout: dt.timedelta = dt.timedelta(seconds=10)


class Check(Protocol):
    """What the supervisor runs: `observe()` every `timing.interval`, cancelled after `timing.timeout`."""

    name: str
    timing: CheckTiming
    condition_types: tuple[str, ...]  # every condition type this check may report (for ownership and deletion)

    async def observe(self, now: dt.datetime) -> Observation: ...

