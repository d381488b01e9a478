"""The repair and darkNodes sections of /plan as the read side writes them from the plan's decisions (the optional
fields left out when empty, nodes sorted), and read back into the same types."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.fence_contract import Evidence
from nodemedic_common.repair_contract import RepairAction
from remediator.read_side.fields import Fields
from remediator.read_side.plan_sections import DarkSection, RepairSection
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, Seen, SilentNode, Unfence
from remediator.repair.decisions import RepairEnd, RepairPlan, RepairStart, RepairWait
from remediator.repair.state import LadderState

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)


def _state(action: RepairAction = RepairAction.RESTART, *, service: str = "", step: int = 0) -> LadderState:
    return LadderState(id=f"1-{step}", rule="disk", step=step, action=action, service=service, requested=T0,
                       started=T0)


def _node(name: str, seen: Seen, **fields: object) -> SilentNode:
    return SilentNode(node=name, seen=seen, kubelet_silent_since=None, agent_heard=None, why=f"why {name}",
                      **fields)  # type: ignore[arg-type]


def test_starts_json_leaves_out_an_empty_service_and_claim() -> None:
    plan = RepairPlan(starts=[RepairStart("n1", _state(), "c1"),
                              RepairStart("n2", _state(RepairAction.REPLACE, service="", step=1), "c2", claim="nc-2"),
                              RepairStart("n3", _state(service="containerd"), "c3")])
    assert RepairSection.of(plan).to_json()["start"] == [
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
    assert RepairSection.of(plan).to_json() == {
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
    doc = RepairSection.of(plan).to_json()
    doc["halted"]["other"] = "x"  # type: ignore[index]
    assert plan.halted == {"g": "why"}


def test_an_empty_dark_plan_has_empty_lists_and_maps() -> None:
    assert DarkSection.of(DarkPlan()).to_json() == {"nodes": [], "fence": [], "deleteNodeClaim": [], "unfence": [],
                                                    "halted": {}}


def test_nodes_are_sorted_by_name_and_carry_their_optional_fields_only_when_set() -> None:
    plan = DarkPlan(nodes={
        "n2": _node("n2", Seen.DARK, needs_evidence=True, halted=True),
        "n1": SilentNode(node="n1", seen=Seen.KUBELET_SILENT, kubelet_silent_since=T0,
                         agent_heard=T0 + dt.timedelta(seconds=90, microseconds=5), why="the agent still writes"),
    })
    assert DarkSection.of(plan).to_json()["nodes"] == [
        {"node": "n1", "seen": "kubelet-silent", "why": "the agent still writes",
         "kubeletSilentSince": "2026-01-02T03:00:00Z", "agentHeard": "2026-01-02T03:01:30Z"},
        {"node": "n2", "seen": "dark", "why": "why n2", "needsEvidence": True, "halted": True},
    ]


def test_fences_claim_deletes_and_unfences_keep_their_order_and_list_the_pods_they_free() -> None:
    plan = DarkPlan(
        fences=[Fence("n9", Evidence.PERSON, "confirmed off", pods=("ns/a", "ns/b")),
                Fence("n1", Evidence.REBOOT, "d")],
        claim_deletes=[ClaimDelete("n3", "claim-3", "dark for 10m", pods=("ns/c",))],
        unfences=[Unfence("n4", "Ready again", taint=False)],
        halted={"cluster": "5 of 6 dark"})
    doc = DarkSection.of(plan).to_json()
    assert doc["fence"] == [{"node": "n9", "evidence": "person", "detail": "confirmed off", "frees": ["ns/a", "ns/b"]},
                            {"node": "n1", "evidence": "reboot", "detail": "d", "frees": []}]
    assert doc["deleteNodeClaim"] == [{"node": "n3", "nodeClaim": "claim-3", "detail": "dark for 10m",
                                       "frees": ["ns/c"]}]
    assert doc["unfence"] == [{"node": "n4", "why": "Ready again", "taint": False}]
    assert doc["halted"] == {"cluster": "5 of 6 dark"}


def test_both_sections_read_back_into_the_types_that_wrote_them() -> None:
    repair = RepairPlan(starts=[RepairStart("n1", _state(RepairAction.RESTART, service="kubelet"), "disk full")],
                        halted={"zone-a": "3 of 4 nodes in repair"})
    written = RepairSection.of(repair)
    assert RepairSection.read(Fields.of(written.to_json(), "/plan: repair")) == written
    dark = DarkPlan(nodes={"n2": _node("n2", Seen.DARK, needs_evidence=True)})
    written_dark = DarkSection.of(dark)
    assert DarkSection.read(Fields.of(written_dark.to_json(), "/plan: darkNodes")) == written_dark
