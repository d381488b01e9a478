"""`timestamps`: Go reference-time layouts translated to strptime formats (fractions, zones, literal `%`, what has
no strptime equivalent and a field named twice refused), and log stamps parsed to UTC: a zone from the text, the
local zone given, a year-less syslog stamp in the current year or last year, Feb 29, and out-of-range stamps."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.npd.timestamps import go_layout_to_strptime, parse_log_timestamp

UTC = dt.UTC
PLUS2 = dt.timezone(dt.timedelta(hours=2))


@pytest.mark.parametrize(("layout", "expected"), [
    ("Jan _2 15:04:05", "%b %d %H:%M:%S"),
    ("2006-01-02T15:04:05.000000-07:00", "%Y-%m-%dT%H:%M:%S.%f%z"),
    ("2006-01-02 15:04:05,000 Z0700", "%Y-%m-%d %H:%M:%S,%f %z"),
    ("Monday, January 2 2006 3:04 PM MST", "%A, %B %d %Y %I:%M %p %Z"),
    ("06/01/02 03:04:05.999", "%y/%m/%d %I:%M:%S.%f"),
    ("2006.002", "%Y.%j"),
    ("at 15h, 100% sure", "at %Hh, %m00%% sure"),
])
def test_a_go_layout_becomes_the_equivalent_strptime_format(layout: str, expected: str) -> None:
    assert go_layout_to_strptime(layout) == expected


def test_a_fraction_beyond_microseconds_is_refused() -> None:
    with pytest.raises(ValueError, match="fractional seconds beyond microseconds are not supported"):
        go_layout_to_strptime("15:04:05.000000000")


def test_fractional_seconds_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="the layout has fractional seconds twice"):
        go_layout_to_strptime("15:04:05.000 .999")


def test_a_bare_hour_offset_has_no_strptime_equivalent_and_the_error_says_what_to_use() -> None:
    with pytest.raises(ValueError, match="'-07' has no strptime equivalent; use -0700 or -07:00"):
        go_layout_to_strptime("2006-01-02 15:04:05 -07")


def test_one_field_named_by_two_layout_elements_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match="the layout elements '_2' and '02' are the same field"):
        go_layout_to_strptime("Jan _2 02 15:04")


def test_a_stamp_with_its_own_zone_is_converted_to_utc_whatever_tz_is_given() -> None:
    now = dt.datetime(2026, 3, 1, tzinfo=UTC)
    stamp = parse_log_timestamp("2026-02-28T23:30:00.250000+02:00", "%Y-%m-%dT%H:%M:%S.%f%z", now=now, tz=UTC)
    assert stamp == dt.datetime(2026, 2, 28, 21, 30, 0, 250000, tzinfo=UTC)


def test_a_stamp_without_a_zone_is_read_in_the_given_tz() -> None:
    now = dt.datetime(2026, 3, 1, tzinfo=UTC)
    stamp = parse_log_timestamp("2026-02-28 12:00:00", "%Y-%m-%d %H:%M:%S", now=now, tz=PLUS2)
    assert stamp == dt.datetime(2026, 2, 28, 10, 0, tzinfo=UTC)
    assert stamp.tzinfo is UTC


def test_a_yearless_stamp_takes_the_current_year() -> None:
    now = dt.datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
    assert parse_log_timestamp("Jun 15 11:59:00", "%b %d %H:%M:%S", now=now, tz=UTC) == dt.datetime(
        2026, 6, 15, 11, 59, tzinfo=UTC)


def test_a_yearless_december_stamp_read_in_january_is_from_last_year() -> None:
    now = dt.datetime(2027, 1, 2, 0, 5, tzinfo=UTC)
    assert parse_log_timestamp("Dec 31 23:59:00", "%b %d %H:%M:%S", now=now, tz=UTC) == dt.datetime(
        2026, 12, 31, 23, 59, tzinfo=UTC)


def test_a_yearless_stamp_less_than_a_day_ahead_stays_in_the_current_year() -> None:
    now = dt.datetime(2026, 6, 15, 12, 0, tzinfo=UTC)  # a clock a little behind the logger's
    assert parse_log_timestamp("Jun 16 11:00:00", "%b %d %H:%M:%S", now=now, tz=UTC).year == 2026


def test_the_year_of_a_yearless_stamp_is_the_current_year_in_the_logs_zone() -> None:
    now = dt.datetime(2026, 12, 31, 23, 0, tzinfo=UTC)  # already 2027 at +02:00
    assert parse_log_timestamp("Jan  1 01:00:00", "%b %d %H:%M:%S", now=now, tz=PLUS2) == dt.datetime(
        2026, 12, 31, 23, 0, tzinfo=UTC)


def test_a_yearless_feb_29_parses_in_a_leap_year() -> None:
    now = dt.datetime(2028, 3, 1, tzinfo=UTC)
    assert parse_log_timestamp("Feb 29 10:00:00", "%b %d %H:%M:%S", now=now, tz=UTC) == dt.datetime(
        2028, 2, 29, 10, 0, tzinfo=UTC)


def test_text_that_does_not_fit_the_layout_raises_value_error() -> None:
    with pytest.raises(ValueError):
        parse_log_timestamp("not a time", "%b %d %H:%M:%S", now=dt.datetime(2026, 1, 1, tzinfo=UTC), tz=UTC)


def test_a_stamp_pushed_past_datetimes_range_by_its_zone_is_a_value_error_naming_the_text() -> None:
    with pytest.raises(ValueError, match="time out of range: '9999-12-31 23:59:59"):
        parse_log_timestamp("9999-12-31 23:59:59 -0500", "%Y-%m-%d %H:%M:%S %z",
                            now=dt.datetime(2026, 1, 1, tzinfo=UTC), tz=UTC)
