"""Go duration strings as both NPD monitor file loaders read them (time.ParseDuration's grammar)."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.npd_vocabulary import parse_go_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", dt.timedelta(0)),
        ("5m", dt.timedelta(minutes=5)),
        ("10s", dt.timedelta(seconds=10)),
        ("1h30m", dt.timedelta(hours=1, minutes=30)),
        ("1.5h", dt.timedelta(minutes=90)),
        ("300ms", dt.timedelta(milliseconds=300)),
        ("2us", dt.timedelta(microseconds=2)),
        ("-1m", dt.timedelta(minutes=-1)),
    ],
)
def test_go_durations_parse(text: str, expected: dt.timedelta) -> None:
    assert parse_go_duration(text) == expected


@pytest.mark.parametrize("text", ["", "5", "m", "5 m", "5d", "1h 30m", "."])
def test_invalid_go_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_go_duration(text)


@pytest.mark.parametrize("text", ["2562048h", "90999999999h", "-90999999999h", "9" * 400 + "s"])
def test_a_duration_beyond_gos_int64_nanoseconds_is_refused_not_an_overflow(text: str) -> None:
    # Found by tests/unit/fuzz: "90999999999h" raised OverflowError out of the plugin monitor loader.
    with pytest.raises(ValueError, match="out of range"):
        parse_go_duration(text)
    assert parse_go_duration("2562047h") == dt.timedelta(hours=2562047)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("300ms", 0.3), ("1.5h", 5400), ("2h45m", 9900), ("1m30s", 90), ("-5s", -5), ("10us", 1e-5),
     ("10µs", 1e-5), (".5s", 0.5), ("1h0m0.5s", 3600.5)],
    ids=["zero", "ms", "fractional-hours", "hours-minutes", "minutes-seconds", "negative", "us", "micro-sign",
         "leading-dot", "three-parts"],
)
def test_durations_are_read_like_go(text, seconds):
    assert parse_go_duration(text).total_seconds() == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "5", "5 s", "1d", "s", "-", "1m 30s"],
                         ids=["empty", "no-unit", "space", "days", "unit-only", "sign-only", "inner-space"])
def test_a_malformed_duration_is_refused(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_go_duration(text)
