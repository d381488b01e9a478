"""Alert: the severity must be one of SEVERITIES and the time timezone-aware, each refused with a message naming it."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.alerts.alert import SEVERITIES, Alert, AlertKind

NOW = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


@pytest.mark.parametrize("severity", SEVERITIES)
def test_an_alert_is_built_with_each_known_severity(severity: str) -> None:
    a = Alert(kind=AlertKind.TAINTED, severity=severity, summary="tainted n1", node="n1", time=NOW)
    assert (a.severity, a.node, a.details) == (severity, "n1", {})


@pytest.mark.parametrize("severity", ["", "error", "Warning", "CRITICAL"])
def test_an_unknown_severity_is_refused_naming_the_allowed_ones(severity: str) -> None:
    with pytest.raises(ValueError, match=r"Alert\.severity .*must be one of info, warning, critical"):
        Alert(kind=AlertKind.HELD, severity=severity, summary="s", time=NOW)


def test_a_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match=r"Alert\.time 2026-01-02T03:04:05: must be timezone-aware"):
        Alert(kind=AlertKind.HELD, severity="info", summary="s", time=NOW.replace(tzinfo=None))


def test_a_time_in_another_zone_is_kept_as_given() -> None:
    plus_two = dt.datetime(2026, 1, 2, 5, 4, 5, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert Alert(kind="Custom", severity="warning", summary="s", time=plus_two).time == NOW


def test_the_time_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        Alert("Held", "info", "s", "", "", "", "", {}, NOW)  # type: ignore[misc]


def test_alert_kinds_read_as_their_event_names() -> None:
    assert f"{AlertKind.BREAKER_OPEN}" == "CircuitBreakerOpen"
    assert AlertKind("DarkNode") is AlertKind.DARK_NODE
