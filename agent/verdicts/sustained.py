"""A level judged over a window and a message kept while its finding holds: how the cpu, memory and iostall checks
turn readings that change every poll into a condition that changes only when the finding does."""

from __future__ import annotations

import datetime as dt

from agent.model import ConditionReport, Status
from nodemedic_common.durations import format_duration


class Sustained:
    """A level that counts only once it has held for `window`: the hysteresis of CPUPressure and MemoryExhaustion.

    The decided state flips to True after every observation for `window` was over the threshold, and back to False
    after every observation for `window` was below it; a mixed window keeps the previous state. Both directions use
    the same window, so a load that hovers at the threshold cannot flap the condition faster than once per window.

    Until a full window of agreeing observations exists the state is None (undecided): right after the agent
    starts it has no evidence either way, so the check stays silent and the Node keeps the status it carried
    (claiming False would wipe out a True the agent saw before it restarted).
    A bad reading breaks the run (we cannot say the level held through it) but keeps the decided state.
    """

    def __init__(self, window: dt.timedelta) -> None:
        self.window = window
        self.state: bool | None = None
        self._over: bool | None = None  # the level of the current run of agreeing observations
        self._since: dt.datetime | None = None  # when that run started

    def update(self, over: bool, now: dt.datetime) -> bool | None:
        # A clock that went backwards cannot prove anything held; restart the run rather than trust it.
        if self._over is not over or self._since is None or now < self._since:
            self._over, self._since = over, now
        if now - self._since >= self.window:
            self.state = over
        return self.state

    def interrupt(self) -> None:
        self._over = self._since = None


class StickyReport:
    """Keeps a condition's message while its finding holds.

    Messages carry live numbers (percentages, load); re-sending them every observation would PATCH the Node every
    interval, since the reporter writes on any change. So the report made when the finding last changed is kept
    until `key` (status, reason and whatever else names the finding) changes; its numbers are those that decided.
    """

    def __init__(self) -> None:
        self._key: object = None
        self._report: ConditionReport | None = None

    def __call__(self, report: ConditionReport, key: object) -> ConditionReport:
        if self._report is not None and key == self._key:
            return self._report
        self._key, self._report = key, report
        return report


class SustainedCondition:
    """One condition type over a `Sustained` window with a `StickyReport`: undecided (None) until a window of
    agreeing observations, then True (`true_reason`) or False (`false_reason`) with what the check saw; a reading
    that failed is Unknown and breaks the run."""

    def __init__(self, condition_type: str, window: dt.timedelta, *, true_reason: str, false_reason: str) -> None:
        self._type = condition_type
        self._reasons = {True: true_reason, False: false_reason}
        self._window = window
        self._sustained = Sustained(window)
        self._sticky = StickyReport()

    @property
    def window_text(self) -> str:
        """"for 5m0s"; "now" for window 0 (`nodemedic-agent check`), where the current reading alone decides."""
        return f"for {format_duration(self._window)}" if self._window else "now"

    def unreadable(self, error: str) -> ConditionReport:
        self._sustained.interrupt()
        report = ConditionReport(self._type, Status.UNKNOWN, "BadSensorData", error)
        return self._sticky(report, (report.status, report.message))

    def judge(self, over: bool, now: dt.datetime, *, over_message: str, under_message: str) -> ConditionReport | None:
        """The condition after this observation; None while undecided, so the Node keeps what it carried."""
        state = self._sustained.update(over, now)
        if state is None:
            return None
        status = Status.TRUE if state else Status.FALSE
        report = ConditionReport(self._type, status, self._reasons[state], over_message if state else under_message)
        return self._sticky(report, report.status)
