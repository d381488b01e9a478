"""The agent's contract types: what a check observes, with no Kubernetes types (STYLE: one contract module).

A check looks at the host and returns an `Observation`: the current status of each condition type it owns
(`ConditionReport`) and any one-off problems it saw (`EventReport`). The condition state machine, the
reporter and the API client live elsewhere; a check never imports them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

from agent.bounds import ZERO, Bounds, bounded


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


MIN_INTERVAL = dt.timedelta(seconds=1)


@dataclass(frozen=True)
class CheckTiming:
    """The supervisor runs a check's observations one after another, so a timeout over the interval would only
    delay the next one: a sampling check forbids it (a reading that late is stale); a probe with a long request
    timeout may allow it (`agent/services/healthz.py`'s `ProbeTiming`)."""

    interval: dt.timedelta = bounded(dt.timedelta(seconds=30), Bounds(
        at_least=MIN_INTERVAL, why="a check's findings reach the Node at most once a second; sampling faster only "
                                   "costs CPU"))
    timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), Bounds(above=ZERO, not_longer_than="interval"))


class Check(Protocol):
    """What the supervisor runs: `observe()` every `timing.interval`, cancelled after `timing.timeout`."""

    name: str
    condition_types: tuple[str, ...]  # every condition type this check may report (for ownership and deletion)

    @property
    def timing(self) -> CheckTiming: ...  # read each round: a log monitor's changes once it knows its source

    async def observe(self, now: dt.datetime) -> Observation: ...


@runtime_checkable
class WaitsForInput(Protocol):
    """A check whose source can tell when it has new input (the `/dev/kmsg` device, sd-journal's descriptor): the
    supervisor runs it as soon as `input_fd()` is readable, and at least every `timing.interval` for its timers,
    instead of polling. `input_fd()` is None while there is nothing to wait on (then the interval is a poll)."""

    def input_fd(self) -> int | None: ...


@runtime_checkable
class NpdMonitor(Protocol):
    """A node-problem-detector monitor (system log or custom plugin): `initial_conditions()` are the defaults its
    file declares, written for the types the Node does not carry yet, and `metrics_reporting` is its file's
    `metricsReporting` (false keeps its conditions out of the metrics)."""

    @property
    def metrics_reporting(self) -> bool: ...

    def initial_conditions(self) -> tuple[ConditionReport, ...]: ...


@runtime_checkable
class HoldsResources(Protocol):
    """A check that keeps something open between observations (an open journal, a healthz probe's keep-alive
    connection): the agent awaits `close()` once, at shutdown."""

    async def close(self) -> None: ...
