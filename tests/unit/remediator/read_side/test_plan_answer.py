"""plan_answer.py: how `kubectl nodemedic` reads /plan — each row kind composed from its fields (an eviction's
`why`, a repair step's `what` and `why`, an unfence's kind), absent sections read as empty, and a value of the wrong
shape refused naming its place."""

from __future__ import annotations

import pytest

from remediator.read_side.fields import Fields, Unreadable
from remediator.read_side.plan_answer import (
    Breaker,
    DarkRow,
    DarkSection,
    ExposureRow,
    PlanAnswer,
    PodRow,
    RepairRow,
    RepairSection,
    TaintRow,
    ZoneMoveRow,
)


def f(doc: dict[str, object]) -> Fields:
    return Fields(doc, "/plan: x")


def test_an_eviction_s_why_is_its_strategy_and_reason() -> None:
    answer = PlanAnswer.read({"evictions": [{"namespace": "a", "name": "p", "node": "n1", "strategy": "PodLifeTime",
                                             "reason": "older than 1h"}],
                              "protected": [{"namespace": "a", "name": "q", "node": "n1", "why": "PDB"}]})
    assert answer.evictions == (PodRow("a", "p", "n1", "PodLifeTime: older than 1h"),)
    assert answer.protected == (PodRow("a", "q", "n1", "PDB"),)


def test_taints_are_read_from_their_add_and_remove_lists() -> None:
    row = {"node": "n1", "key": "k", "effect": "NoSchedule", "cause": "c", "value": "ignored"}
    answer = PlanAnswer.read({"taints": {"remove": [row]}})
    assert answer.taints_add == ()
    assert answer.taints_remove == (TaintRow("n1", "k", "NoSchedule", "c"),)


def test_a_breaker_without_a_limit_says_none_and_an_absent_one_is_closed() -> None:
    assert Breaker.read(None) == Breaker(False, None)
    assert Breaker.read(f({"open": True, "taintedLimit": None})) == Breaker(True, None)
    assert Breaker.read(f({"taintedLimit": 3})) == Breaker(False, 3)


def test_a_zone_exposure_row_reads_its_shares_as_numbers_and_its_moves() -> None:
    row = ExposureRow.read(f({"namespace": "a", "workload": "Deployment/w", "surviving": 0, "best": 0.5,
                              "moves": [{"from": "z1", "to": "z2", "pods": 2}]}))
    assert row == ExposureRow("a", "Deployment/w", 0.0, 0.5, (ZoneMoveRow("z1", "z2", 2),))
    assert isinstance(row.surviving, float)


def test_a_repair_start_names_its_action_and_service_and_its_step_of_the_rule() -> None:
    start = {"node": "n1", "action": "restart", "service": "kubelet", "step": 2, "rule": "kubelet-down",
             "cause": "KubeletDown for 5m"}
    assert RepairRow.read_start(f(start)) == RepairRow("n1", "restart kubelet", "step 2 of kubelet-down: "
                                                                                 "KubeletDown for 5m")
    assert RepairRow.read_start(f(start | {"service": None, "action": "reboot"})).what == "reboot"


def test_a_waiting_repair_step_says_until_when_only_if_given() -> None:
    row = {"node": "n1", "step": "reboot", "why": "cooling down"}
    assert RepairRow.read_waiting(f(row)).why == "cooling down"
    assert RepairRow.read_waiting(f(row | {"until": "2026-06-01T12:00:00Z"})).why == \
        "cooling down (until 2026-06-01T12:00:00Z)"


def test_a_repair_section_reads_its_lists_and_the_names_of_its_halted_groups() -> None:
    section = RepairSection.read(f({"end": [{"node": "n1", "rule": "r", "result": "fixed", "repaired": True}],
                                    "needsAPerson": ["n2", "n3"], "halted": {"pool-a": "why", "pool-b": "why"}}))
    assert section == RepairSection(ends=(RepairRow("n1", "r", "fixed", True),), needs_a_person=("n2", "n3"),
                                    halted=("pool-a", "pool-b"))
    assert RepairSection.read(None) == RepairSection()


def test_dark_node_rows_say_how_each_is_seen_fenced_or_unfenced() -> None:
    dark = DarkSection.read(f({
        "nodes": [{"node": "n1", "seen": "silent", "why": "no heartbeat", "needsEvidence": True}],
        "fence": [{"node": "n1", "evidence": "cloud", "detail": "instance stopped"}],
        "deleteNodeClaim": [{"node": "n1", "nodeClaim": "claim-1", "detail": "gone"}],
        "unfence": [{"node": "n2", "taint": True, "why": "back"}, {"node": "n3", "why": "confirmed"}]}))
    assert dark.silent == (DarkRow("n1", "silent", "no heartbeat", True),)
    assert dark.fences == (DarkRow("n1", "cloud", "instance stopped"),)
    assert dark.claim_deletes == (DarkRow("n1", "claim-1", "gone"),)
    assert dark.unfences == (DarkRow("n2", "out-of-service", "back"), DarkRow("n3", "confirmation", "confirmed"))


@pytest.mark.parametrize(("doc", "problem"), [
    ({"taints": []}, "/plan: taints: a list, not an object"),
    ({"breaker": {"taintedLimit": 1.5}}, "/plan: breaker: taintedLimit is a number, not an integer"),
    ({"zoneExposure": [{"namespace": "a", "workload": "w", "surviving": 1, "best": 1, "moves": [{"from": "a"}]}]},
     "/plan: zoneExposure[0]: moves[0]: no to"),
    ({"repair": {"start": [{"node": "n", "action": "a", "step": "2", "rule": "r", "cause": "c"}]}},
     "/plan: repair: start[0]: step is a string, not an integer"),
    ({"darkNodes": {"unfence": [{"node": "n", "taint": "yes", "why": "w"}]}},
     "/plan: darkNodes: unfence[0]: taint is a string, not a boolean"),
    ({"held": [{"node": "n", "key": "k"}]}, "/plan: held[0]: no why"),
])
def test_a_plan_field_of_the_wrong_shape_is_refused_naming_its_place(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        PlanAnswer.read(doc)
    assert str(e.value) == problem
