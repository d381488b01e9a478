"""Whether a node autoscaler's own timestamp shows it running: its age against `autoscaler.activeWithin`.

An autoscaler's objects outlive it: cluster-autoscaler's status ConfigMap stays after the autoscaler is gone, and
Karpenter's CRDs after an uninstall. What only a running autoscaler keeps fresh is a time it writes itself, again
and again: cluster-autoscaler stamps its status ConfigMap at every loop (`--scan-interval`, 10s by default) and
Karpenter's leader renews its Lease every few seconds. A stamp older than `activeWithin` (or one that cannot be
read) is no evidence that nodes will come.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from nodemedic_common.durations import format_duration
from nodemedic_common.inputs import quoted

# cluster-autoscaler's ConfigMapLastUpdateFormat, Go's "2006-01-02 15:04:05.999999999 -0700 MST": the fraction is
# optional (trailing zeros dropped), the zone name is for people; the numeric offset is what counts.
_CA_TIME = re.compile(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,9}))? ([+-])(\d\d)(\d\d) \S+")
# A Kubernetes MicroTime or Time (RFC 3339, UTC as the API server writes it; an offset accepted).
_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")
# Clocks differ between machines: a stamp this far ahead of ours still counts as written now; further ahead, the
# writer's clock (or the stamp) is wrong and shows nothing.
CLOCK_SKEW = dt.timedelta(minutes=1)


def parse_cluster_autoscaler_time(text: str) -> dt.datetime:
    """A time as cluster-autoscaler writes it ("2026-03-01 12:00:00.123456789 +0000 UTC"); ValueError otherwise."""
    m = _CA_TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"{quoted(text)} is not a time as cluster-autoscaler writes it "
                         f"(2006-01-02 15:04:05.999999999 -0700 MST)")
    date, clock, fraction, sign, hours, minutes = m.groups()
    offset = dt.timedelta(hours=int(hours), minutes=int(minutes)) * (-1 if sign == "-" else 1)
    return _moment(date, clock, fraction, dt.timezone(offset) if abs(offset) < dt.timedelta(days=1) else None, text)


def parse_kube_time(text: str) -> dt.datetime:
    """A Kubernetes Time or MicroTime ("2026-03-01T12:00:00.123456Z"); ValueError otherwise."""
    m = _RFC3339.fullmatch(text)
    if m is None:
        raise ValueError(f"{quoted(text)} is not an RFC 3339 time")
    date, clock, fraction, zone = m.groups()
    tz = dt.UTC if zone == "Z" else _offset(zone)
    return _moment(date, clock, fraction, tz, text)


def _offset(zone: str) -> dt.timezone | None:
    offset = dt.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6])) * (-1 if zone[0] == "-" else 1)
    return dt.timezone(offset) if abs(offset) < dt.timedelta(days=1) else None


def _moment(date: str, clock: str, fraction: str | None, tz: dt.timezone | None, text: str) -> dt.datetime:
    if tz is None:
        raise ValueError(f"{quoted(text)} has an offset of a day or more")
    micros = (fraction or "").ljust(6, "0")[:6]  # a timedelta's unit; nanoseconds do not change an age
    try:
        return dt.datetime.fromisoformat(f"{date}T{clock}.{micros}").replace(tzinfo=tz)
    except ValueError:  # month 13, hour 25: the shape was right, the date is not one
        raise ValueError(f"{quoted(text)} is not a real date and time") from None


@dataclass(frozen=True)
class Activity:
    """What one stamp says: whether it counts, and for people what was seen and how old it is."""

    active: bool
    evidence: str
    key: str  # the evidence without the age, which grows at every look: what is logged once (autoscaler_detection)


def judge(stamp: dt.datetime, now: dt.datetime, active_within: dt.timedelta, what: str) -> Activity:
    """`what`: the stamp, for people ("ConfigMap kube-system/cluster-autoscaler-status last updated")."""
    age = now - stamp
    at = stamp.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
    if age < -CLOCK_SKEW:
        ahead = dt.timedelta(seconds=round(-age.total_seconds()))
        return Activity(False, f"{what} at {at}, {format_duration(ahead)} in the future (more than the "
                               f"{format_duration(CLOCK_SKEW)} clocks may differ): not evidence of a running writer",
                        f"{what} at {at}: in the future")
    shown = format_duration(dt.timedelta(seconds=round(max(age, dt.timedelta(0)).total_seconds())))  # for people
    if age > active_within:
        return Activity(False, f"{what} {shown} ago (at {at}), longer than autoscaler.activeWithin "
                               f"({format_duration(active_within)}): nothing keeps it fresh, so no node will come",
                        f"{what} at {at}: older than {format_duration(active_within)}")
    return Activity(True, f"{what} {shown} ago (at {at})", f"{what}: fresh")
