"""plan_json.py: a plan as the /plan JSON document — each section's fields, the zone exposure only of exposed
workloads, the repair and dark-node sections only when they hold something, and each strategy report under its own
key."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence

from remediator.model.plan import (
    Held,
    HoldReason,
    NodeNotice,
    Nomination,
    Plan,
    PlannedEviction,
    Protected,
    SchedulerLoop,
    TaintChange,
    ZoneExposure,
    ZoneMove,
)
from remediator.model.records import Effect, Taint
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.plan_json import plan_json
from remediator.repair.decisions import RepairPlan
from tests.unit.remediator.strategies.cluster import NOW, pod


@dataclasses.dataclass(frozen=True)
class _Report:
    json_key: str
    body: object

    def to_json(self) -> object:
        return self.body

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return ()

    def nominations(self) -> Sequence[Nomination]:
        return ()


def _exposure(workload: str, surviving: float, best: float) -> ZoneExposure:
    return ZoneExposure("default", workload, (("a", 2), ("b", 0)), surviving, best, (ZoneMove("a", "b", 1),))


def test_an_empty_plan_has_every_standing_section_and_no_repair_or_dark_nodes() -> None:
    assert plan_json(Plan()) == {
        "taints": {"add": [], "remove": []}, "evictions": [], "protected": [], "deferred": [], "held": [],
        "breaker": {"open": False, "taintedLimit": 0}, "zoneExposure": [], "schedulerLoops": []}


def test_taint_changes_evictions_and_held_pods_carry_their_particulars() -> None:
    taint = Taint("nodemedic.io/kernel", "true", Effect.NO_EXECUTE)
    p = pod("web-1", "n1", namespace="shop")
    plan = Plan(taints_add=[TaintChange("n1", taint, ("a", "b"), "KernelDeadlock=True for 31s")],
                taints_remove=[TaintChange("n2", Taint("k"), ("a",), "cleared")],
                evictions=[PlannedEviction(p, "PodLifeTime", "older than 1h")],
                protected=[Protected(p, "PDB allows no disruption")], deferred=[Protected(p, "limit")],
                held=[Held("n3", taint, ("a", "c"), HoldReason.PAUSED, "paused by annotation")],
                breaker_open=True, tainted_limit=4)
    doc = plan_json(plan)
    assert doc["taints"] == {
        "add": [{"node": "n1", "key": "nodemedic.io/kernel", "value": "true", "effect": "NoExecute", "rule": "a,b",
                 "cause": "KernelDeadlock=True for 31s"}],
        "remove": [{"node": "n2", "key": "k", "value": "", "effect": "NoSchedule", "rule": "a", "cause": "cleared"}]}
    assert doc["evictions"] == [{"namespace": "shop", "name": "web-1", "node": "n1", "strategy": "PodLifeTime",
                                 "reason": "older than 1h"}]
    assert doc["protected"] == [{"namespace": "shop", "name": "web-1", "node": "n1",
                                 "why": "PDB allows no disruption"}]
    assert doc["deferred"] == [{"namespace": "shop", "name": "web-1", "node": "n1", "why": "limit"}]
    assert doc["held"] == [{"node": "n3", "key": "nodemedic.io/kernel", "effect": "NoExecute", "rule": "a,c",
                            "why": "paused by annotation"}]
    assert doc["breaker"] == {"open": True, "taintedLimit": 4}


def test_only_exposed_workloads_are_listed_with_shares_rounded_to_three_places() -> None:
    plan = Plan(zone_exposure=[_exposure("Deployment/bad", 1 / 3, 2 / 3), _exposure("Deployment/ok", 0.6, 0.6),
                               _exposure("Deployment/above", 0.6, 0.9)], min_surviving_share=0.5)
    assert plan_json(plan)["zoneExposure"] == [
        {"namespace": "default", "workload": "Deployment/bad", "perZone": {"a": 2, "b": 0}, "surviving": 0.333,
         "best": 0.667, "moves": [{"from": "a", "to": "b", "pods": 1}]}]


def test_a_scheduler_loop_is_written_with_its_times_and_its_sentence() -> None:
    loop = SchedulerLoop("shop", "ReplicaSet/web-7d9f", "uid-1", "n1", NOW, NOW + dt.timedelta(seconds=30.5),
                         NOW + dt.timedelta(hours=1))
    [row] = plan_json(Plan(scheduler_loops=[loop]))["schedulerLoops"]  # type: ignore[misc]
    assert row == {"namespace": "shop", "owner": "ReplicaSet/web-7d9f", "node": "n1", "since": "2024-05-01T12:00:30Z",
                   "until": "2024-05-01T13:00:00Z", "note": loop.describe()}


def test_a_halted_repair_group_alone_brings_the_repair_section() -> None:
    doc = plan_json(Plan(repair=RepairPlan(halted={"pool-a": "too many in repair"})))
    assert doc["repair"] == {"start": [], "end": [], "waiting": [], "needsAPerson": [],
                             "halted": {"pool-a": "too many in repair"}, "unreadable": {}}
    assert PlanAnswer.read(doc).repair.halted == ("pool-a",)


def test_each_strategy_report_is_written_under_its_own_key() -> None:
    plan = Plan(reports={"A": _Report("balanceResourceMix", {"moves": 2}), "B": _Report("pending", [1])})
    doc = plan_json(plan)
    assert doc["balanceResourceMix"] == {"moves": 2}
    assert doc["pending"] == [1]
    assert "A" not in doc and "B" not in doc
