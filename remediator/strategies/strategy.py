"""What the registry knows of a strategy: its name, its kind, how to read its `args`, and its plan function.

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

from remediator.policy.reader import Reader, Section

KINDS = ("deschedule", "balance")  # run order


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: str  # one of KINDS
    read_args: Callable[[Reader, Section], object]  # the strategy's `args` mapping -> its args dataclass
    plan: Callable[..., Any]
