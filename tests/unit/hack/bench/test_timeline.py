"""hack/bench/lib/timeline.py: the moments of a fault the repair benchmark times, each the first time it was seen."""

from __future__ import annotations

import pytest

from hack.bench.lib.timeline import Timeline, seconds


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_moment_is_kept_the_first_time_its_probe_is_truthy_and_never_moves() -> None:
    clock = FakeClock()
    timeline = Timeline(clock=clock)
    clock.now = 101.0
    assert timeline.mark("tainted", False) is False
    clock.now = 102.5
    assert timeline.mark("tainted", {"nodemedic.io/x"}) == {"nodemedic.io/x"}
    clock.now = 110.0
    timeline.mark("tainted", True)
    assert timeline.get("tainted") == 2.5
    assert timeline.get("never seen") is None


def test_moments_come_out_in_the_order_they_happened_not_the_order_they_were_first_asked_about() -> None:
    clock = FakeClock()
    timeline = Timeline(clock=clock)
    clock.now = 103.0
    timeline.mark("gone", True)
    clock.now = 104.0
    timeline.mark("early", False)
    timeline.mark("late", True)
    assert timeline.ordered() == [("gone", 3.0), ("late", 4.0)]


def test_elapsed_counts_from_an_explicit_start() -> None:
    clock = FakeClock(50.0)
    assert Timeline(clock=clock, start=40.0).elapsed() == 10.0


@pytest.mark.parametrize(("value", "missing", "expected"), [
    (12.345, "-", "12.3 s"),
    (None, "-", "-"),
    (None, "never", "never"),
], ids=["seen", "not seen", "not seen, said otherwise"])
def test_seconds_print_with_one_decimal_or_the_word_for_missing(value: float | None, missing: str,
                                                                 expected: str) -> None:
    assert seconds(value, missing=missing) == expected
