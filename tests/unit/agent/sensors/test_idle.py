"""The idle pace of a check with nothing to look at: slowed to IDLE_INTERVAL, never sped up."""

from __future__ import annotations

import datetime as dt

from agent.model import CheckTiming
from agent.sensors.idle import IDLE_INTERVAL, idle_timing


def test_a_short_interval_is_slowed_to_the_idle_pace_keeping_the_timeout() -> None:
    timing = CheckTiming(interval=dt.timedelta(seconds=30), timeout=dt.timedelta(seconds=7))
    assert idle_timing(timing) == CheckTiming(interval=IDLE_INTERVAL, timeout=dt.timedelta(seconds=7))


def test_a_configured_interval_above_the_idle_pace_stays() -> None:
    timing = CheckTiming(interval=IDLE_INTERVAL * 2)
    assert idle_timing(timing) == timing
