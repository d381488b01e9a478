"""The agent's contract types: a check's timing and the bounds the supervisor needs of it."""

from __future__ import annotations

import datetime as dt

from agent.bounds import field_problems
from agent.model import MIN_INTERVAL, CheckTiming, ConditionReport, Observation, Status

SECOND = dt.timedelta(seconds=1)


def problems(timing: CheckTiming) -> list[str]:
    return [str(problem) for problem in field_problems(timing)]


def test_the_default_timing_is_every_30s_with_10s_to_answer() -> None:
    assert CheckTiming() == CheckTiming(interval=30 * SECOND, timeout=10 * SECOND)
    assert problems(CheckTiming()) == []


def test_an_interval_under_a_second_is_refused_with_the_reason() -> None:
    assert problems(CheckTiming(interval=MIN_INTERVAL / 2, timeout=MIN_INTERVAL / 4)) == [
        "interval: must be at least 1s (a check's findings reach the Node at most once a second; sampling faster "
        "only costs CPU), got 500ms"]
    assert problems(CheckTiming(interval=MIN_INTERVAL, timeout=MIN_INTERVAL)) == []


def test_a_sampling_check_must_answer_within_its_interval() -> None:
    assert problems(CheckTiming(interval=5 * SECOND, timeout=6 * SECOND)) == [
        "timeout: must not be longer than interval (5s), got 6s"]
    assert problems(CheckTiming(timeout=dt.timedelta(0))) == ["timeout: must be positive, got 0s"]


def test_an_observation_without_findings_is_empty_and_error_free() -> None:
    now = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    observation = Observation("cpu", now)
    assert (observation.conditions, observation.events, observation.error) == ((), (), "")
    report = ConditionReport("CPUPressure", Status.TRUE, "HighPSI")
    assert Observation("cpu", now, (report,)).conditions[0].status == "True"  # a StrEnum: the API's text
