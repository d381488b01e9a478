"""PlanAnnouncements: what a plan says is announced once, not every cycle: held taints (remembered HELD_MEMORY
seconds), the breaker's trips, the reports' notices, zone exposure crossing the threshold both ways, scheduler loops
and dark nodes; the gauges kept in step with the plan, and nothing written when `write` is off (dry-run)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from remediator.alerts.alert import AlertKind
from remediator.alerts.metrics import create
from remediator.alerts.plan_announcements import HELD_MEMORY, PlanAnnouncements
from remediator.model.migration import Gain
from remediator.model.plan import (
    Held,
    HoldReason,
    NodeNotice,
    Nomination,
    Plan,
    SchedulerLoop,
    ZoneExposure,
)
from remediator.model.records import Taint
from remediator.repair.dark_decisions import DarkPlan, Seen, SilentNode

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)
BAD = Taint("nodemedic.io/bad")


class FakeAlerts:
    """Records what the announcements ask for, as Alerts' node() and object() receive it."""

    def __init__(self) -> None:
        self.log = logging.getLogger("test.plan_announcements")
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def node(self, node: str, **kw: Any) -> None:
        self.calls.append(("node", {"node": node, **kw}))

    async def object(self, **kw: Any) -> None:
        self.calls.append(("object", kw))

    def reasons(self) -> list[str]:
        return [kw["reason"] for _, kw in self.calls]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _announcements() -> tuple[PlanAnnouncements, FakeAlerts, CollectorRegistry, Clock]:
    alerts, r, clock = FakeAlerts(), CollectorRegistry(), Clock()
    return PlanAnnouncements(alerts, create(r), clock), alerts, r, clock  # type: ignore[arg-type]


def _held(node: str = "n1", reason: HoldReason = HoldReason.CIRCUIT_BREAKER) -> Held:
    return Held(node, BAD, ("disk", "io"), reason, f"why {reason}")


def test_a_held_taint_is_announced_once_and_again_only_after_held_memory() -> None:
    a, alerts, r, clock = _announcements()
    plan = Plan(held=[_held()])
    asyncio.run(a.held(plan))
    assert alerts.calls == [("node", {"node": "n1", "kind": AlertKind.BREAKER_OPEN, "type_": "Warning",
                                      "reason": "NodemedicCircuitBreakerOpen",
                                      "message": "not tainting nodemedic.io/bad: why circuit breaker",
                                      "details": {"rule": "disk,io"}})]
    clock.now += HELD_MEMORY - 1
    asyncio.run(a.held(Plan()))  # the condition flaps off...
    asyncio.run(a.held(plan))  # ...and back: still remembered, and remembered anew from now
    clock.now += HELD_MEMORY - 1
    asyncio.run(a.held(Plan()))
    assert len(alerts.calls) == 1
    clock.now += 1
    asyncio.run(a.held(plan))
    assert len(alerts.calls) == 2
    assert r.get_sample_value("nodemedic_taints_held_total", {"why": "circuit breaker"}) == 2


def test_a_hold_by_another_rail_is_a_held_event_and_counted_under_its_reason() -> None:
    a, alerts, r, _ = _announcements()
    asyncio.run(a.held(Plan(held=[_held(reason=HoldReason.OPTED_OUT), _held(reason=HoldReason.PAUSED)])))
    assert [(kw["kind"], kw["reason"]) for _, kw in alerts.calls] == [(AlertKind.HELD, "NodemedicHeld")] * 2
    assert r.get_sample_value("nodemedic_taints_held_total", {"why": "opted out"}) == 1
    assert r.get_sample_value("nodemedic_taints_held_total", {"why": "paused"}) == 1


def test_a_taint_waiting_for_an_untaint_to_land_is_not_announced_nor_counted() -> None:
    a, alerts, r, _ = _announcements()
    asyncio.run(a.held(Plan(held=[_held(reason=HoldReason.UNTAINT_PENDING)])))
    assert alerts.calls == []
    assert r.get_sample_value("nodemedic_taints_held_total", {"why": "untaint pending"}) is None
    asyncio.run(a.held(Plan(held=[_held()])))  # the untaint did not land: the breaker holds it, and that is news
    assert alerts.reasons() == ["NodemedicCircuitBreakerOpen"]


def test_the_breaker_trips_are_counted_on_each_opening_only() -> None:
    a, _, r, _ = _announcements()
    for open_ in (True, True, False, True):
        asyncio.run(a.held(Plan(breaker_open=open_)))
    assert r.get_sample_value("nodemedic_circuit_breaker_trips_total") == 2


