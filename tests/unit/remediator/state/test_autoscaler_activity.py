"""The autoscalers' own stamps: cluster-autoscaler's Go time format and Kubernetes' RFC 3339, read exactly or refused,
and an age judged against `activeWithin` (fresh, stale, or further in the future than clocks differ)."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.state.autoscaler_activity import (
    CLOCK_SKEW,
    judge,
    parse_cluster_autoscaler_time,
    parse_kube_time,
)

UTC = dt.UTC


@pytest.mark.parametrize(("text", "moment"), [
    ("2026-03-01 12:00:00 +0000 UTC", dt.datetime(2026, 3, 1, 12, tzinfo=UTC)),
    ("2026-03-01 12:00:00.5 +0000 UTC", dt.datetime(2026, 3, 1, 12, 0, 0, 500000, tzinfo=UTC)),
    ("2026-03-01 12:00:00.123456789 +0000 UTC", dt.datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)),
    ("2026-03-01 14:00:00 +0200 EET", dt.datetime(2026, 3, 1, 12, tzinfo=UTC)),
    ("2026-03-01 07:30:00 -0430 -0430", dt.datetime(2026, 3, 1, 12, tzinfo=UTC)),
])
def test_cluster_autoscaler_times_are_read_by_their_offset(text: str, moment: dt.datetime) -> None:
    assert parse_cluster_autoscaler_time(text) == moment


@pytest.mark.parametrize("text", [
    "", "2026-03-01T12:00:00Z", "2026-03-01 12:00:00 UTC", "2026-03-01 12:00:00 +0000", "2026-02-30 12:00:00 +0000 UTC",
    "2026-03-01 12:00:00.1234567890 +0000 UTC", "2026-03-01 12:00:00 +9900 X", " 2026-03-01 12:00:00 +0000 UTC",
    "2026-03-01 12:00:00 +0000 UTC\n", "x" * 10_000,
])
def test_anything_else_is_refused_with_the_text_quoted(text: str) -> None:
    with pytest.raises(ValueError, match=r"cluster-autoscaler writes it|not a real date|offset of a day"):
        parse_cluster_autoscaler_time(text)


@pytest.mark.parametrize(("text", "moment"), [
    ("2026-03-01T12:00:00Z", dt.datetime(2026, 3, 1, 12, tzinfo=UTC)),
    ("2026-03-01T12:00:00.000123Z", dt.datetime(2026, 3, 1, 12, 0, 0, 123, tzinfo=UTC)),
    ("2026-03-01T13:00:00+01:00", dt.datetime(2026, 3, 1, 12, tzinfo=UTC)),
])
def test_kubernetes_times_are_read(text: str, moment: dt.datetime) -> None:
    assert parse_kube_time(text) == moment


@pytest.mark.parametrize("text", ["", "2026-03-01 12:00:00Z", "2026-03-01T12:00:00", "2026-03-01T25:00:00Z",
                                  "2026-03-01T12:00:00+24:00", "now"])
def test_kubernetes_times_of_another_shape_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_kube_time(text)


NOW = dt.datetime(2026, 3, 1, 12, tzinfo=UTC)
WITHIN = dt.timedelta(minutes=5)


@pytest.mark.parametrize(("age", "active"), [
    (dt.timedelta(0), True), (WITHIN, True), (WITHIN + dt.timedelta(microseconds=1), False),
    (dt.timedelta(days=365), False), (-CLOCK_SKEW, True), (-CLOCK_SKEW - dt.timedelta(seconds=1), False),
])
def test_a_stamp_counts_from_a_minute_ahead_to_active_within_old(age: dt.timedelta, active: bool) -> None:
    got = judge(NOW - age, NOW, WITHIN, "stamp")
    assert got.active is active
    assert ("in the future" in got.evidence) is (age < -CLOCK_SKEW)


def test_the_key_of_a_stale_stamp_stays_the_same_as_it_ages() -> None:
    stamp = NOW - dt.timedelta(hours=1)
    first, later = judge(stamp, NOW, WITHIN, "stamp"), judge(stamp, NOW + dt.timedelta(hours=1), WITHIN, "stamp")
    assert first.evidence != later.evidence and first.key == later.key
