"""The one explicit registry of strategies: name → (kind, plan function). No import-time registration.

Every `plan` has the same shape: `plan(snapshot, args, *, evict_taints, planned_taints) -> list[PlannedEviction]`,
so the planner can hand each one the taints nodemedic is placing this cycle. "deschedule" strategies run
before "balance" ones, as descheduler runs its Deschedule extension point before Balance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from remediator.model import PlannedEviction, Snapshot, Taint
from remediator.strategies import remove_pods_violating_node_taints

KINDS = ("deschedule", "balance")  # run order


class PlanFunction(Protocol):
    def __call__(self, snapshot: Snapshot, args: Any, /, *, evict_taints: Mapping[str, Sequence[Taint]],
                 planned_taints: Mapping[str, Sequence[Taint]]) -> list[PlannedEviction]: ...


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: str  # one of KINDS
    plan: PlanFunction


STRATEGIES: dict[str, Strategy] = {
    remove_pods_violating_node_taints.NAME: Strategy(remove_pods_violating_node_taints.NAME,
                                                     remove_pods_violating_node_taints.KIND,
                                                     remove_pods_violating_node_taints.plan),
}


def lookup(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r} (known: {', '.join(sorted(STRATEGIES))})") from None
