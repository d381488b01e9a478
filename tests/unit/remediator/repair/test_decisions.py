"""RepairPlan and its decisions: how a step describes itself and which nodes need a person (the plan's JSON of them
is the read side's: tests/unit/remediator/read_side/test_plan_sections.py)."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.repair_contract import RepairAction
from remediator.repair.decisions import RepairPlan, RepairStart
from remediator.repair.state import LadderState

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)


def _state(action: RepairAction = RepairAction.RESTART, *, service: str = "", step: int = 0) -> LadderState:
    return LadderState(id=f"1-{step}", rule="disk", step=step, action=action, service=service, requested=T0,
                       started=T0)


def test_a_start_describes_its_step_counted_from_one_with_its_service_and_cause() -> None:
    start = RepairStart(node="n1", state=_state(service="kubelet"), cause="KubeletDown for 5m")
    assert start.describe() == "step 1 of disk: restart kubelet (KubeletDown for 5m)"


def test_a_start_without_a_service_describes_its_action_alone() -> None:
    start = RepairStart(node="n1", state=_state(RepairAction.REBOOT, step=2), cause="still down")
    assert start.describe() == "step 3 of disk: reboot (still down)"


def test_needs_a_person_lists_the_nodes_whose_ladder_reached_person_sorted() -> None:
    plan = RepairPlan(in_repair={"n3": _state(RepairAction.PERSON), "n2": _state(RepairAction.REBOOT),
                                 "n1": _state(RepairAction.PERSON)})
    assert plan.needs_a_person() == ["n1", "n3"]


