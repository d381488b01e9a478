"""/plan as `kubectl nodemedic` reads it: the parts it shows, typed and checked (plan_json.py writes the answer).

Every list and section may be absent (a leader of another version may not send it) and extra keys are allowed;
what is read must have its shape, or the answer is Unreadable with the place named.
"""

from __future__ import annotations

from dataclasses import dataclass

from remediator.read_side.fields import Fields


@dataclass(frozen=True)
class TaintRow:
    node: str
    key: str
    effect: str
    cause: str

    @staticmethod
    def read(f: Fields) -> TaintRow:
        return TaintRow(f.text("node"), f.text("key"), f.text("effect"), f.text("cause"))


@dataclass(frozen=True)
class PodRow:
    """An eviction (`why` is "STRATEGY: REASON"), or a pod protected or deferred and why."""

    namespace: str
    name: str
    node: str
    why: str

    @staticmethod
    def read(f: Fields) -> PodRow:
        return PodRow(f.text("namespace"), f.text("name"), f.text("node"), f.text("why"))

    @staticmethod
    def read_eviction(f: Fields) -> PodRow:
        return PodRow(f.text("namespace"), f.text("name"), f.text("node"), f"{f.text('strategy')}: {f.text('reason')}")


@dataclass(frozen=True)
class HeldRow:
    node: str
    key: str
    why: str

    @staticmethod
    def read(f: Fields) -> HeldRow:
        return HeldRow(f.text("node"), f.text("key"), f.text("why"))


@dataclass(frozen=True)
class Breaker:
    open: bool
    tainted_limit: int | None  # None: not said

    @staticmethod
    def read(f: Fields | None) -> Breaker:
        if f is None:
            return Breaker(False, None)
        return Breaker(f.flag("open"), None if f.doc.get("taintedLimit") is None else f.integer("taintedLimit"))


@dataclass(frozen=True)
class ZoneMoveRow:
    source: str
    target: str
    pods: int

    @staticmethod
    def read(f: Fields) -> ZoneMoveRow:
        return ZoneMoveRow(f.text("from"), f.text("to"), f.integer("pods"))


@dataclass(frozen=True)
class ExposureRow:
    namespace: str
    workload: str
    surviving: float
    best: float
    moves: tuple[ZoneMoveRow, ...]

    @staticmethod
    def read(f: Fields) -> ExposureRow:
        return ExposureRow(f.text("namespace"), f.text("workload"), f.number("surviving"), f.number("best"),
                           f.rows("moves", ZoneMoveRow.read))


@dataclass(frozen=True)
class LoopRow:
    namespace: str
    owner: str
    node: str
    note: str

    @staticmethod
    def read(f: Fields) -> LoopRow:
        return LoopRow(f.text("namespace"), f.text("owner"), f.text("node"), f.text("note"))


@dataclass(frozen=True)
class RepairRow:
    """A repair ladder's step to start (`what` = action and service), end (`what` = rule) or waiting (the step)."""

    node: str
    what: str
    why: str
    repaired: bool = False  # of an ending ladder

    @staticmethod
    def read_start(f: Fields) -> RepairRow:
        service = f.optional_text("service") or ""
        return RepairRow(f.text("node"), f"{f.text('action')} {service}".strip(),
                         f"step {f.integer('step')} of {f.text('rule')}: {f.text('cause')}")

    @staticmethod
    def read_end(f: Fields) -> RepairRow:
        return RepairRow(f.text("node"), f.text("rule"), f.text("result"), f.flag("repaired"))

    @staticmethod
    def read_waiting(f: Fields) -> RepairRow:
        until = f.optional_text("until")
        return RepairRow(f.text("node"), f.text("step"), f.text("why") + (f" (until {until})" if until else ""))


@dataclass(frozen=True)
class RepairSection:
    starts: tuple[RepairRow, ...] = ()
    ends: tuple[RepairRow, ...] = ()
    waiting: tuple[RepairRow, ...] = ()
    needs_a_person: tuple[str, ...] = ()  # nodes
    halted: tuple[str, ...] = ()  # groups

    @staticmethod
    def read(f: Fields | None) -> RepairSection:
        if f is None:
            return RepairSection()
        return RepairSection(f.rows("start", RepairRow.read_start), f.rows("end", RepairRow.read_end),
                             f.rows("waiting", RepairRow.read_waiting), f.texts("needsAPerson"), f.names("halted"))


@dataclass(frozen=True)
class DarkRow:
    """A silent node (`what` = how it is seen), a fence (its evidence), a NodeClaim deleted, a fence ended."""

    node: str
    what: str
    why: str
    needs_evidence: bool = False

    @staticmethod
    def read_silent(f: Fields) -> DarkRow:
        return DarkRow(f.text("node"), f.text("seen"), f.text("why"), f.flag("needsEvidence"))

    @staticmethod
    def read_fence(f: Fields) -> DarkRow:
        return DarkRow(f.text("node"), f.text("evidence"), f.text("detail"))

    @staticmethod
    def read_claim(f: Fields) -> DarkRow:
        return DarkRow(f.text("node"), f.text("nodeClaim"), f.text("detail"))

    @staticmethod
    def read_unfence(f: Fields) -> DarkRow:
        return DarkRow(f.text("node"), "out-of-service" if f.flag("taint") else "confirmation", f.text("why"))


@dataclass(frozen=True)
class DarkSection:
    silent: tuple[DarkRow, ...] = ()
    fences: tuple[DarkRow, ...] = ()
    claim_deletes: tuple[DarkRow, ...] = ()
    unfences: tuple[DarkRow, ...] = ()

    @staticmethod
    def read(f: Fields | None) -> DarkSection:
        if f is None:
            return DarkSection()
        return DarkSection(f.rows("nodes", DarkRow.read_silent), f.rows("fence", DarkRow.read_fence),
                           f.rows("deleteNodeClaim", DarkRow.read_claim), f.rows("unfence", DarkRow.read_unfence))


@dataclass(frozen=True)
class PlanAnswer:
    taints_add: tuple[TaintRow, ...] = ()
    taints_remove: tuple[TaintRow, ...] = ()
    evictions: tuple[PodRow, ...] = ()
    protected: tuple[PodRow, ...] = ()
    deferred: tuple[PodRow, ...] = ()
    held: tuple[HeldRow, ...] = ()
    breaker: Breaker = Breaker(False, None)
    zone_exposure: tuple[ExposureRow, ...] = ()
    scheduler_loops: tuple[LoopRow, ...] = ()
    repair: RepairSection = RepairSection()
    dark: DarkSection = DarkSection()

    @staticmethod
    def read(doc: object) -> PlanAnswer:
        f = Fields.of(doc, "/plan")
        taints = f.section("taints") or Fields({}, "/plan: taints")
        return PlanAnswer(
            taints_add=taints.rows("add", TaintRow.read), taints_remove=taints.rows("remove", TaintRow.read),
            evictions=f.rows("evictions", PodRow.read_eviction), protected=f.rows("protected", PodRow.read),
            deferred=f.rows("deferred", PodRow.read), held=f.rows("held", HeldRow.read),
            breaker=Breaker.read(f.section("breaker")), zone_exposure=f.rows("zoneExposure", ExposureRow.read),
            scheduler_loops=f.rows("schedulerLoops", LoopRow.read), repair=RepairSection.read(f.section("repair")),
            dark=DarkSection.read(f.section("darkNodes")))
