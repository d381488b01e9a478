"""The savings metrics (remediator/model/savings.py): what the placement engine's rooms saved while this replica led,
as counters Prometheus sums across leaders (`increase(...[1d])` per pool), and the rooms open now."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from remediator.model.savings import Ledger


@dataclass(frozen=True)
class SavingsMetrics:
    node_hours: Counter
    cost: Counter
    rooms: Gauge

    def add(self, accrued: dict[str, tuple[float, float]], currency: str) -> None:
        for pool, (hours, cost) in accrued.items():
            self.node_hours.labels(pool).inc(hours)
            if cost:
                self.cost.labels(pool, currency).inc(cost)

    def show(self, ledger: Ledger) -> None:
        self.rooms.clear()
        for room in ledger.open:
            self.rooms.labels(room.pool).inc()


def create_savings_metrics(r: CollectorRegistry) -> SavingsMetrics:
    return SavingsMetrics(
        node_hours=Counter("nodemedic_savings_node_hours_total", "Node-hours a scale-out would have cost: pending pods "
                           "seated by the placement engine without a new node, for as long as each runs there",
                           ["pool"], registry=r),
        cost=Counter("nodemedic_savings_cost_total", "The price of those node-hours (savings.prices; unpriced nodes "
                     "add none)", ["pool", "currency"], registry=r),
        rooms=Gauge("nodemedic_savings_rooms", "Pods seated without a new node that still run where they were seated",
                    ["pool"], registry=r),
    )