@dataclasses.dataclass
class Report:
    found: tuple[NodeNotice, ...]

    @property
    def json_key(self) -> str:
        return "test"

    def to_json(self) -> object:
        return {}

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return self.found

    def nominations(self) -> Sequence[Nomination]:
        return ()

    def gain(self) -> Gain | None:
        return None


def _notice(node: str) -> NodeNotice:
    return NodeNotice(key=(node,), node=node, kind="Found", reason="NodemedicFound", message=f"found on {node}",
                      details=(("k", "v"),))


def test_a_notice_is_announced_when_it_first_appears_and_after_it_went_away() -> None:
    a, alerts, _, _ = _announcements()
    asyncio.run(a.notices(Plan(reports={"S": Report((_notice("n1"),))}), write=True))
    asyncio.run(a.notices(Plan(reports={"S": Report((_notice("n1"), _notice("n2")))}), write=True))
    asyncio.run(a.notices(Plan(reports={"S": Report(())}), write=True))
    asyncio.run(a.notices(Plan(reports={"S": Report((_notice("n1"),))}), write=True))
    assert [kw["node"] for _, kw in alerts.calls] == ["n1", "n2", "n1"]
    assert alerts.calls[0][1] == {"node": "n1", "kind": "Found", "type_": "Warning", "reason": "NodemedicFound",
                                  "message": "found on n1", "details": {"k": "v"}}


def test_notices_seen_in_dry_run_are_not_announced_later() -> None:
    a, alerts, _, _ = _announcements()
    plan = Plan(reports={"S": Report((_notice("n1"),))})
    asyncio.run(a.notices(plan, write=False))
    asyncio.run(a.notices(plan, write=True))
    assert alerts.calls == []


def _exposure(surviving: float, workload: str = "Deployment/web") -> ZoneExposure:
    return ZoneExposure("shop", workload, (("a", 3), ("b", 1)), surviving=surviving, best=0.5, moves=())


def test_zone_exposure_sets_the_gauges_and_announces_crossing_the_threshold_each_way() -> None:
    a, alerts, r, _ = _announcements()
    labels = {"namespace": "shop", "workload": "Deployment/web"}
    asyncio.run(a.zone_exposure(Plan(zone_exposure=[_exposure(0.25)], min_surviving_share=0.4), write=True,
                                max_series=500))
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio", labels) == 0.25
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio_best", labels) == 0.5
    asyncio.run(a.zone_exposure(Plan(zone_exposure=[_exposure(0.25)], min_surviving_share=0.4), write=True,
                                max_series=500))
    asyncio.run(a.zone_exposure(Plan(zone_exposure=[_exposure(0.5)], min_surviving_share=0.4), write=True,
                                max_series=500))
    assert alerts.reasons() == ["NodemedicZoneExposure", "NodemedicZoneExposureCleared"]
    warning, cleared = alerts.calls[0][1], alerts.calls[1][1]
    assert warning["message"].startswith("below 40%: shop/Deployment/web: 25% of 4 replicas")
    assert (warning["type_"], warning["kind"]) == ("Warning", AlertKind.ZONE_EXPOSURE)
    assert warning["involved"] == {"kind": "Deployment", "name": "web", "namespace": "shop", "apiVersion": "apps/v1"}
    assert cleared["message"] == "50% of its replicas survive the loss of its worst zone now (threshold 40%)"
    assert (cleared["type_"], cleared["kind"]) == ("Normal", None)


def test_a_workload_gone_from_the_plan_loses_its_series_and_is_cleared_as_having_no_replicas() -> None:
    a, alerts, r, _ = _announcements()
    rc = _exposure(0.25, "ReplicationController/old")
    asyncio.run(a.zone_exposure(Plan(zone_exposure=[rc], min_surviving_share=0.4), write=True, max_series=500))
    asyncio.run(a.zone_exposure(Plan(min_surviving_share=0.4), write=True, max_series=500))
    labels = {"namespace": "shop", "workload": "ReplicationController/old"}
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio", labels) is None
    assert alerts.calls[0][1]["involved"]["apiVersion"] == "v1"
    assert alerts.calls[1][1]["message"].startswith("no replicas left to lose of its replicas survive")


def test_zone_exposure_in_dry_run_sets_the_gauges_but_announces_nothing_and_remembers_nothing() -> None:
    a, alerts, r, _ = _announcements()
    plan = Plan(zone_exposure=[_exposure(0.25)], min_surviving_share=0.4)
    asyncio.run(a.zone_exposure(plan, write=False, max_series=500))
    assert alerts.calls == []
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio",
                              {"namespace": "shop", "workload": "Deployment/web"}) == 0.25
    asyncio.run(a.zone_exposure(plan, write=True, max_series=500))
    assert alerts.reasons() == ["NodemedicZoneExposure"]


