"""Log line timestamps as NPD's filelog plugin reads them: a Go reference-time layout ("Jan _2 15:04:05") turned
into a strptime format, and a stamp without a year placed in the right one."""

from __future__ import annotations

import datetime as dt
import re

_GO_LAYOUT_TOKENS: tuple[tuple[str, str | None], ...] = (  # longest first where one token starts another
    ("January", "%B"), ("Monday", "%A"), ("2006", "%Y"), ("Z07:00", "%z"), ("-07:00", "%z"), ("Z0700", "%z"),
    ("-0700", "%z"), ("-07", None), ("Jan", "%b"), ("Mon", "%a"), ("MST", "%Z"), ("002", "%j"), ("_2", "%d"),
    ("01", "%m"), ("02", "%d"), ("03", "%I"), ("04", "%M"), ("05", "%S"), ("06", "%y"), ("15", "%H"),
    ("PM", "%p"), ("pm", "%p"), ("1", "%m"), ("2", "%d"), ("3", "%I"), ("4", "%M"), ("5", "%S"),
)


_GO_FRACTION = re.compile(r"[.,](?:0+|9+)(?![0-9])")  # fractional seconds: .000, .999999, ,000


def go_layout_to_strptime(layout: str) -> str:
    """Translate a Go reference-time layout ("Jan _2 15:04:05", "2006-01-02T15:04:05.000000-07:00")."""
    out, pos = [], 0
    used: dict[str, str] = {}  # directive -> the layout element that gave it: strptime refuses one used twice
    while pos < len(layout):
        fraction = _GO_FRACTION.match(layout, pos)
        if fraction is not None:
            if len(fraction.group()) - 1 > 6:
                raise ValueError("fractional seconds beyond microseconds are not supported")
            if "%f" in used:
                raise ValueError("the layout has fractional seconds twice")
            used["%f"] = fraction.group()
            out.append(f"{fraction.group()[0]}%f")
            pos = fraction.end()
            continue
        for token, directive in _GO_LAYOUT_TOKENS:
            if layout.startswith(token, pos):
                if directive is None:
                    raise ValueError(f"the layout element {token!r} has no strptime equivalent; use -0700 or -07:00")
                if directive in used:
                    raise ValueError(f"the layout elements {used[directive]!r} and {token!r} are the same field; "
                                     "name each field once")
                used[directive] = token
                out.append(directive)
                pos += len(token)
                break
        else:
            out.append("%%" if layout[pos] == "%" else layout[pos])
            pos += 1
    return "".join(out)


def parse_log_timestamp(text: str, strptime_format: str, *, now: dt.datetime, tz: dt.tzinfo | None) -> dt.datetime:
    """A log line's time in UTC. Without a zone in the layout the time is local (`tz`, or the process's zone).

    Syslog stamps carry no year: like NPD we take the current year, but a stamp more than a day in the future
    is from last year (a December line read in January). ValueError when the text does not fit the layout.
    """
    try:
        return _parse(text, strptime_format, now=now, tz=tz)
    except OverflowError as e:  # a stamp at year 1 or 9999 in a zone that moves it past datetime's ends
        raise ValueError(f"time out of range: {text!r:.60}") from e


def _parse(text: str, strptime_format: str, *, now: dt.datetime, tz: dt.tzinfo | None) -> dt.datetime:
    has_year = "%Y" in strptime_format or "%y" in strptime_format
    if has_year:
        return _aware(dt.datetime.strptime(text, strptime_format), tz).astimezone(dt.UTC)
    # The year is put in front rather than defaulted: strptime's default 1900 rejects Feb 29.
    year = (now.astimezone(tz) if tz is not None else now.astimezone()).year
    stamp = _aware(dt.datetime.strptime(f"{year} {text}", f"%Y {strptime_format}"), tz)
    if stamp > now + dt.timedelta(days=1):
        stamp = _aware(dt.datetime.strptime(f"{year - 1} {text}", f"%Y {strptime_format}"), tz)
    return stamp.astimezone(dt.UTC)


def _aware(stamp: dt.datetime, tz: dt.tzinfo | None) -> dt.datetime:
    if stamp.tzinfo is not None:
        return stamp
    return stamp.replace(tzinfo=tz) if tz is not None else stamp.astimezone()
