"""The savings metrics (alerts/savings_metrics.py): counters per pool (cost only where priced), rooms open now."""

from __future__ import annotations

import datetime as dt

from prometheus_client import CollectorRegistry

from remediator.alerts.savings_metrics import create_savings_metrics
from remediator.model.savings import Ledger, Room

T0 = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def test_counters_add_per_pool_and_the_gauge_shows_the_rooms_open_now() -> None:
    r = CollectorRegistry()
    m = create_savings_metrics(r)
    m.add({"general": (1.5, 0.3), "gpu": (0.5, 0.0)}, "USD")
    m.add({"general": (0.5, 0.1)}, "USD")
    assert r.get_sample_value("nodemedic_savings_node_hours_total", {"pool": "general"}) == 2.0
    assert r.get_sample_value("nodemedic_savings_node_hours_total", {"pool": "gpu"}) == 0.5
    cost = r.get_sample_value("nodemedic_savings_cost_total", {"pool": "general", "currency": "USD"})
    assert cost is not None and round(cost, 6) == 0.4
    assert r.get_sample_value("nodemedic_savings_cost_total", {"pool": "gpu", "currency": "USD"}) is None
    rooms = tuple(Room(f"shop/{i}", str(i), "n", "general" if i else "gpu", "", None, T0) for i in range(3))
    m.show(Ledger(open=rooms))
    assert r.get_sample_value("nodemedic_savings_rooms", {"pool": "general"}) == 2.0
    m.show(Ledger())
    assert r.get_sample_value("nodemedic_savings_rooms", {"pool": "general"}) is None
