"""The rows of /plan's lists (taints, evictions, pods held back, zone exposure, scheduler loops) and its breaker:
each with every field of its JSON, made from the plan (`of`), written (`to_json`) and read back (`read`)."""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic_common.repair_contract import format_time
from remediator.model.plan import (
    Held,
    PlannedEviction,
    Proposal,
    Protected,
    SchedulerLoop,
    TaintChange,
    ZoneExposure,
    ZoneMove,
)
from remediator.read_side.fields import Fields


@dataclass(frozen=True)
class TaintRow:
    """A taint to add or to remove."""

    node: str
    key: str
    value: str
    effect: str
    rule: str  # the rules that want (add) or released (remove) it, comma-separated
    cause: str

    @staticmethod
    def of(c: TaintChange) -> TaintRow:
        return TaintRow(c.node, c.taint.key, c.taint.value, str(c.taint.effect), ",".join(c.rules), c.cause)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "key": self.key, "value": self.value, "effect": self.effect, "rule": self.rule,
                "cause": self.cause}

    @staticmethod
    def read(f: Fields) -> TaintRow:
        return TaintRow(f.text("node"), f.text("key"), f.text("value"), f.text("effect"), f.text("rule"),
                        f.text("cause"))


@dataclass(frozen=True)
class EvictionRow:
    namespace: str
    name: str
    node: str
    strategy: str
    reason: str

    @staticmethod
    def of(e: PlannedEviction) -> EvictionRow:
        return EvictionRow(e.pod.namespace, e.pod.name, e.pod.node_name, e.strategy, e.reason)

    def to_json(self) -> dict[str, object]:
        return {"namespace": self.namespace, "name": self.name, "node": self.node, "strategy": self.strategy,
                "reason": self.reason}

    @staticmethod
    def read(f: Fields) -> EvictionRow:
        return EvictionRow(f.text("namespace"), f.text("name"), f.text("node"), f.text("strategy"), f.text("reason"))


@dataclass(frozen=True)
class PodRow:
    """A pod protected from eviction, or deferred, and why."""

    namespace: str
    name: str
    node: str
    why: str

    @staticmethod
    def of(p: Protected) -> PodRow:
        return PodRow(p.pod.namespace, p.pod.name, p.pod.node_name, p.why)

    def to_json(self) -> dict[str, object]:
        return {"namespace": self.namespace, "name": self.name, "node": self.node, "why": self.why}

    @staticmethod
    def read(f: Fields) -> PodRow:
        return PodRow(f.text("namespace"), f.text("name"), f.text("node"), f.text("why"))


@dataclass(frozen=True)
class HeldRow:
    """A taint the rules want that a safety rail holds back."""

    node: str
    key: str
    effect: str
    rule: str  # comma-separated
    why: str

    @staticmethod
    def of(h: Held) -> HeldRow:
        return HeldRow(h.node, h.taint.key, str(h.taint.effect), ",".join(h.rules), h.why)

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, "key": self.key, "effect": self.effect, "rule": self.rule, "why": self.why}

    @staticmethod
    def read(f: Fields) -> HeldRow:
        return HeldRow(f.text("node"), f.text("key"), f.text("effect"), f.text("rule"), f.text("why"))


@dataclass(frozen=True)
class Breaker:
    open: bool = False
    tainted_limit: int | None = None  # None: not said

    def to_json(self) -> dict[str, object]:
        return {"open": self.open, "taintedLimit": self.tainted_limit}

    @staticmethod
    def read(f: Fields | None) -> Breaker:
        if f is None:
            return Breaker()
        return Breaker(f.flag("open"), None if f.doc.get("taintedLimit") is None else f.integer("taintedLimit"))


@dataclass(frozen=True)
class ZoneMoveRow:
    source: str  # zone
    target: str
    pods: int

    @staticmethod
    def of(m: ZoneMove) -> ZoneMoveRow:
        return ZoneMoveRow(m.source, m.target, m.pods)

    def to_json(self) -> dict[str, object]:
        return {"from": self.source, "to": self.target, "pods": self.pods}

    @staticmethod
    def read(f: Fields) -> ZoneMoveRow:
        return ZoneMoveRow(f.text("from"), f.text("to"), f.integer("pods"))


@dataclass(frozen=True)
class ExposureRow:
    """A workload exposed to the loss of its worst zone, and the moves to the even spread."""

    namespace: str
    workload: str
    per_zone: tuple[tuple[str, int], ...]  # zone -> live replicas there
    surviving: float  # rounded to 3 places, as written
    best: float
    moves: tuple[ZoneMoveRow, ...]

    @staticmethod
    def of(z: ZoneExposure) -> ExposureRow:
        return ExposureRow(z.namespace, z.workload, z.per_zone, round(z.surviving, 3), round(z.best, 3),
                           tuple(ZoneMoveRow.of(m) for m in z.moves))

    def to_json(self) -> dict[str, object]:
        return {"namespace": self.namespace, "workload": self.workload, "perZone": dict(self.per_zone),
                "surviving": self.surviving, "best": self.best, "moves": [m.to_json() for m in self.moves]}

    @staticmethod
    def read(f: Fields) -> ExposureRow:
        return ExposureRow(f.text("namespace"), f.text("workload"), f.integer_map("perZone"), f.number("surviving"),
                           f.number("best"), f.rows("moves", ZoneMoveRow.read))


@dataclass(frozen=True)
class LoopRow:
    """A workload a balance strategy leaves alone: the scheduler put its moved pods straight back."""

    namespace: str
    owner: str
    node: str
    since: str  # RFC 3339
    until: str
    note: str

    @staticmethod
    def of(loop: SchedulerLoop) -> LoopRow:
        return LoopRow(loop.namespace, loop.owner, loop.node, format_time(loop.since), format_time(loop.until),
                       loop.describe())

    def to_json(self) -> dict[str, object]:
        return {"namespace": self.namespace, "owner": self.owner, "node": self.node, "since": self.since,
                "until": self.until, "note": self.note}

    @staticmethod
    def read(f: Fields) -> LoopRow:
        return LoopRow(f.text("namespace"), f.text("owner"), f.text("node"), f.text("since"), f.text("until"),
                       f.text("note"))


@dataclass(frozen=True)
class ProposalRow:
    """An engine's moves this plan hands on as a Migration for a person (control/migrations.py), not evicted."""

    engine: str
    moves: tuple[str, ...]  # "namespace/name FROM -> TO"
    gain: str  # "resource-mix deviation (points) 161.68 -> 142.3"; "" when the engine has no measure

    @staticmethod
    def of(p: Proposal) -> ProposalRow:
        gain = "" if p.gain is None else f"{p.gain.measure} {round(p.gain.before, 2):g} -> {round(p.gain.after, 2):g}"
        return ProposalRow(p.engine, tuple(f"{e.pod.key} {e.pod.node_name} -> {e.destination}" for e in p.moves), gain)

    def to_json(self) -> dict[str, object]:
        return {"engine": self.engine, "moves": list(self.moves), "gain": self.gain}

    @staticmethod
    def read(f: Fields) -> ProposalRow:
        return ProposalRow(f.text("engine"), f.texts("moves"), f.text("gain"))
