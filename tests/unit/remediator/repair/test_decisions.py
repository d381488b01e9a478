"""RepairPlan and its decisions: how a step describes itself, which nodes need a person, and the plan's JSON (the
optional fields left out when empty)."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.repair_contract import RepairAction
from remediator.repair.decisions import RepairEnd, RepairPlan, RepairStart, RepairWait
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


def test_starts_json_leaves_out_an_empty_service_and_claim() -> None:
    plan = RepairPlan(starts=[RepairStart("n1", _state(), "c1"),
                              RepairStart("n2", _state(RepairAction.REPLACE, service="", step=1), "c2", claim="nc-2"),
                              RepairStart("n3", _state(service="containerd"), "c3")])
    assert plan.starts_json() == [
        {"node": "n1", "rule": "disk", "step": 1, "action": "restart", "id": "1-0", "cause": "c1"},
        {"node": "n2", "rule": "disk", "step": 2, "action": "replace", "nodeClaim": "nc-2", "id": "1-1", "cause": "c2"},
        {"node": "n3", "rule": "disk", "step": 1, "action": "restart", "service": "containerd", "id": "1-0",
         "cause": "c3"},
    ]


def test_to_json_holds_every_decision_and_the_optional_wait_fields_only_when_set() -> None:
    plan = RepairPlan(
        ends=[RepairEnd("n1", _state(), result="repaired", repaired=True)],
        waiting=[RepairWait("n2", "disk", "step 1 of disk: restart", "a step is under way",
                            until=T0 + dt.timedelta(minutes=5)),
                 RepairWait("n3", "disk", "step 1 of disk: restart", "too many unhealthy", halted=True)],
        in_repair={"n4": _state(RepairAction.PERSON)},
        halted={"zone=a": "3 of 4"}, unreadable={"n5": "id: expected a non-empty string"})
    assert plan.to_json() == {
        "start": [],
        "end": [{"node": "n1", "rule": "disk", "repaired": True, "result": "repaired"}],
        "waiting": [{"node": "n2", "rule": "disk", "step": "step 1 of disk: restart", "why": "a step is under way",
                     "until": "2026-01-02T03:05:00Z"},
                    {"node": "n3", "rule": "disk", "step": "step 1 of disk: restart", "why": "too many unhealthy",
                     "halted": True}],
        "needsAPerson": ["n4"],
        "halted": {"zone=a": "3 of 4"},
        "unreadable": {"n5": "id: expected a non-empty string"},
    }


def test_to_json_copies_the_halted_and_unreadable_maps() -> None:
    plan = RepairPlan(halted={"g": "why"})
    doc = plan.to_json()
    doc["halted"]["other"] = "x"  # type: ignore[index]
    assert plan.halted == {"g": "why"}
