"""`kubectl nodemedic savings` worded (kubectl/savings_view.py): per day and pool, totals, a sparkline per pool,
the open rooms; nothing recorded said so; names from the cluster escaped."""

from __future__ import annotations

import datetime as dt

from remediator.kubectl.savings_view import render, sparkline
from remediator.model.savings import Ledger, Room, close, seat

NOW = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.UTC)


def test_sparkline_scales_to_the_largest_and_marks_empty_days() -> None:
    assert sparkline([0, 1, 2, 4, 8]) == "·▂▃▅█"
    assert sparkline([]) == ""
    assert sparkline([0, 0]) == "··"


def test_days_pools_totals_sparklines_and_open_rooms() -> None:
    a = Room("shop/a", "ua", "n1", "general", "m5.large", 0.5, NOW - dt.timedelta(days=2, hours=4))
    b = Room("shop/b", "ub", "n2", "gpu", "", None, NOW - dt.timedelta(hours=3))
    ledger = seat(close(seat(Ledger("USD"), a), "ua", NOW - dt.timedelta(days=2)), b)
    text = render(ledger, "nodemedic/nodemedic-savings", NOW, 7)
    print(text)
    lines = text.splitlines()
    assert lines[0].startswith("savings ledger nodemedic/nodemedic-savings: node-hours a scale-out would have cost")
    assert lines[1].split() == ["DAY", "POOL", "SEATED", "NODE-HOURS", "COST", "UNPRICED", "HOURS"]
    assert lines[2].split() == ["2026-11-27", "general", "1", "4.00", "2.00", "USD", "0.00"]
    assert lines[3].split() == ["2026-11-29", "gpu", "1", "3.00", "0.00", "USD", "3.00"]
    assert lines[4].split() == ["total", "2", "7.00", "2.00", "USD", "3.00"]
    assert "  general  ····█··  4.00 node-hours" in lines and "  gpu      ······█  3.00 node-hours" in lines
    assert "open rooms (1): pods seated without a new node that still run there" in lines
    assert any(line.split()[:5] == ["shop/b", "n2", "gpu", "-", "unpriced"] for line in lines)


def test_nothing_recorded_is_said_and_old_days_are_left_out() -> None:
    a = Room("shop/a", "ua", "n1", "general", "", 1.0, NOW - dt.timedelta(days=40))
    ledger = close(seat(Ledger(), a), "ua", NOW - dt.timedelta(days=39))
    assert "no savings recorded" in render(ledger, "ns/x", NOW, 30)
    assert "no savings recorded" not in render(ledger, "ns/x", NOW, 60)


def test_names_from_the_cluster_are_escaped() -> None:
    a = Room("shop/a\x1b[2J", "ua", "n1", "pool\x07", "", None, NOW - dt.timedelta(hours=1))
    text = render(seat(Ledger(), a), "ns/x", NOW, 3)
    assert "\x1b" not in text and "\x07" not in text
