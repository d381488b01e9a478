"""The one duration grammar: Go duration text as the NPD loaders read it, and the YAML form (text or seconds)."""

from __future__ import annotations

import datetime as dt

import pytest

from nodemedic_common.durations import below_floor, format_duration, parse_duration, parse_go_duration, whole_seconds


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
    with pytest.raises(ValueError, match="too long: a duration is at most 2562047h47m16s"):
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


# --- the YAML form: agent config and remediation policy ---------------------------------------------------

DURATIONS = [
    ("500ms", dt.timedelta(milliseconds=500)),
    ("30s", dt.timedelta(seconds=30)),
    ("5m", dt.timedelta(minutes=5)),
    ("1h", dt.timedelta(hours=1)),
    ("1h30m", dt.timedelta(hours=1, minutes=30)),
    ("2h45m30s250ms", dt.timedelta(hours=2, minutes=45, seconds=30, milliseconds=250)),
    ("1.5h", dt.timedelta(minutes=90)),
    ("0", dt.timedelta(0)),
    ("0s", dt.timedelta(0)),
    ("1h1h", dt.timedelta(hours=2)),  # Go adds repeated units; the agent used to refuse this
    ("250us", dt.timedelta(microseconds=250)),
    (" 10s ", dt.timedelta(seconds=10)),
    (90, dt.timedelta(seconds=90)),
    (0, dt.timedelta(0)),
    (0.25, dt.timedelta(milliseconds=250)),
]


@pytest.mark.parametrize(("value", "expected"), DURATIONS, ids=[repr(v) for v, _ in DURATIONS])
def test_parse_duration_reads_go_style_text_and_plain_seconds(value: object, expected: dt.timedelta) -> None:
    assert parse_duration(value) == expected


NOT_DURATIONS = [
    ("", "not a duration"),
    ("30", "not a duration"),  # text needs a unit; only a YAML number means seconds
    ("30x", "not a duration"),
    ("5 m", "not a duration"),
    ("1h 30m", "not a duration"),
    ("m", "not a duration"),
    ("1d", "not a duration"),
    ("-5m", "negative"),
    (-1, "negative"),
    (-0.5, "negative"),
    (True, "not a duration"),  # bool is an int in Python; a YAML true is never a duration
    (None, "not a duration"),
    ([30], "not a duration"),
    (float("inf"), "not a duration"),
    (float("nan"), "not a duration"),
    (10**20, "too long"),
    (1e300, "too long"),
    ("99999999999h", "too long"),  # validate printed a traceback for it in the agent config
    (2562048 * 3600, "too long"),  # seconds as a number: the same limit as the text
    (-1e300, "too long"),
]


@pytest.mark.parametrize(("value", "message"), NOT_DURATIONS, ids=[repr(v) for v, _ in NOT_DURATIONS])
def test_parse_duration_rejects_malformed_and_negative_values(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_duration(value)


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (0.25, "250ms"), (45, "45s"), (90, "1m30s"), (7200, "2h0m0s"),
                                              (3661.5, "1h1m1.5s")])
def test_format_duration_writes_the_grammar_it_reads(seconds: float, text: str) -> None:
    assert format_duration(dt.timedelta(seconds=seconds)) == text
    assert parse_go_duration(text) == dt.timedelta(seconds=seconds)


@pytest.mark.parametrize(("value", "text"), [
    (dt.timedelta(minutes=1), "1m0s"),  # Go writes every unit below the largest: the remediator's messages always did
    (dt.timedelta(hours=2208, minutes=59, seconds=59), "2208h59m59s"),  # no days, as Go
    (dt.timedelta(microseconds=500), "500µs"),
    (dt.timedelta(microseconds=1500), "1.5ms"),
    (dt.timedelta(seconds=-5), "-5s"),
], ids=["minute", "hours", "micro", "milli", "negative"])
def test_format_duration_spells_a_duration_as_go_does(value: dt.timedelta, text: str) -> None:
    assert format_duration(value) == text
    assert parse_go_duration(text) == value


@pytest.mark.parametrize(("value", "whole"), [
    (dt.timedelta(minutes=5, microseconds=123456), dt.timedelta(minutes=5)),  # a clock's fraction is cut, not rounded
    (dt.timedelta(seconds=59.999), dt.timedelta(seconds=59)),
    (dt.timedelta(seconds=-3), dt.timedelta(0)),  # a clock stepped back
], ids=["fraction", "almost-a-minute", "negative"])
def test_whole_seconds_is_how_long_by_a_clock_as_a_message_says_it(value: dt.timedelta, whole: dt.timedelta) -> None:
    assert whole_seconds(value) == whole


def test_below_floor_names_the_floor_the_reason_and_the_value() -> None:
    floor = dt.timedelta(seconds=10)
    assert below_floor(dt.timedelta(seconds=10), floor, "why") is None
    assert below_floor(dt.timedelta(0), floor, "why") == "must be at least 10s (why), got 0s"
