"""A strategy as the registry knows it: its name, its kind, how to read its `args`, its plan function, and the taint it
owns, if any.

Every strategy has one signature (`Plans`): `plan(snapshot, args, gate) -> Wants`. It plans evictions only through
the gate (planning/gate.py): a "deschedule" strategy hands it candidates (`gate.admit`), a "balance" one moves pods
one at a time (`gate.move`, `gate.exchange`) deciding what to try next from what the gate let through. What it wants
besides (its taint on nodes, its report, memory) it returns as Wants, which the planner merges. It
never calls the API. Deschedule strategies run before balance ones, as descheduler runs its Deschedule extension
point before Balance.

`taint`: the NoSchedule taint the strategy puts on nodes it works on (HighNodeUtilization's consolidation taint),
declared here once: the planner owns it like a rule's (the owned-taints annotation, with "strategy:<name>" as its
rule), passes every add through the same rails, window and breaker, takes it off when the strategy leaves the
policy, and tells the autoscaler about it (peer_config/autoscaler_flags.py); `taints(args)` says whether these args
use it.
`empties_nodes`: the strategy consolidates nodes for the autoscaler to remove, which a policy refuses when the
autoscaler consolidates itself (policy/autoscaler.py: one consolidator).
`packing`: what the strategy does that only a packing scheduler keeps (a MostAllocated profile: the policy's
`scheduler.packingProfile`, defaulted while the strategy is configured, and the profile scheduler-config writes for
it, whose comment says this); "" : it needs none.
`report_metrics`: the gauges of its report (the Wants' `report`), registered once into the remediator's registry
(alerts/metrics.py), and shown from each plan's report. `standing_report`: the report every plan carries when the
strategy does not run or finds nothing (its JSON key is always in the plan); None: a plan without it shows none.
`approval(args)`: "required" when these args make the strategy's moves a Migration a person approves before it runs
step by step (the fragmentation engines' `approval` argument; the planner proposes them instead of evicting,
control/migrations.py runs them), "automatic" when its moves are made as each cycle plans them.
`terminal_pods`: the strategy also hands the gate Succeeded/Failed pods (descheduler lists every pod for
RemoveFailedPods, PodLifeTime and RemovePodsHavingTooManyRestarts); for every other strategy the gate refuses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry

from remediator.model.plan import PlannedEviction, StrategyReport
from remediator.model.records import Taint
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.policy.reader import Reader, Section
from remediator.state.snapshot import Snapshot

KINDS = ("deschedule", "balance")  # run order

# The registry's gauges of a strategy's report -> what shows one plan's report on them
ReportMetrics = Callable[[CollectorRegistry], Callable[[StrategyReport], None]]

Args_contra = TypeVar("Args_contra", contravariant=True)
A = TypeVar("A")


class Plans(Protocol[Args_contra]):
    def __call__(self, snapshot: Snapshot, args: Args_contra, gate: Gate, /) -> Wants: ...


def admitting(candidates: Callable[[Snapshot, A], Iterable[PlannedEviction]]) -> Plans[A]:
    """The plan of a deschedule strategy whose candidates depend on nothing the gate decides: each to the gate."""
    def plan(snapshot: Snapshot, args: A, gate: Gate, /) -> Wants:
        for c in candidates(snapshot, args):
            gate.admit(c)
        return NOTHING
    return plan


def _always(args: object) -> bool:
    return True


def _automatic(args: object) -> str:
    return "automatic"


@dataclass(frozen=True)
class Strategy(Generic[A]):
    name: str
    kind: str  # one of KINDS
    read_args: Callable[[Reader, Section], A]  # the strategy's `args` mapping -> its args dataclass
    plan: Plans[A]
    terminal_pods: bool = False
    taint: Taint | None = None
    taints: Callable[[A], bool] = _always
    empties_nodes: bool = False  # consolidates nodes for the autoscaler to remove: refused if the autoscaler does
    packing: str = ""  # why it needs a packing scheduler profile, for people; "": it does not
    report_metrics: ReportMetrics | None = None
    standing_report: StrategyReport | None = None
    approval: Callable[[A], str] = _automatic
