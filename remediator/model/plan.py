"""The plan strategies return and the planner completes: taint changes, evictions and what each held back, the
strategies' reports; final when it leaves the planner."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from remediator.model.migration import Gain
from remediator.model.records import Condition, PodRecord, Taint
from remediator.repair.dark_decisions import DarkPlan
from remediator.repair.decisions import RepairPlan


@dataclass(frozen=True)
class ConditionSeen:
    """A node condition as the plan read it: its status ("" when the node had none of the type) and transition."""

    type: str
    status: str
    last_transition: dt.datetime | None

    @classmethod
    def of(cls, type_: str, c: Condition | None) -> ConditionSeen:
        return cls(type_, "", None) if c is None else cls(type_, c.status, c.last_transition)

    def shown_by(self, conditions: Sequence[Condition]) -> bool:
        current = next((c for c in conditions if c.type == self.type), None)
        return ConditionSeen.of(self.type, current) == self


@dataclass(frozen=True)
class TaintChange:
    node: str
    taint: Taint
    rules: tuple[str, ...]  # names of the rules that want (add) or released (remove) it
    cause: str  # e.g. "KernelDeadlock=True for 31s"
    # The conditions the change was decided on; empty: decided on nothing the node may change (a renamed value, a
    # strategy's own taint). Written only while the node still shows them: a condition that flipped, or flipped and
    # came back, between the plan and the write waits for the next plan (a flapping node was once tainted on a True
    # spell already over when the write went out).
    premise: tuple[ConditionSeen, ...] = ()

    def still_holds(self, conditions: Sequence[Condition]) -> bool:
        return all(seen.shown_by(conditions) for seen in self.premise)


@dataclass(frozen=True)
class PlannedEviction:
    pod: PodRecord
    strategy: str
    reason: str
    # The node the move counted on (its room reserved there), set by the planning gate; None: not asked (nodeFit
    # off, a terminal pod) or before the gate. The pod's own node: a new node like it from the node autoscaler.
    destination: str | None = None


@dataclass(frozen=True)
class Protected:
    pod: PodRecord
    why: str


class HoldReason(StrEnum):
    """Which safety rail holds a taint back; the `why` label of nodemedic_taints_held_total."""

    PAUSED = "paused"
    OPTED_OUT = "opted out"
    AUTOSCALER = "autoscaler"
    CIRCUIT_BREAKER = "circuit breaker"
    # The breaker has room only once this plan's untaints land: the next plan sees them landed (or not) and decides.
    # Not announced: it lasts one cycle.
    UNTAINT_PENDING = "untaint pending"


@dataclass(frozen=True)
class Held:
    """A taint the rules want but a safety rail holds back (circuit breaker, pause, opt-out, autoscaler)."""

    node: str
    taint: Taint
    rules: tuple[str, ...]
    reason: HoldReason
    why: str  # for people: the rail and its particulars


@dataclass(frozen=True)
class NodeNotice:
    """Something a strategy's report found on a node that people hear about once: a Warning Event on the node (and a
    notification) from the leader the first cycle it is there, never in dry-run; nothing more while it lasts."""

    key: tuple[str, ...]  # what makes it the same notice from one cycle to the next
    node: str
    kind: str  # the notification's kind (alerts/alert.py)
    reason: str  # the Event's reason
    message: str
    details: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Nomination:
    """A pending pod the plan's evictions free `node` for: nominated there before any of `moved` is evicted (or none
    of them is: the room would go to whoever comes first), with a Normal Event on the pod (actions/nominator.py)."""

    pod: PodRecord
    node: str
    moved: tuple[str, ...]  # keys of the pods evicted for it
    reason: str  # the Event's reason
    message: str


class StrategyReport(Protocol):
    """A strategy's own section of the plan (its type lives in the strategy's folder; strategies/strategy.py): the plan
    carries it under the strategy's name and shows it as it is. The planner, the controller, `why` and the plan's
    JSON ask every report the same questions, and none of them names a strategy; its gauges are the strategy's too
    (Strategy.report_metrics)."""

    @property
    def json_key(self) -> str:
        """Its key in the plan's JSON (/plan, `plan --json`)."""
        ...

    def to_json(self) -> object: ...

    def why(self, node: str) -> Sequence[str]:
        """Its sentences about `node` for `why NODE`."""
        ...

    def notices(self) -> Sequence[NodeNotice]: ...

    def nominations(self) -> Sequence[Nomination]: ...

    def gain(self) -> Gain | None:
        """What the strategy's moves this plan buy, in its own measure (a Migration shows it); None: not a measure."""
        ...


