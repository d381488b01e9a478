"""The savings ledger (model/savings.py): rooms seated and closed, hours split by UTC day, totals up to a moment,
counters' increments, pruning, and the stored form read back or refused naming the field."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from remediator.model.savings import (
    FORMAT,
    KEY,
    MAX_OPEN,
    DayTotal,
    Ledger,
    LedgerError,
    Room,
    accrued,
    by_day,
    close,
    ledger_of,
    prune,
    read_ledger,
    seat,
    to_json,
    totals,
)

T0 = dt.datetime(2026, 11, 28, 22, 0, tzinfo=dt.UTC)


def room(uid: str = "u1", *, pool: str = "general", per_hour: float | None = 0.5, since: dt.datetime = T0) -> Room:
    return Room(pod=f"shop/{uid}", uid=uid, node="n1", pool=pool, instance_type="m5.large", per_hour=per_hour,
                since=since)


def test_hours_are_split_at_utc_midnight() -> None:
    assert list(by_day(T0, T0 + dt.timedelta(hours=3))) == [("2026-11-28", 2.0), ("2026-11-29", 1.0)]
    assert list(by_day(T0, T0)) == []


def test_a_room_counts_its_seating_then_its_hours_when_closed_and_priced_or_not() -> None:
    ledger = seat(seat(Ledger("USD"), room()), room("u2", per_hour=None))
    assert ledger.days == (DayTotal("2026-11-28", "general", seated=2),)
    assert seat(ledger, room()) == ledger, "one room per pod uid"
    ledger = close(ledger, "u1", T0 + dt.timedelta(hours=4))
    assert [r.uid for r in ledger.open] == ["u2"]
    assert ledger.days == (DayTotal("2026-11-28", "general", node_hours=2.0, cost=1.0, seated=2),
                           DayTotal("2026-11-29", "general", node_hours=2.0, cost=1.0))
    later = totals(ledger, T0 + dt.timedelta(hours=5))
    assert later[1] == DayTotal("2026-11-29", "general", node_hours=5.0, cost=1.0, unpriced_hours=3.0)
    assert later[0].unpriced_hours == 2.0


def test_the_counters_get_only_the_open_rooms_hours_of_the_interval() -> None:
    ledger = seat(seat(Ledger(), room()), room("u2", pool="gpu", since=T0 + dt.timedelta(minutes=30), per_hour=2.0))
    got = accrued(ledger, T0, T0 + dt.timedelta(hours=1))
    assert got == {"general": (1.0, 0.5), "gpu": (0.5, 1.0)}
    assert accrued(ledger, T0 - dt.timedelta(hours=5), T0) == {"general": (0.0, 0.0), "gpu": (0.0, 0.0)}


def test_prune_drops_old_days_but_never_an_open_room() -> None:
    old = room(since=T0 - dt.timedelta(days=100))
    ledger = close(seat(seat(Ledger(), old), room("u2")), "u2", T0 + dt.timedelta(hours=1))
    pruned = prune(ledger, 30, T0)
    assert {d.day for d in pruned.days} == {"2026-11-28"}
    assert [r.uid for r in pruned.open] == ["u1"]
    assert prune(pruned, 30, T0) is pruned


def test_no_more_than_max_open_rooms() -> None:
    ledger = Ledger(open=tuple(room(str(i)) for i in range(MAX_OPEN)))
    assert seat(ledger, room("one-more")) is ledger


def test_the_stored_form_reads_back_the_same() -> None:
    ledger = close(seat(seat(Ledger("EUR"), room()), room("u2", per_hour=None)), "u1", T0 + dt.timedelta(hours=3))
    doc = json.loads(json.dumps(to_json(ledger)))
    assert read_ledger(doc, "cm") == ledger
    assert ledger_of({"data": {KEY: json.dumps(doc)}}, "cm") == ledger


@pytest.mark.parametrize(("doc", "message"), [
    ([], "cm: <document>: an object expected, got list"),
    ({"format": "v0"}, "cm: format: 'nodemedic.io/savings-ledger/v1' expected, got 'v0'"),
    ({"format": FORMAT, "days": "x"}, "cm: days: a list of at most"),
    ({"format": FORMAT, "days": [{"day": "yesterday", "pool": ""}]}, "cm: days[0].day: a date YYYY-MM-DD expected"),
    ({"format": FORMAT, "days": [{"day": "2026-11-28", "pool": "", "nodeHours": -1, "cost": 0, "unpricedHours": 0,
                                  "seated": 0}]}, "cm: days[0].nodeHours: a number of at least 0 expected, got -1"),
    ({"format": FORMAT, "days": [{"day": "2026-11-28", "pool": "", "nodeHours": 10**400}]},
     "cm: days[0].nodeHours: a number of at least 0 expected"),
    ({"format": FORMAT, "days": [{"day": "2026-11-28", "pool": 5}]}, "cm: days[0].pool: a string"),
    ({"format": FORMAT, "open": [{"pod": "", "uid": "u"}]}, "cm: open[0].pod: a non-empty string"),
    ({"format": FORMAT, "open": [{"pod": "a/b", "uid": "u", "node": "n", "pool": "", "instanceType": "",
                                  "perHour": "cheap", "since": "2026-11-28T00:00:00Z"}]},
     "cm: open[0].perHour: a number of at least 0 expected, got cheap"),
    ({"format": FORMAT, "open": [{"pod": "a/b", "uid": "u", "node": "n", "pool": "", "instanceType": "",
                                  "since": "2026-11-28T00:00:00"}]}, "cm: open[0].since: a time with its zone"),
    ({"format": FORMAT, "currency": ["USD"]}, "cm: currency: a string of at most 16"),
])
def test_a_ledger_of_another_shape_is_refused_naming_the_field(doc: object, message: str) -> None:
    with pytest.raises(LedgerError) as e:
        read_ledger(doc, "cm")
    assert str(e.value).startswith(message)


@pytest.mark.parametrize(("doc", "message"), [
    ({}, "cm: data.ledger.json: missing"),
    ({"data": {KEY: "{"}}, "cm: data.ledger.json: not JSON"),
    ({"data": {KEY: "[" * 100_000}}, "cm: data.ledger.json: not JSON"),
    ({"data": {KEY: " " * (3 << 20)}}, "cm: data.ledger.json: over 2 MiB"),
])
def test_a_configmap_without_a_readable_ledger_is_refused(doc: object, message: str) -> None:
    with pytest.raises(LedgerError) as e:
        ledger_of(doc, "cm")
    assert str(e.value).startswith(message)
