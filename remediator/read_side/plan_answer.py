"""/plan and `nodemedic-remediator plan --json`: the plan as one typed answer, made from the plan (`of`), written as
the JSON document people and `kubectl nodemedic` read (`to_json`), and read back by the plugin (`read`).

Every list and section may be absent when read (a leader of another version may not send it) and extra keys are
allowed; what is read must have its shape, or the answer is Unreadable with the place named. Every key that is not
one of the plan's own is a strategy's report (or a newer leader's section), carried as the JSON it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from remediator.model.plan import Plan
from remediator.read_side.fields import Fields, JsonValue, json_value
from remediator.read_side.plan_rows import (
    Breaker,
    EvictionRow,
    ExposureRow,
    HeldRow,
    LoopRow,
    PodRow,
    ProposalRow,
    TaintRow,
)
from remediator.read_side.plan_sections import DarkSection, RepairSection

# The plan's own keys; every other key is a report.
_OWN_KEYS = frozenset({"taints", "evictions", "protected", "deferred", "held", "breaker", "zoneExposure",
                       "schedulerLoops", "repair", "darkNodes", "proposals"})


@dataclass(frozen=True)
class PlanAnswer:
    taints_add: tuple[TaintRow, ...] = ()
    taints_remove: tuple[TaintRow, ...] = ()
    evictions: tuple[EvictionRow, ...] = ()
    protected: tuple[PodRow, ...] = ()
    deferred: tuple[PodRow, ...] = ()
    held: tuple[HeldRow, ...] = ()
    breaker: Breaker = field(default_factory=Breaker)
    zone_exposure: tuple[ExposureRow, ...] = ()  # the exposed workloads only
    scheduler_loops: tuple[LoopRow, ...] = ()
    proposals: tuple[ProposalRow, ...] = ()  # engines' moves waiting for a person (a Migration each)
    repair: RepairSection | None = None  # None: no ladder in the plan (the section is left out)
    dark: DarkSection | None = None  # None: no silent node nor fence ending (left out)
    reports: Mapping[str, JsonValue] = field(default_factory=dict)  # each strategy's report under its JSON key

    @staticmethod
    def of(plan: Plan) -> PlanAnswer:
        repair, dark = plan.repair, plan.dark
        has_repair = bool(repair.in_repair or repair.waiting or repair.ends or repair.unreadable or repair.halted)
        return PlanAnswer(
            taints_add=tuple(TaintRow.of(c) for c in plan.taints_add),
            taints_remove=tuple(TaintRow.of(c) for c in plan.taints_remove),
            evictions=tuple(EvictionRow.of(e) for e in plan.evictions),
            protected=tuple(PodRow.of(p) for p in plan.protected), deferred=tuple(PodRow.of(p) for p in plan.deferred),
            held=tuple(HeldRow.of(h) for h in plan.held), breaker=Breaker(plan.breaker_open, plan.tainted_limit),
            zone_exposure=tuple(ExposureRow.of(z) for z in plan.zone_exposure if z.exposed(plan.min_surviving_share)),
            scheduler_loops=tuple(LoopRow.of(loop) for loop in plan.scheduler_loops),
            proposals=tuple(ProposalRow.of(p) for p in plan.proposals),
            repair=RepairSection.of(repair) if has_repair else None,
            dark=DarkSection.of(dark) if dark.nodes or dark.unfences else None,
            reports={r.json_key: json_value(r.to_json(), f"/plan: {r.json_key}") for r in plan.reports.values()})

    def to_json(self) -> dict[str, object]:
        return {
            "taints": {"add": [c.to_json() for c in self.taints_add],
                       "remove": [c.to_json() for c in self.taints_remove]},
            "evictions": [e.to_json() for e in self.evictions],
            "protected": [p.to_json() for p in self.protected], "deferred": [p.to_json() for p in self.deferred],
            "held": [h.to_json() for h in self.held], "breaker": self.breaker.to_json(),
            "zoneExposure": [z.to_json() for z in self.zone_exposure],
            "schedulerLoops": [loop.to_json() for loop in self.scheduler_loops],
            "proposals": [p.to_json() for p in self.proposals],
            **({} if self.repair is None else {"repair": self.repair.to_json()}),
            **({} if self.dark is None else {"darkNodes": self.dark.to_json()}),
            **self.reports,
        }

    @staticmethod
    def read(doc: object) -> PlanAnswer:
        f = Fields.of(doc, "/plan")
        taints = f.section("taints") or Fields({}, "/plan: taints")
        repair, dark = f.section("repair"), f.section("darkNodes")
        return PlanAnswer(
            taints_add=taints.rows("add", TaintRow.read), taints_remove=taints.rows("remove", TaintRow.read),
            evictions=f.rows("evictions", EvictionRow.read), protected=f.rows("protected", PodRow.read),
            deferred=f.rows("deferred", PodRow.read), held=f.rows("held", HeldRow.read),
            breaker=Breaker.read(f.section("breaker")), zone_exposure=f.rows("zoneExposure", ExposureRow.read),
            scheduler_loops=f.rows("schedulerLoops", LoopRow.read),
            proposals=f.rows("proposals", ProposalRow.read),
            repair=None if repair is None else RepairSection.read(repair),
            dark=None if dark is None else DarkSection.read(dark),
            reports={k: json_value(v, f"/plan: {k}") for k, v in f.doc.items() if k not in _OWN_KEYS})
