"""The savings ledger: node-hours a scale-out would have cost, as the fragmentation article reports them.

A *room* opens when a pending pod the placement engine nominated is bound to a node that existed before the
nomination (the pod got a place without a new node), and lasts while that pod runs there: for that long, the node the
autoscaler would have added for it is not paid for. Its size is one node of the pool it was seated in, priced by the
policy's `savings.prices` from that node's labels (Karpenter names the instance type in
`node.kubernetes.io/instance-type`); a node no price matches counts its hours as unpriced.

The ledger keeps closed rooms as totals per UTC day and pool and the open rooms themselves; the totals up to any
moment are those plus the open rooms' hours to it (`totals`), so nothing needs writing while rooms stay open, and a
reader (`kubectl nodemedic savings`) computes the same figures from the stored ledger as the leader does. It is one
JSON document in a ConfigMap (actions/savings_writer.py), read back field by field (`read_ledger`).
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, replace

FORMAT = "nodemedic.io/savings-ledger/v1"
KEY = "ledger.json"  # the ConfigMap data key holding the document
MAX_OPEN = 5_000  # rooms open at once: more pods than that seated by moves at a time is another cluster's problem
MAX_DAYS = 400  # a year and a bit of days; `savings.keepDays` is at most 400
MAX_POOLS = 200  # pools per day kept
MAX_TEXT = 253  # a pod key's, node's or pool's longest form (DNS subdomain names)
MAX_LEDGER = 2 << 20  # bytes of the stored document: MAX_OPEN rooms of the longest names fit with room to spare


@dataclass(frozen=True)
class Room:
    pod: str  # "namespace/name" of the pod seated
    uid: str  # its uid: a pod of the same name later is another pod
    node: str  # where it was seated
    pool: str  # that node's pool label value ("" when the node names none)
    instance_type: str  # that node's instance type ("" when unlabelled)
    per_hour: float | None  # the price of one such node-hour when it was seated; None: no price matched
    since: dt.datetime


@dataclass(frozen=True)
class DayTotal:
    day: str  # YYYY-MM-DD, UTC
    pool: str
    node_hours: float = 0.0
    cost: float = 0.0  # of the priced hours
    unpriced_hours: float = 0.0  # hours of rooms no price matched (in node_hours too)
    seated: int = 0  # rooms opened that day


@dataclass(frozen=True)
class Ledger:
    currency: str = ""
    days: tuple[DayTotal, ...] = ()  # the closed rooms' hours (and every room's seating), sorted by day, pool
    open: tuple[Room, ...] = ()


class LedgerError(ValueError):
    """A stored ledger of a shape this program does not read; the message names the field."""


# --- arithmetic --------------------------------------------------------------------------------------------------

def day_of(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).date().isoformat()


def by_day(start: dt.datetime, end: dt.datetime) -> Iterator[tuple[str, float]]:
    """The hours of [start, end) on each UTC day it touches."""
    t = start
    while t < end:
        midnight = dt.datetime.combine(t.astimezone(dt.UTC).date() + dt.timedelta(days=1), dt.time(), dt.UTC)
        upto = min(end, midnight)
        yield day_of(t), (upto - t).total_seconds() / 3600
        t = upto


def _add(rows: dict[tuple[str, str], DayTotal], day: str, pool: str, hours: float, *, per_hour: float | None,
         seated: int = 0) -> None:
    r = rows.get((day, pool)) or DayTotal(day, pool)
    rows[(day, pool)] = replace(
        r, node_hours=r.node_hours + hours, cost=r.cost + (hours * per_hour if per_hour is not None else 0.0),
        unpriced_hours=r.unpriced_hours + (hours if per_hour is None else 0.0), seated=r.seated + seated)


def _sorted(rows: dict[tuple[str, str], DayTotal]) -> tuple[DayTotal, ...]:
    return tuple(rows[k] for k in sorted(rows))


def seat(ledger: Ledger, room: Room) -> Ledger:
    """The ledger with `room` open (its seating counted on its day); an open room of the same pod uid stays."""
    if any(r.uid == room.uid for r in ledger.open) or len(ledger.open) >= MAX_OPEN:
        return ledger
    rows = {(d.day, d.pool): d for d in ledger.days}
    _add(rows, day_of(room.since), room.pool, 0.0, per_hour=room.per_hour, seated=1)
    return replace(ledger, days=_sorted(rows), open=(*ledger.open, room))


def close(ledger: Ledger, uid: str, at: dt.datetime) -> Ledger:
    """The ledger with the room of pod `uid` closed at `at`: its hours moved into the day totals."""
    rows = {(d.day, d.pool): d for d in ledger.days}
    kept = []
    for r in ledger.open:
        if r.uid != uid:
            kept.append(r)
            continue
        for day, hours in by_day(r.since, at):
            _add(rows, day, r.pool, hours, per_hour=r.per_hour)
    return replace(ledger, days=_sorted(rows), open=tuple(kept))


def totals(ledger: Ledger, now: dt.datetime) -> tuple[DayTotal, ...]:
    """Every day and pool's figures up to `now`: the closed rooms' and the open rooms' hours so far."""
    rows = {(d.day, d.pool): d for d in ledger.days}
    for r in ledger.open:
        for day, hours in by_day(r.since, now):
            _add(rows, day, r.pool, hours, per_hour=r.per_hour)
    return _sorted(rows)


def accrued(ledger: Ledger, start: dt.datetime, end: dt.datetime) -> dict[str, tuple[float, float]]:
    """Per pool, the (node-hours, cost) the open rooms added between `start` and `end` (the leader's counters)."""
    out: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in ledger.open:
        hours = max(0.0, (end - max(start, r.since)).total_seconds() / 3600)
        out[r.pool][0] += hours
        out[r.pool][1] += hours * (r.per_hour or 0.0)
    return {pool: (h, c) for pool, (h, c) in out.items()}


