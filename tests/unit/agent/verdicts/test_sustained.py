"""A level sustained over a window, a message kept while its finding holds, and the condition made of both."""

from __future__ import annotations

import datetime as dt

from agent.model import ConditionReport, Status
from agent.verdicts.sustained import StickyReport, Sustained, SustainedCondition

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def test_a_level_counts_once_it_held_for_the_window_and_a_mixed_window_keeps_the_state() -> None:
    sustained = Sustained(2 * MINUTE)
    assert sustained.update(True, NOW) is None  # no evidence yet: undecided
    assert sustained.update(True, NOW + MINUTE) is None
    assert sustained.update(True, NOW + 2 * MINUTE) is True
    assert sustained.update(False, NOW + 3 * MINUTE) is True  # below for a minute only
    sustained.interrupt()  # a bad reading: the run starts again, the state stays
    assert sustained.update(False, NOW + 4 * MINUTE) is True
    assert sustained.update(False, NOW + 6 * MINUTE) is False


def test_the_report_is_kept_while_its_finding_holds() -> None:
    sticky = StickyReport()
    first = ConditionReport("CPUPressure", Status.TRUE, "HighPSI", "some avg60=91.0%")
    assert sticky(first, (Status.TRUE, "HighPSI")) is first
    moved = ConditionReport("CPUPressure", Status.TRUE, "HighPSI", "some avg60=95.0%")
    assert sticky(moved, (Status.TRUE, "HighPSI")) is first  # the numbers moved, the finding did not
    cleared = ConditionReport("CPUPressure", Status.FALSE, "NoPressure", "some avg60=10.0%")
    assert sticky(cleared, (Status.FALSE, "NoPressure")) is cleared


def condition(window: dt.timedelta = 2 * MINUTE) -> SustainedCondition:
    return SustainedCondition("CPUPressure", window, true_reason="CPUOverloaded", false_reason="CPUNotOverloaded")


def test_the_condition_is_silent_until_decided_then_keeps_its_message_while_the_finding_holds() -> None:
    level = condition()
    assert level.window_text == "for 2m0s"
    assert level.judge(True, NOW, over_message="over 91%", under_message="under") is None
    level.judge(True, NOW + MINUTE, over_message="over 92%", under_message="under")
    decided = level.judge(True, NOW + 2 * MINUTE, over_message="over 93%", under_message="under")
    assert decided == ConditionReport("CPUPressure", Status.TRUE, "CPUOverloaded", "over 93%")
    assert level.judge(True, NOW + 3 * MINUTE, over_message="over 99%", under_message="under") is decided


def test_a_failed_reading_is_unknown_and_restarts_the_window() -> None:
    level = condition(window=dt.timedelta(0))
    assert level.window_text == "now"  # window 0: the current reading alone decides
    cleared = level.judge(False, NOW, over_message="over", under_message="under 10%")
    assert cleared == ConditionReport("CPUPressure", Status.FALSE, "CPUNotOverloaded", "under 10%")
    unknown = level.unreadable("/proc/loadavg: empty")
    assert unknown == ConditionReport("CPUPressure", Status.UNKNOWN, "BadSensorData", "/proc/loadavg: empty")
    assert level.unreadable("/proc/loadavg: empty") is unknown
