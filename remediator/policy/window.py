"""The `maintenanceWindow` section: evict only between given hours, on given days, in a given time zone.

descheduler users run it off-peak from a CronJob; nodemedic runs all the time, so the window is part of the policy.
Inside it, everything runs as usual. Outside it, no pod is evicted and no node is emptied for consolidation; the
taints of the rules still go on and come off, because keeping new pods away from a sick node disrupts nothing.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from dataclasses import dataclass

from remediator.policy.reader import Reader, Section

_WINDOW_KEYS = ("start", "end", "days", "timeZone")
DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_CLOCK = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


@dataclass(frozen=True)
class MaintenanceWindow:
    """Open from `start` to `end` local time on each of `days` (the day it opens); an `end` at or before `start`
    closes the next day. No `start`: always open (the section is absent)."""

    start: dt.time | None = None
    end: dt.time | None = None
    days: frozenset[int] = frozenset(range(7))  # 0 = Monday
    time_zone: str = "UTC"

    def is_open(self, now: dt.datetime) -> bool:
        if self.start is None or self.end is None:
            return True
        local = now.astimezone(zoneinfo.ZoneInfo(self.time_zone))
        # The window that opened today, or the one that opened yesterday and runs past midnight.
        return any(opened <= local < opened + self._length() for opened in self._openings(local, back=1, ahead=0))

    def next_open(self, now: dt.datetime) -> dt.datetime:
        """When the window next opens after `now` (UTC); `now` itself when it is open."""
        if self.start is None or self.is_open(now):
            return now
        local = now.astimezone(zoneinfo.ZoneInfo(self.time_zone))
        return min(o for o in self._openings(local, back=0, ahead=7) if o > local).astimezone(dt.UTC)

    def describe(self) -> str:
        if self.start is None or self.end is None:
            return "always"
        days = "every day" if len(self.days) == 7 else ",".join(DAYS[d] for d in sorted(self.days))
        return f"{self.start:%H:%M}-{self.end:%H:%M} {self.time_zone}, {days}"

    def _length(self) -> dt.timedelta:
        assert self.start is not None and self.end is not None
        start = dt.timedelta(hours=self.start.hour, minutes=self.start.minute)
        end = dt.timedelta(hours=self.end.hour, minutes=self.end.minute)
        return end - start if end > start else end - start + dt.timedelta(days=1)

    def _openings(self, local: dt.datetime, *, back: int, ahead: int) -> list[dt.datetime]:
        """The window's openings on the days from `back` days before `local` to `ahead` days after, local time."""
        assert self.start is not None
        out = []
        for offset in range(-back, ahead + 1):
            day = local.date() + dt.timedelta(days=offset)
            if day.weekday() in self.days:
                out.append(dt.datetime.combine(day, self.start, tzinfo=local.tzinfo))
        return out


def _clock(r: Reader, m: Section, key: str) -> dt.time | None:
    node = m.values.get(key)
    if node is None:
        if m.values:  # a window needs both ends
            r.error(m.where(), m.at(key), "required")
        return None
    got = r.value(node, m.at(key))
    if isinstance(got, int) and not isinstance(got, bool):
        # YAML 1.1 reads an unquoted 01:00 as the base-60 number 60.
        r.error(node, m.at(key), f'a time like "01:00" in quotes (YAML reads it unquoted as the number {got})')
        return None
    match = _CLOCK.fullmatch(got) if isinstance(got, str) else None
    if match is None:
        r.wrong(node, m.at(key), 'a time "HH:MM" (24 h)', got)
        return None
    return dt.time(int(match.group(1)), int(match.group(2)))


def _days(r: Reader, m: Section) -> frozenset[int]:
    items = r.sequence(m, "days")
    if items is None:
        return frozenset(range(7))
    days = set()
    for node, path in items:
        got = r.value(node, path)
        if got not in DAYS:
            r.wrong(node, path, f"one of {', '.join(DAYS)}", got)
            continue
        days.add(DAYS.index(str(got)))
    if items == [] and m.values["days"].value == []:  # an empty YAML list (not a scalar, reported above)
        r.error(m.values["days"], m.at("days"), "an empty list would never open the window; leave it out for every day")
    return frozenset(days) or frozenset(range(7))


def _time_zone_problem(name: str) -> str | None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name!r}: use an IANA name such as UTC or Europe/Berlin"
    return None


def read_window(r: Reader, top: Section) -> MaintenanceWindow:
    return read_window_at(r, top, "maintenanceWindow")


def read_window_at(r: Reader, parent: Section, key: str) -> MaintenanceWindow:
    """parent[key] as a window (also `repair.window`); absent or null: always open."""
    m = r.section(parent, key, _WINDOW_KEYS)
    if not m.values:
        return MaintenanceWindow()
    start, end = _clock(r, m, "start"), _clock(r, m, "end")
    if start is not None and start == end:
        r.error(m.line_node("end"), m.at("end"), "equal to start: the window would never (or always) be open; "
                                                  "leave the section out to act at any time")
    return MaintenanceWindow(start=start, end=end, days=_days(r, m),
                             time_zone=r.text(m, "timeZone", "UTC", check=_time_zone_problem))
