"""NPD's custom plugin monitor as a nodemedic check: run the configured plugins, turn their verdicts into reports.

One `observe()` runs every rule that is due, at most `concurrency` plugins at a time, each through `run_plugin`
(own process group, capped output, killed and reaped on timeout). Then, as NPD does:
- a temporary rule whose plugin says "problem" (exit 1) becomes a Warning event with the rule's reason and the
  plugin's message;
- the permanent rules of one condition decide it together: True with the first problem rule's reason and message;
  else Unknown (with the condition's default reason and the failing plugin's message) if any plugin could not tell;
  else False with the condition's default reason and message.

Differences from NPD, on purpose: a plugin that can't tell (Unknown) raises no event from a temporary rule, because
its reason would claim a problem nobody saw; and a declared condition that no permanent rule feeds is never
reported, because without evidence nodemedic keeps what is on the node. `skip_initial_status` is honoured for
what it is for: without it, `initial_conditions()` gives the declared defaults, which the agent writes only for
types the Node does not carry yet (a restart never resets a True condition, NPD's #304); with it, a type appears
only once its plugins have run.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import os
from collections.abc import Mapping, Sequence
from typing import Protocol

from agent.model import CheckTiming, ConditionReport, EventReport, Observation, Severity, Status
from agent.npd.plugin_config import PluginMonitorConfig, PluginRule
from agent.npd.plugin_runner import WORST_CASE_OVERHEAD, PluginResult, run_plugin
from agent.npd.vocabulary import RuleType

TIMEOUT_MARGIN = dt.timedelta(seconds=1)  # scheduling slack on top of the runner's own worst case


class PluginRunner(Protocol):
    """The shape of `run_plugin`; tests substitute a fake that returns canned results."""

    async def __call__(self, path: str | os.PathLike[str], args: Sequence[str] = (), *, timeout: float,
                       max_output: int, env: Mapping[str, str] | None = None) -> PluginResult: ...


class CustomPluginMonitor:
    """A `Check` over one custom-plugin-monitor file."""

    def __init__(self, config: PluginMonitorConfig, *, name: str = "", runner: PluginRunner = run_plugin,
                 env: Mapping[str, str] | None = None) -> None:
        self.name = name or config.source or "custom-plugin-monitor"
        self.config = config
        self.condition_types = tuple(c.type for c in config.conditions)
        self._runner = runner
        self._env = env
        rules = config.rules
        if not rules:  # `load` refuses such a file; a config built by hand gets the same answer
            raise ValueError(f"custom plugin monitor {self.name!r} has no rules to run")
        # Every rule's own interval is honoured by running it only when due; the check wakes for the most frequent.
        interval = min(r.invoke_interval for r in rules)
        # Worst case: every rule runs, in ceil(n / concurrency) waves, each as long as the slowest plugin can take.
        waves = math.ceil(len(rules) / config.plugin_config.concurrency)
        slowest = max(r.timeout for r in rules) + dt.timedelta(seconds=WORST_CASE_OVERHEAD)
        self.timing = CheckTiming(interval=interval, timeout=slowest * waves + TIMEOUT_MARGIN)
        self._last_run: dict[int, dt.datetime] = {}  # rule index -> when it last ran
        self._verdicts: dict[int, PluginResult] = {}  # permanent rule index -> its latest result
        self._reported: dict[str, ConditionReport] = {}  # condition type -> what we said last time

    @property
    def metrics_reporting(self) -> bool:
        return self.config.metrics_reporting

    def initial_conditions(self) -> tuple[ConditionReport, ...]:
        """The declared defaults (False), or none with `skip_initial_status`."""
        if self.config.plugin_config.skip_initial_status:
            return ()
        return tuple(ConditionReport(type=c.type, status=Status.FALSE, reason=c.reason, message=c.message)
                     for c in self.config.conditions)

    async def observe(self, now: dt.datetime) -> Observation:
        due = [i for i, rule in enumerate(self.config.rules) if self._is_due(i, rule, now)]
        # A fresh semaphore per round: a cancelled round (the supervisor's timeout) leaves nothing held behind.
        limit = asyncio.Semaphore(self.config.plugin_config.concurrency)
        async with asyncio.TaskGroup() as group:
            tasks = {i: group.create_task(self._run(self.config.rules[i], limit)) for i in due}
        events: list[EventReport] = []
        for i in due:
            rule, result = self.config.rules[i], tasks[i].result()
            self._last_run[i] = now
            if rule.type is RuleType.PERMANENT:
                self._verdicts[i] = result
            elif result.status is Status.TRUE:
                events.append(EventReport(reason=rule.reason, message=result.message, severity=Severity.WARNING))
        conditions = tuple(c for c in (self._condition(t) for t in self.condition_types) if c is not None)
        return Observation(check=self.name, at=now, conditions=conditions, events=tuple(events))

    def _is_due(self, index: int, rule: PluginRule, now: dt.datetime) -> bool:
        last = self._last_run.get(index)
        if last is None or now < last:  # never ran, or the clock went back
            return True
        # Half a wake-up of tolerance, so a tick that comes a hair early doesn't push the rule a whole interval.
        return now - last >= rule.invoke_interval - self.timing.interval / 2

    async def _run(self, rule: PluginRule, limit: asyncio.Semaphore) -> PluginResult:
        async with limit:
            return await self._runner(rule.path, rule.args, timeout=rule.timeout.total_seconds(),
                                      max_output=self.config.plugin_config.max_output_length, env=self._env)

    def _condition(self, condition_type: str) -> ConditionReport | None:
        verdicts = [(rule, self._verdicts[i]) for i, rule in enumerate(self.config.rules)
                    if rule.condition == condition_type and i in self._verdicts]
        if not verdicts:
            return None
        default = self.config.condition(condition_type)
        problem = next(((r, v) for r, v in verdicts if v.status is Status.TRUE), None)
        unknown = next((v for _, v in verdicts if v.status is Status.UNKNOWN), None)
        if problem is not None:
            report = ConditionReport(condition_type, Status.TRUE, problem[0].reason, problem[1].message)
        elif unknown is not None:
            report = ConditionReport(condition_type, Status.UNKNOWN, default.reason, unknown.message)
        else:
            report = ConditionReport(condition_type, Status.FALSE, default.reason, default.message)
        previous = self._reported.get(condition_type)
        if (previous is not None and not self.config.plugin_config.enable_message_change_based_condition_update
                and (previous.status, previous.reason) == (report.status, report.reason)):
            # NPD's default: only a new status or reason updates a condition; a plugin printing a counter or a
            # timestamp must not rewrite the node on every run.
            report = previous
        self._reported[condition_type] = report
        return report
