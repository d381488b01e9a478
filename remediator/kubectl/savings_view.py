"""`kubectl nodemedic savings` worded for a person: node-hours avoided and their cost per day and pool, a sparkline of
each pool's node-hours per day (a glance at the trend; the dashboard plots it), and the rooms open now."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.repair_contract import format_time
from remediator.kubectl.render import table
from remediator.model.savings import DayTotal, Ledger, totals

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float]) -> str:
    """One character per value, scaled to the largest; a day with nothing is a dot, so zero never looks small."""
    top = max(values, default=0.0)
    return "".join("·" if v <= 0 else BARS[min(len(BARS) - 1, int(v / top * (len(BARS) - 1) + 0.5))]
                   for v in values)


def _money(amount: float, currency: str) -> str:
    return f"{amount:,.2f} {currency}".strip()


def _hours(h: float) -> str:
    return f"{h:,.2f}" if h >= 0.01 or h == 0 else f"{h:.4f}"


def render(ledger: Ledger, where: str, now: dt.datetime, days: int) -> str:
    first = (now - dt.timedelta(days=days - 1)).astimezone(dt.UTC).date()
    rows = [d for d in totals(ledger, now) if d.day >= first.isoformat()]
    lines = [f"savings ledger {where}: node-hours a scale-out would have cost, up to {format_time(now)} "
             f"(last {days} days)"]
    if not rows:
        lines.append("no savings recorded: the placement engine (MakeRoomForPendingPods) has seated no pending pod "
                     "without a new node in this time")
        return "\n".join(lines)
    cur = ledger.currency
    out = [("DAY", "POOL", "SEATED", "NODE-HOURS", "COST", "UNPRICED HOURS")]
    out += [(d.day, d.pool or "-", str(d.seated), _hours(d.node_hours), _money(d.cost, cur),
             _hours(d.unpriced_hours)) for d in rows]
    out.append(("total", "", str(sum(d.seated for d in rows)), _hours(sum(d.node_hours for d in rows)),
                _money(sum(d.cost for d in rows), cur), _hours(sum(d.unpriced_hours for d in rows))))
    lines += table(out, indent="")
    lines.append("")
    lines.append(f"node-hours per day, {first.isoformat()} to {now.astimezone(dt.UTC).date().isoformat()}:")
    calendar = [(first + dt.timedelta(days=i)).isoformat() for i in range(days)]
    by_pool: dict[str, dict[str, DayTotal]] = {}
    for d in rows:
        by_pool.setdefault(d.pool, {})[d.day] = d
    lines += table([(pool or "-", sparkline([(per_day[day].node_hours if day in per_day else 0.0)
                                             for day in calendar]),
                     f"{_hours(sum(d.node_hours for d in per_day.values()))} node-hours")
                    for pool, per_day in sorted(by_pool.items())], indent="  ")
    if ledger.open:
        lines.append("")
        lines.append(f"open rooms ({len(ledger.open)}): pods seated without a new node that still run there")
        lines += table([("POD", "NODE", "POOL", "INSTANCE TYPE", "PER HOUR", "SINCE")]
                       + [(r.pod, r.node, r.pool or "-", r.instance_type or "-",
                           "unpriced" if r.per_hour is None else f"{r.per_hour:g} {cur}".strip(), format_time(r.since))
                          for r in ledger.open])
    return "\n".join(lines)