def prune(ledger: Ledger, keep_days: int, now: dt.datetime) -> Ledger:
    """Day totals older than `keep_days` dropped (open rooms stay, however old)."""
    first = day_of(now - dt.timedelta(days=keep_days - 1))
    kept = tuple(d for d in ledger.days if d.day >= first)
    return ledger if len(kept) == len(ledger.days) else replace(ledger, days=kept)


# --- the stored form ---------------------------------------------------------------------------------------------

def configmap_path(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


def ledger_of(doc: object, where: str) -> Ledger:
    """The ledger in a ConfigMap answer; LedgerError naming `where` and the field."""
    data = doc.get("data") if isinstance(doc, dict) else None
    text = data.get(KEY) if isinstance(data, dict) else None
    if not isinstance(text, str):
        raise LedgerError(f"{where}: data.{KEY}: missing")
    if len(text) > MAX_LEDGER:
        raise LedgerError(f"{where}: data.{KEY}: over {MAX_LEDGER >> 20} MiB")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise LedgerError(f"{where}: data.{KEY}: not JSON ({str(e)[:80]})") from None
    return read_ledger(doc, f"{where}: data.{KEY}")



def to_json(ledger: Ledger) -> dict[str, object]:
    return {"format": FORMAT, "currency": ledger.currency,
            "days": [{"day": d.day, "pool": d.pool, "nodeHours": round(d.node_hours, 6), "cost": round(d.cost, 6),
                      "unpricedHours": round(d.unpriced_hours, 6), "seated": d.seated} for d in ledger.days],
            "open": [{"pod": r.pod, "uid": r.uid, "node": r.node, "pool": r.pool, "instanceType": r.instance_type,
                      "perHour": r.per_hour, "since": r.since.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")}
                     for r in ledger.open]}


def read_ledger(doc: object, where: str) -> Ledger:
    """The ledger stored as `to_json` wrote it; LedgerError naming `where` and the field otherwise."""
    top = _object(doc, where, "")
    if top.get("format") != FORMAT:
        raise LedgerError(f"{where}: format: {FORMAT!r} expected, got {str(top.get('format'))[:60]!r}")
    days_raw, open_raw = _list(top, "days", where, MAX_DAYS * MAX_POOLS), _list(top, "open", where, MAX_OPEN)
    days = []
    for i, item in enumerate(days_raw):
        d = _object(item, where, f"days[{i}]")
        path = f"days[{i}]"
        day = _text(d, "day", where, path)
        try:
            dt.date.fromisoformat(day)
        except ValueError:
            raise LedgerError(f"{where}: {path}.day: a date YYYY-MM-DD expected, got {day[:40]!r}") from None
        days.append(DayTotal(day, _text(d, "pool", where, path, empty=True),
                             node_hours=_amount(d, "nodeHours", where, path), cost=_amount(d, "cost", where, path),
                             unpriced_hours=_amount(d, "unpricedHours", where, path),
                             seated=int(_amount(d, "seated", where, path))))
    rooms = []
    for i, item in enumerate(open_raw):
        r, path = _object(item, where, f"open[{i}]"), f"open[{i}]"
        price = r.get("perHour")
        rooms.append(Room(pod=_text(r, "pod", where, path), uid=_text(r, "uid", where, path),
                          node=_text(r, "node", where, path), pool=_text(r, "pool", where, path, empty=True),
                          instance_type=_text(r, "instanceType", where, path, empty=True),
                          per_hour=None if price is None else _amount(r, "perHour", where, path),
                          since=_time(r, "since", where, path)))
    currency = top.get("currency", "")
    if not isinstance(currency, str) or len(currency) > 16:
        raise LedgerError(f"{where}: currency: a string of at most 16 characters expected")
    rows = {(d.day, d.pool): d for d in days}
    return Ledger(currency=currency, days=_sorted(rows), open=tuple(rooms))


def _object(value: object, where: str, path: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise LedgerError(f"{where}: {path or '<document>'}: an object expected, got {type(value).__name__}")
    return value


def _list(d: dict[str, object], key: str, where: str, most: int) -> list[object]:
    value = d.get(key, [])
    if not isinstance(value, list) or len(value) > most:
        raise LedgerError(f"{where}: {key}: a list of at most {most} items expected")
    return value


def _text(d: dict[str, object], key: str, where: str, path: str, *, empty: bool = False) -> str:
    value = d.get(key)
    if not isinstance(value, str) or len(value) > MAX_TEXT or (not value and not empty):
        raise LedgerError(f"{where}: {path}.{key}: a {'' if empty else 'non-empty '}string of at most {MAX_TEXT} "
                          "characters expected")
    return value


def _amount(d: dict[str, object], key: str, where: str, path: str) -> float:
    value = d.get(key)
    try:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError
        amount = float(value)  # OverflowError for an integer of hundreds of digits
        if not math.isfinite(amount) or amount < 0:
            raise ValueError
    except (ValueError, OverflowError):
        raise LedgerError(f"{where}: {path}.{key}: a number of at least 0 expected, got {str(value)[:40]}") from None
    return amount


def _time(d: dict[str, object], key: str, where: str, path: str) -> dt.datetime:
    value = d.get(key)
    try:
        if not isinstance(value, str):
            raise ValueError
        t = dt.datetime.fromisoformat(value)
        if t.tzinfo is None:
            raise ValueError
        return t
    except ValueError:
        raise LedgerError(f"{where}: {path}.{key}: a time with its zone (RFC 3339) expected, "
                          f"got {str(value)[:40]!r}") from None
