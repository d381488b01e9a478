"""DryRunReport: every action a plan holds is logged and counted once, by kind; the same action with a new cause, a
new repair step id or a new dark-node detail is not new; an action the plan no longer holds is forgotten and
reported again when it returns."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from prometheus_client import CollectorRegistry

from nodemedic_common.fence_contract import Evidence
from nodemedic_common.repair_contract import RepairAction
from remediator.alerts.dry_run import DryRunReport
from remediator.alerts.metrics import create
from remediator.model.plan import Plan, PlannedEviction, TaintChange
from remediator.model.records import PodRecord, Taint
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, Unfence
from remediator.repair.decisions import RepairPlan, RepairStart
from remediator.repair.state import LadderState, step_id

LOG = logging.getLogger("test.dry_run")
T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)
BAD = Taint("nodemedic.io/bad")
POD = PodRecord(namespace="shop", name="web-1", uid="uid-web-1", node_name="n1")


def _plan(*, cause: str = "for 31s", second: int = 0, detail: str = "dark for 5m", evict: bool = True) -> Plan:
    requested = T0 + dt.timedelta(seconds=second)
    ladder = LadderState(id=step_id(requested, 0), rule="disk", step=0, action=RepairAction.RESTART,
                         service="kubelet", requested=requested, started=requested)
    return Plan(
        taints_add=[TaintChange("n1", BAD, ("disk",), f"DiskPressure {cause}")],
        taints_remove=[TaintChange("n2", BAD, ("disk",), "cleared")],
        evictions=[PlannedEviction(POD, "RemovePodsViolatingNodeTaints", f"tainted {cause}")] if evict else [],
        repair=RepairPlan(starts=[RepairStart("n3", ladder, cause=f"disk {cause}")]),
        dark=DarkPlan(fences=[Fence("n4", Evidence.REBOOT, detail, pods=("shop/a",))],
                      claim_deletes=[ClaimDelete("n5", "claim-5", detail)],
                      unfences=[Unfence("n6", f"Ready {detail}", taint=True)]))


def _counts(r: CollectorRegistry) -> dict[str, float | None]:
    kinds = ("taint", "untaint", "evict", "repair", "fence", "replace", "unfence")
    return {k: r.get_sample_value("nodemedic_dry_run_actions_total", {"action": k}) for k in kinds}


def test_each_action_is_logged_and_counted_once_by_kind(caplog: pytest.LogCaptureFixture) -> None:
    r = CollectorRegistry()
    report = DryRunReport(create(r), LOG)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        report.report(_plan())
    assert sorted(rec.getMessage() for rec in caplog.records) == sorted(
        f"dry-run: would {k}" for k in ("taint", "untaint", "evict", "repair", "fence", "replace", "unfence"))
    assert all(getattr(rec, "dry_run", None) is True for rec in caplog.records)
    evict = next(rec for rec in caplog.records if rec.getMessage() == "dry-run: would evict")
    assert evict.action == {"namespace": "shop", "name": "web-1", "node": "n1",  # type: ignore[attr-defined]
                            "strategy": "RemovePodsViolatingNodeTaints", "reason": "tainted for 31s"}
    assert _counts(r) == dict.fromkeys(_counts(r), 1.0)


def test_the_same_actions_next_cycle_with_new_causes_ids_and_details_are_not_reported_again(
        caplog: pytest.LogCaptureFixture) -> None:
    r = CollectorRegistry()
    report = DryRunReport(create(r), LOG)
    report.report(_plan())
    caplog.clear()  # only the second cycle's records (another test may have left the root logger at INFO)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        report.report(_plan(cause="for 1h0m5s", second=30, detail="dark for 6m"))
    assert caplog.records == []
    assert set(_counts(r).values()) == {1.0}


def test_an_action_gone_from_the_plan_is_forgotten_and_reported_again_when_it_returns(
        caplog: pytest.LogCaptureFixture) -> None:
    r = CollectorRegistry()
    report = DryRunReport(create(r), LOG)
    report.report(_plan())
    report.report(_plan(evict=False))
    caplog.clear()  # only the third cycle's records
    with caplog.at_level(logging.INFO, logger=LOG.name):
        report.report(_plan())
    assert [rec.getMessage() for rec in caplog.records] == ["dry-run: would evict"]
    assert _counts(r)["evict"] == 2


def test_a_different_target_is_a_new_action() -> None:
    r = CollectorRegistry()
    report = DryRunReport(create(r), LOG)
    report.report(_plan())
    other = _plan()
    other.taints_add = [TaintChange("n9", BAD, ("disk",), "DiskPressure for 31s")]
    report.report(other)
    assert _counts(r)["taint"] == 2
    assert _counts(r)["untaint"] == 1
