"""What a strategy wants besides the evictions it put through the gate: returned, never written, so the planner
merges it into the plan behind the same rails for every strategy."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model.plan import StrategyReport
from remediator.planning.memory import Remembered


@dataclass(frozen=True)
class NodeCause:
    node: str
    cause: str  # for people, as a TaintChange's cause


@dataclass(frozen=True)
class Wants:
    # the taint the strategy declares on its registry record (strategy.py): put on these nodes, taken off these
    taint: tuple[NodeCause, ...] = ()
    untaint: tuple[NodeCause, ...] = ()
    # its report (its type in its folder): the plan carries it under the strategy's name and shows it as it is
    report: StrategyReport | None = None
    # what the strategy is given back next cycle (Gate.remembered); None: keep what it had
    remember: Remembered | None = None


NOTHING = Wants()
