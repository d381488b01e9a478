"""The maintenance window: when it is open (time zones, days, across midnight), when it next opens, its errors."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import parse_policy
from remediator.policy.window import MaintenanceWindow
from remediator.strategies import CATALOG

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
HEAD = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"


def at(text: str, tz: dt.tzinfo = dt.UTC) -> dt.datetime:
    """A moment given as local wall-clock time in `tz`: "2026-11-23 01:30" (a Monday)."""
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=tz)


NIGHT = MaintenanceWindow(start=dt.time(1), end=dt.time(5), time_zone="Europe/Berlin")
ACROSS_MIDNIGHT = MaintenanceWindow(start=dt.time(22), end=dt.time(2), days=frozenset({4}), time_zone="UTC")  # Fri


@pytest.mark.parametrize(("window", "moment", "expected"), [
    (MaintenanceWindow(), at("2026-11-23 12:00"), True),
    (NIGHT, at("2026-11-23 01:00", BERLIN), True),
    (NIGHT, at("2026-11-23 04:59", BERLIN), True),
    (NIGHT, at("2026-11-23 05:00", BERLIN), False),
    (NIGHT, at("2026-11-23 00:59", BERLIN), False),
    (NIGHT, at("2026-11-23 00:30"), True),  # 01:30 in Berlin (UTC+1 in November)
    (NIGHT, at("2026-11-23 04:30"), False),  # 05:30 in Berlin
    (ACROSS_MIDNIGHT, at("2026-11-27 23:00"), True),  # Friday night
    (ACROSS_MIDNIGHT, at("2026-11-28 01:59"), True),  # Saturday, still the window that opened on Friday
    (ACROSS_MIDNIGHT, at("2026-11-28 22:30"), False),  # Saturday night: no window opens on Saturdays
    (ACROSS_MIDNIGHT, at("2026-11-27 01:00"), False),  # Friday early: Thursday opened no window
], ids=["no-window", "opening-minute", "last-minute", "closing-minute", "before", "utc-inside", "utc-outside",
        "friday-night", "past-midnight", "other-day", "day-before"])
def test_the_window_is_open_in_its_own_time_zone_on_its_days(window: MaintenanceWindow, moment: dt.datetime,
                                                              expected: bool) -> None:
    assert window.is_open(moment) is expected


def test_the_next_opening_is_the_next_start_on_an_allowed_day() -> None:
    assert NIGHT.next_open(at("2026-11-23 12:00", BERLIN)) == at("2026-11-24 01:00", BERLIN).astimezone(dt.UTC)
    assert ACROSS_MIDNIGHT.next_open(at("2026-11-28 03:00")) == at("2026-12-04 22:00")
    inside = at("2026-11-23 02:00", BERLIN)
    assert NIGHT.next_open(inside) == inside


def test_a_policy_reads_the_window_and_dst_does_not_shift_local_hours() -> None:
    policy = parse_policy(HEAD + 'maintenanceWindow: {start: "01:00", end: "05:00", days: [Sun], '
                                 'timeZone: Europe/Berlin}\n', source="p.yaml", catalog=CATALOG)
    assert policy.window.describe() == "01:00-05:00 Europe/Berlin, Sun"
    assert policy.window.is_open(at("2026-07-05 01:30", BERLIN))  # summer time: UTC+2
    assert policy.window.is_open(at("2026-07-04 23:30"))
    assert not policy.window.is_open(at("2026-07-05 03:30"))  # 05:30 in Berlin


@pytest.mark.parametrize(("window", "error"), [
    ("{start: 22:00, end: '05:00'}", "p.yaml:3: maintenanceWindow.start: a time like \"01:00\" in quotes (YAML "
                                     "reads it unquoted as the number 1320)"),
    ("{start: '1am', end: '05:00'}", "p.yaml:3: maintenanceWindow.start: must be a time \"HH:MM\" (24 h)"),
    ("{start: '01:00'}", "p.yaml:3: maintenanceWindow.end: required"),
    ("{start: '01:00', end: '01:00'}", "p.yaml:3: maintenanceWindow.end: equal to start"),
    ("{start: '01:00', end: '05:00', days: [Monday]}", "p.yaml:3: maintenanceWindow.days[0]: must be one of Mon"),
    ("{start: '01:00', end: '05:00', days: []}", "p.yaml:3: maintenanceWindow.days: an empty list would never open"),
    ("{start: '01:00', end: '05:00', timeZone: Mars/Olympus}", "p.yaml:3: maintenanceWindow.timeZone: unknown time "
                                                               "zone 'Mars/Olympus'"),
    ("{start: '01:00', end: '05:00', hours: 4}", "p.yaml:3: maintenanceWindow.hours: unknown key"),
], ids=["unquoted-time", "not-a-time", "no-end", "empty", "bad-day", "no-days", "bad-zone", "unknown-key"])
def test_a_bad_window_is_refused_with_file_line_and_field(window: str, error: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_policy(HEAD + f"maintenanceWindow: {window}\n", source="p.yaml", catalog=CATALOG)
    assert any(m.startswith(error) for m in e.value.errors), e.value.errors
