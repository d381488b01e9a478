"""The one explicit registry of strategies: name → (kind, plan function). No import-time registration.

"deschedule" strategies run before "balance" ones, as descheduler runs its Deschedule extension point before
Balance. A deschedule strategy returns candidates: `plan(snapshot, args, *, evict_taints, planned_taints) ->
list[PlannedEviction]`, and the planner puts each through the cycle's gate. A balance strategy decides pod by pod
what to try next from what the gate let through: `plan(snapshot, args, cycle) -> None`, moving pods with
`cycle.move`. Neither calls the API; both only add to the cycle's Plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remediator.strategies import high_node_utilization, low_node_utilization, remove_pods_violating_node_taints

KINDS = ("deschedule", "balance")  # run order


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: str  # one of KINDS
    plan: Callable[..., Any]


STRATEGIES: dict[str, Strategy] = {
    m.NAME: Strategy(m.NAME, m.KIND, m.plan)
    for m in (remove_pods_violating_node_taints, low_node_utilization, high_node_utilization)
}


def lookup(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r} (known: {', '.join(sorted(STRATEGIES))})") from None
