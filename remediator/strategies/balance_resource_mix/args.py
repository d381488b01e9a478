"""BalanceResourceMix's arguments, their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.fields import read_evictable_namespaces
from remediator.policy.migrations import read_approval
from remediator.policy.reader import Reader, Section

_KEYS = ("maxMovesPerCycle", "minImprovement", "maxUtilization", "evictableNamespaces", "approval")
MAX_MOVES = 50  # more moves in one cycle than this churn more than a better mix is worth


@dataclass(frozen=True)
class BalanceResourceMixArgs:
    max_moves_per_cycle: int = 5
    min_improvement: float = 2.0  # percentage points of total deviation a move must remove
    max_utilization: float = 80.0  # no destination above this percent of cpu or memory after a move
    evictable_namespaces_exclude: tuple[str, ...] = ()
    # required: each cycle's moves are a Migration a person approves, then run step by step (control/migrations.py);
    # automatic: made as the cycle plans them. A better mix is never urgent: a person decides by default.
    approval: str = "required"


def read_args(r: Reader, strategy: Section) -> BalanceResourceMixArgs:
    m = r.section(strategy, "args", _KEYS)
    d = BalanceResourceMixArgs()
    moves = r.integer(m, "maxMovesPerCycle", d.max_moves_per_cycle, minimum=1)
    if moves > MAX_MOVES:
        r.error(m.values["maxMovesPerCycle"], m.at("maxMovesPerCycle"), f"must be at most {MAX_MOVES}, got {moves}")
        moves = d.max_moves_per_cycle
    improvement = r.percent(m, "minImprovement", d.min_improvement)
    utilization = r.percent(m, "maxUtilization", d.max_utilization)
    return BalanceResourceMixArgs(
        max_moves_per_cycle=moves,
        min_improvement=d.min_improvement if improvement is None else improvement,
        max_utilization=d.max_utilization if utilization is None else utilization,
        evictable_namespaces_exclude=read_evictable_namespaces(r, m),
        approval=read_approval(r, m, d.approval),
    )