@dataclass(frozen=True)
class Proposal:
    """The moves of an engine whose `approval` is required (Strategy.approval): written as a Migration for a person
    (control/migrations.py), not evicted. Each move has its destination (the gate booked its room there)."""

    engine: str
    moves: tuple[PlannedEviction, ...]
    gain: Gain | None


@dataclass(frozen=True)
class ZoneMove:
    source: str  # zone
    target: str
    pods: int


@dataclass(frozen=True)
class ZoneExposure:
    """How much of a replicated workload survives the loss of its worst zone (planning/zone_exposure.py)."""

    namespace: str
    workload: str  # "Deployment/web" (a ReplicaSet's pods count under its Deployment), "StatefulSet/db"
    per_zone: tuple[tuple[str, int], ...]  # zone -> live replicas there, every zone listed (exposed ones only)
    surviving: float  # share of the replicas outside the zone holding most of them
    best: float  # the share with the replicas spread as evenly as the zones allow
    moves: tuple[ZoneMove, ...]  # the fewest moves from what it is to that even spread (exposed ones only)

    @property
    def replicas(self) -> int:
        return sum(n for _, n in self.per_zone)

    def exposed(self, min_share: float) -> bool:
        """Below the policy's share while a better spread is possible (two replicas in three zones cannot do
        better than half)."""
        return self.surviving < min_share and self.surviving < self.best

    def describe(self) -> str:
        zones = ", ".join(f"{z}={n}" for z, n in self.per_zone)
        fix = "; ".join(f"move {m.pods} from {m.source} to {m.target}" for m in self.moves)
        return (f"{self.namespace}/{self.workload}: {self.surviving:.0%} of {self.replicas} replicas survive the loss "
                f"of its worst zone ({zones}); {self.best:.0%} with {fix}")


@dataclass(frozen=True)
class SchedulerLoop:
    """A balance strategy moved a workload's pods off nodes and the scheduler put the replacements straight back:
    the scheduler disagrees with the policy, and balance moves leave the workload alone until `until`."""

    namespace: str
    owner: str  # "ReplicaSet/web-7d9f"
    owner_uid: str
    node: str
    moved_at: dt.datetime  # when the pod was moved off `node`
    since: dt.datetime  # when the replacement was seen back
    until: dt.datetime

    def describe(self) -> str:
        return (f"the scheduler disagrees with the policy: pods of {self.namespace}/{self.owner} moved off "
                f"{self.node} were replaced there; no balance move of it until {_stamp(self.until)} "
                f"(give its scheduler nodemedic's configuration: nodemedic-remediator scheduler-config)")


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


@dataclass
class Plan:
    taints_add: list[TaintChange] = field(default_factory=list)
    taints_remove: list[TaintChange] = field(default_factory=list)
    evictions: list[PlannedEviction] = field(default_factory=list)
    protected: list[Protected] = field(default_factory=list)
    held: list[Held] = field(default_factory=list)
    deferred: list[Protected] = field(default_factory=list)  # evictable, but a limit or cool-down said not now
    breaker_open: bool = False  # the tainted-node limit stopped at least one new taint this cycle
    tainted_limit: int = 0  # how many nodes may carry nodemedic taints at once (after count/percent/floor)
    next_check: dt.datetime | None = None  # earliest time a timer (`for`, recoverAfter) may change the plan
    reports: dict[str, StrategyReport] = field(default_factory=dict)  # strategy name -> its report
    zone_exposure: list[ZoneExposure] = field(default_factory=list)  # every workload with more than one replica
    min_surviving_share: float = 0.0  # the policy's scheduler.zoneExposure.minSurvivingShare
    scheduler_loops: list[SchedulerLoop] = field(default_factory=list)  # workloads held for a scheduler loop
    repair: RepairPlan = field(default_factory=RepairPlan)  # the repair ladders' steps (remediator/repair/)
    dark: DarkPlan = field(default_factory=DarkPlan)  # silent nodes: fences and NodeClaims (planning/dark_nodes.py)
    proposals: list[Proposal] = field(default_factory=list)  # engines' moves waiting for a person's approval