def _loop(uid: str) -> SchedulerLoop:
    return SchedulerLoop("shop", f"ReplicaSet/{uid}", uid, "n1", T0, T0, T0 + dt.timedelta(hours=1))


def test_each_new_scheduler_loop_is_counted_and_announced_once_and_the_gauge_follows_the_plan() -> None:
    a, alerts, r, _ = _announcements()
    asyncio.run(a.scheduler_loops(Plan(scheduler_loops=[_loop("a")]), write=True))
    asyncio.run(a.scheduler_loops(Plan(scheduler_loops=[_loop("a"), _loop("b")]), write=False))
    asyncio.run(a.scheduler_loops(Plan(scheduler_loops=[_loop("b")]), write=True))
    assert r.get_sample_value("nodemedic_scheduler_loops_total") == 2
    assert r.get_sample_value("nodemedic_scheduler_loop_held_workloads") == 1
    assert alerts.reasons() == ["NodemedicSchedulerDisagrees"]  # b was new in the dry cycle: counted, not told
    assert alerts.calls[0][1]["involved"]["kind"] == "ReplicaSet"
    assert alerts.calls[0][1]["message"] == _loop("a").describe()


def _silent(node: str, seen: Seen = Seen.DARK, **flags: bool) -> SilentNode:
    return SilentNode(node, seen, None, None, why=f"{node} waits", **flags)


def test_dark_nodes_set_the_gauges_and_announce_a_node_again_when_its_reason_changes() -> None:
    a, alerts, r, _ = _announcements()
    plan = Plan(dark=DarkPlan(nodes={"n1": _silent("n1", needs_evidence=True), "n2": _silent("n2", Seen.FENCED)},
                              halted={}))
    asyncio.run(a.dark_nodes(plan, write=True))
    assert r.get_sample_value("nodemedic_silent_nodes", {"seen": "dark"}) == 1
    assert r.get_sample_value("nodemedic_silent_nodes", {"seen": "fenced"}) == 1
    assert r.get_sample_value("nodemedic_silent_nodes", {"seen": "returning"}) == 0
    assert r.get_sample_value("nodemedic_dark_node_needs_evidence", {"node": "n1"}) == 1
    asyncio.run(a.dark_nodes(plan, write=True))
    halted = Plan(dark=DarkPlan(nodes={"n1": _silent("n1", needs_evidence=True, halted=True)},
                                halted={"zone=a": "too many"}))
    asyncio.run(a.dark_nodes(halted, write=True))
    assert alerts.reasons() == ["NodemedicDarkNode", "NodemedicManyNodesDark"]
    assert alerts.calls[0][1] == {"node": "n1", "kind": AlertKind.DARK_NODE, "type_": "Warning",
                                  "reason": "NodemedicDarkNode", "message": "n1 waits", "details": {}}
    assert r.get_sample_value("nodemedic_dark_nodes_halted", {"group": "zone=a"}) == 1
    asyncio.run(a.dark_nodes(Plan(), write=True))
    assert r.get_sample_value("nodemedic_dark_node_needs_evidence", {"node": "n1"}) is None
    assert r.get_sample_value("nodemedic_dark_nodes_halted", {"group": "zone=a"}) is None


def test_dark_nodes_in_dry_run_announce_nothing_and_remember_nothing() -> None:
    a, alerts, _, _ = _announcements()
    plan = Plan(dark=DarkPlan(nodes={"n1": _silent("n1", needs_evidence=True)}))
    asyncio.run(a.dark_nodes(plan, write=False))
    assert alerts.calls == []
    asyncio.run(a.dark_nodes(plan, write=True))
    assert alerts.reasons() == ["NodemedicDarkNode"]


def test_a_workload_not_exposed_has_no_exposure_series() -> None:
    a, _, r, _ = _announcements()
    spread = ZoneExposure("shop", "Deployment/spread", (), surviving=0.5, best=0.5, moves=())
    plan = Plan(zone_exposure=[_exposure(0.25), spread], min_surviving_share=0.6)
    asyncio.run(a.zone_exposure(plan, write=True, max_series=500))
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio",
                              {"namespace": "shop", "workload": "Deployment/spread"}) is None
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio",
                              {"namespace": "shop", "workload": "Deployment/web"}) == 0.25
    assert r.get_sample_value("nodemedic_zone_exposed_workloads") == 1
