"""What the server writes, the plugin reads back: every testdata snapshot's plan under every policy, /status and
/why; an answer of the wrong shape is refused with the place named."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.loader import load_policy
from remediator.read_side.fields import Unreadable
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.plan_rows import (
    Breaker,
    EvictionRow,
    ExposureRow,
    HeldRow,
    LoopRow,
    ProposalRow,
    TaintRow,
    ZoneMoveRow,
)
from remediator.read_side.plan_sections import (
    DarkSection,
    FreeingRow,
    RepairEndRow,
    RepairSection,
    RepairStartRow,
    RepairWaitRow,
    SilentRow,
    UnfenceRow,
)
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why import Fact
from remediator.read_side.why_answer import FactLine, WhyAnswer
from remediator.state.caches import snapshot_from_list
from remediator.strategies import CATALOG

TESTDATA = Path(__file__).resolve().parents[3] / "testdata"
NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
POLICIES = sorted([*TESTDATA.glob("policies/good/*.yaml"), *TESTDATA.glob("policies/descheduler-v1alpha1/*.yaml")])


@pytest.mark.parametrize("snapshot", sorted(TESTDATA.glob("snapshots/*.json")), ids=lambda p: p.stem)
def test_every_testdata_plan_is_read_back_as_written(snapshot: Path) -> None:
    for policy_file in POLICIES:
        policy = load_policy(str(policy_file), catalog=CATALOG)
        plan = make_plan(snapshot_from_list(json.loads(snapshot.read_text()), NOW), policy, PlannerMemory())
        written = PlanAnswer.of(plan)
        doc = json.loads(json.dumps(written.to_json()))  # as it arrives
        answer = PlanAnswer.read(doc)
        assert answer == written, policy_file.name
        assert answer.to_json() == doc
        assert [(e.namespace, e.name, e.node, e.strategy, e.reason) for e in answer.evictions] == \
            [(e.pod.namespace, e.pod.name, e.pod.node_name, e.strategy, e.reason) for e in plan.evictions]
        assert [(t.node, t.key, t.value) for t in answer.taints_add] == \
            [(c.node, c.taint.key, c.taint.value) for c in plan.taints_add]
        assert len(answer.dark.silent if answer.dark else ()) == (len(plan.dark.nodes) if "darkNodes" in doc else 0)
        assert len(answer.repair.starts if answer.repair else ()) == \
            (len(plan.repair.starts) if "repair" in doc else 0)
        assert answer.breaker.tainted_limit == plan.tainted_limit
        assert set(answer.reports) == {r.json_key for r in plan.reports.values()}


def test_status_and_why_are_read_back_as_written() -> None:
    status = StatusAnswer("r-1_ab", leading=True, dry_run=False, mode="deployment", version="1.0",
                          policy_file="/p.yaml", policy_sha256="0123456789ab")
    assert StatusAnswer.read(json.loads(json.dumps(status.to_json()))) == status
    why = WhyAnswer.of("n1", NOW, [Fact("rule", "waits", NOW + dt.timedelta(minutes=3)), Fact("node", "Ready")])
    assert why.facts == (FactLine("rule", "waits", "2026-06-01T12:03:00Z", "3m0s"), FactLine("node", "Ready"))
    assert WhyAnswer.read(json.loads(json.dumps(why.to_json())), "/why/n1") == why
    assert WhyAnswer.before_planning("n1").to_json() == {
        "node": "n1", "facts": [{"topic": "plan", "sentence": "no planning cycle yet"}]}


@pytest.mark.parametrize(("doc", "problem"), [
    ({"evictions": [{"name": "p", "node": "n", "strategy": "s", "reason": "r"}]}, "/plan: evictions[0]: no namespace"),
    ([], "/plan: a list, not an object"),
    (None, "/plan: null, not an object"),
    ({"taints": {"add": [{"node": "n", "key": "k", "value": "", "effect": "NoSchedule", "rule": "r", "cause": 1}]}},
     "/plan: taints: add[0]: cause is a number, not a string"),
    ({"breaker": {"open": "yes"}}, "/plan: breaker: open is a string, not a boolean"),
    ({"zoneExposure": [{"namespace": "a", "workload": "w", "perZone": {}, "surviving": "half", "best": 1}]},
     "/plan: zoneExposure[0]: surviving is a string, not a number"),
    ({"repair": {"needsAPerson": [None]}}, "/plan: repair: needsAPerson[0] is null, not a string"),
    ({"darkNodes": {"nodes": "n1"}}, "/plan: darkNodes: nodes is a string, not a list"),
])
def test_a_plan_of_the_wrong_shape_is_refused_with_the_place_named(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        PlanAnswer.read(doc)
    assert str(e.value) == problem


def test_an_empty_plan_and_unknown_keys_are_read() -> None:
    assert PlanAnswer.read({}) == PlanAnswer()
    assert PlanAnswer.read({"evictions": [], "repair": None}) == PlanAnswer()


def test_keys_not_the_plans_own_are_carried_as_reports_and_written_back() -> None:
    doc = {"evictions": [], "crashLoopNodes": [{"node": "n1", "pods": ["a"]}], "newer": {"x": None}}
    answer = PlanAnswer.read(doc)
    assert answer.reports == {"crashLoopNodes": [{"node": "n1", "pods": ["a"]}], "newer": {"x": None}}
    assert PlanAnswer.read(answer.to_json()) == answer


def test_an_answer_made_by_hand_is_read_back_as_written() -> None:
    """Every field of every row, those the plugin does not show included, comes back from its JSON."""
    answer = PlanAnswer(
        taints_add=(TaintRow("n1", "k", "v", "NoSchedule", "r1,r2", "c"),),
        evictions=(EvictionRow("a", "p", "n1", "RemoveDuplicates", "a duplicate"),),
        held=(HeldRow("n2", "k", "NoExecute", "r", "circuit breaker"),), breaker=Breaker(True, 3),
        zone_exposure=(ExposureRow("a", "Deployment/d", (("z1", 2), ("z2", 0)), 0.0, 0.5,
                                   (ZoneMoveRow("z1", "z2", 1),)),),
        scheduler_loops=(LoopRow("a", "ReplicaSet/r", "n1", "2026-06-01T12:00:00Z", "2026-06-01T13:00:00Z", "loop"),),
        proposals=(ProposalRow("BalanceResourceMix", ("a/p n1 -> n2",), "deviation 2 -> 1"),),
        repair=RepairSection((RepairStartRow("n1", "r", 2, "restart", "kubelet", "", "id-1", "c"),),
                             (RepairEndRow("n2", "r", True, "cleared"),),
                             (RepairWaitRow("n3", "r", "drain", "w", "2026-06-01T12:05:00Z", halted=True),),
                             ("n4",), (("pool=a", "3 of 5"),), (("n5", "not JSON"),)),
        dark=DarkSection((SilentRow("n6", "dark", "w", "2026-06-01T11:00:00Z", None, needs_evidence=True),),
                         (FreeingRow("n6", "person", "confirmed", ("a/p",)),),
                         (FreeingRow("n7", "claim-7", "dark for 1h", ()),), (UnfenceRow("n8", "back", False),),
                         (("pool=b", "2 of 2 dark"),)),
        reports={"resourceMix": {"deviationBefore": 1.5, "nodes": 2}})
    assert PlanAnswer.read(json.loads(json.dumps(answer.to_json()))) == answer


@pytest.mark.parametrize(("doc", "problem"), [
    ({"repair": {"halted": {"pool=a": 3}}}, "/plan: repair: halted: pool=a is a number, not a string"),
    ({"zoneExposure": [{"namespace": "a", "workload": "w", "perZone": {"z": "2"}, "surviving": 0.5, "best": 1}]},
     "/plan: zoneExposure[0]: perZone: z is a string, not an integer"),
    ({"darkNodes": {"fence": [{"node": "n", "evidence": "person", "detail": "d", "frees": [1]}]}},
     "/plan: darkNodes: fence[0]: frees[0] is a number, not a string"),
    ({"taints": {"add": [{"node": "n", "key": "k", "effect": "NoSchedule", "rule": "r", "cause": "c"}]}},
     "/plan: taints: add[0]: no value"),
])
def test_a_field_the_plugin_does_not_show_is_checked_too(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        PlanAnswer.read(doc)
    assert str(e.value) == problem


@pytest.mark.parametrize(("doc", "problem"), [
    ({"node": "n1", "facts": [{"topic": "node"}]}, "/why/n1: facts[0]: no sentence"),
    ({"node": "n1", "facts": {}}, "/why/n1: facts is an object, not a list"),
    ({"facts": []}, "/why/n1: no node"),
])
def test_a_why_of_the_wrong_shape_is_refused(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        WhyAnswer.read(doc, "/why/n1")
    assert str(e.value) == problem


def test_a_status_without_a_version_is_refused() -> None:
    with pytest.raises(Unreadable, match=r"^/status: no version$"):
        StatusAnswer.read({"identity": "r_1", "mode": "deployment", "policy": {"file": "f", "sha256": "s"}})
