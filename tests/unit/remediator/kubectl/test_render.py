"""`render`: the plugin's answers worded for a person: aligned tables with cluster text escaped, `status` (mode,
breaker, the taints nodemedic owns that the node still carries, repairs, the last cycle's actions), `why`, `plan`
(every kind of row, or the empty plan's sentence) and `check` (who reported each condition, the agent pod)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from remediator.kubectl import render
from remediator.kubectl.reach import Leader
from remediator.model.records import Effect, Taint
from remediator.planning.owned_taints import OwnedTaint, render_owned, strategy_owner
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import FactLine, WhyAnswer

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
LEADER = Leader("ops", "nm-7d9f", "8080", "nm", "nm-7d9f_1", "")
STATUS = StatusAnswer("nm-7d9f_1", leading=True, dry_run=True, mode="deployment", version="1.0",
                      policy_file="/etc/p.yaml", policy_sha256="abc")
DEADLOCK = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
PACKED = Taint("nodemedic.io/underused", "true", Effect.PREFER_NO_SCHEDULE)
GONE = Taint("nodemedic.io/disk", "true", Effect.NO_EXECUTE)


def _node(name: str, owned: list[OwnedTaint], carried: list[Taint]) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {OWNED_TAINTS_ANNOTATION: render_owned(owned)}},
            "spec": {"taints": [{"key": t.key, "value": t.value, "effect": str(t.effect)} for t in carried]}}


def test_a_table_aligns_its_columns_strips_trailing_space_and_escapes_control_characters() -> None:
    assert render.table([("A", "LONG HEADER", "C"), ("value", "x", ""), ("b\x1b[2J", "y", "z")]) == [
        "  A         LONG HEADER  C",
        "  value     x",
        "  b\\x1b[2J  y            z",
    ]
    assert render.table([], indent="") == []


def test_status_in_dry_run_with_an_open_breaker_of_unknown_limit_and_no_taints() -> None:
    held = {"node": "n1", "key": "k", "effect": "NoSchedule", "rule": "r", "why": "breaker"}
    plan = PlanAnswer.read({"breaker": {"open": True}, "held": [held]})
    lines = render.status(LEADER, STATUS, plan, []).splitlines()
    assert lines[0] == "leader      nm-7d9f (Lease ops/nm, renewed ?)"
    assert lines[1] == "policy      /etc/p.yaml (sha256 abc)"
    assert lines[2] == "mode        dry-run: plans, writes nothing"
    assert lines[3] == "breaker     OPEN: 0 of at most ? node(s) tainted for a problem; 1 taint(s) held back"
    assert lines[4] == "tainted nodes: none"
    assert lines[5] == "repair      0 node(s) in repair"
    assert lines[6] == "last cycle  0 eviction(s), 0 protected, 0 deferred, 1 held"
    assert lines[7].split() == ["WHAT", "POD/TAINT", "NODE", "WHY"]
    assert lines[8].split() == ["hold", "k", "n1", "breaker"]


def test_status_lists_only_owned_taints_the_node_still_carries_and_counts_only_rule_taints_for_the_breaker() -> None:
    owned = [OwnedTaint(DEADLOCK, ("kernel-deadlock",), "KernelDeadlock=True", NOW),
             OwnedTaint(PACKED, (strategy_owner("HighNodeUtilization"),), "underused", NOW),
             OwnedTaint(GONE, ("disk",), "DiskBad", NOW)]  # claimed, but no longer on the node
    nodes = [_node("n1", owned, [DEADLOCK, PACKED, Taint("someone.else/t")]), {"metadata": "not an object"}]
    plan = PlanAnswer.read({"breaker": {"open": False, "taintedLimit": 3}})
    lines = render.status(LEADER, STATUS, plan, nodes).splitlines()
    assert lines[3] == "breaker     closed: 1 of at most 3 node(s) tainted for a problem"
    assert lines[4] == "tainted nodes"
    assert lines[5].split() == ["NODE", "TAINT", "SINCE", "WHY"]
    rows = [line.split(None, 3) for line in lines[6:8]]
    assert rows == [
        ["n1", "nodemedic.io/kernel-deadlock:NoSchedule", "2024-05-01T12:00:00Z",
         "KernelDeadlock=True (kernel-deadlock)"],
        ["n1", "nodemedic.io/underused:PreferNoSchedule", "2024-05-01T12:00:00Z",
         "underused (strategy:HighNodeUtilization)"],
    ]
    assert lines[8].startswith("repair ")


def test_status_counts_evictions_protections_and_deferrals_and_lists_them() -> None:
    plan = PlanAnswer.read({
        "evictions": [{"namespace": "shop", "name": "web-1", "node": "n1", "strategy": "PodLifeTime",
                       "reason": "older than 1h"}],
        "protected": [{"namespace": "shop", "name": "db-0", "node": "n1", "why": "PDB"}],
        "deferred": [{"namespace": "shop", "name": "web-2", "node": "n2", "why": "rate"}]})
    lines = render.status(LEADER, STATUS, plan, []).splitlines()
    assert lines[6] == "last cycle  1 eviction(s), 1 protected, 1 deferred, 0 held"
    assert [line.split(None, 3) for line in lines[8:]] == [
        ["evict", "shop/web-1", "n1", "PodLifeTime: older than 1h"],
        ["protect", "shop/db-0", "n1", "PDB"],
        ["defer", "shop/web-2", "n2", "rate"],
    ]


def test_why_without_a_planning_cycle_has_no_time_and_a_fact_that_changes_says_when() -> None:
    assert render.why(WhyAnswer.before_planning("n1")).splitlines() == ["why n1", "  plan  no planning cycle yet"]
    doc = WhyAnswer("n1", "2024-05-01T12:00:00Z", (FactLine("timer", "cooldown", "2024-05-01T12:04:30Z", "4m30s"),))
    assert render.why(doc).splitlines() == [
        "why n1 (as of 2024-05-01T12:00:00Z)",
        "  timer  cooldown (changes in 4m30s, at 2024-05-01T12:04:30Z)"]


def test_an_empty_plan_says_so() -> None:
    assert render.plan(PlanAnswer()) == "the plan is empty: nothing to taint, untaint or evict"


def test_a_plan_lists_taints_then_untaints_then_repair_steps_in_order() -> None:
    doc = PlanAnswer.read({
        "taints": {"add": [{"node": "n1", "key": "k1", "value": "", "effect": "NoSchedule", "rule": "r1",
                            "cause": "c1"}],
                   "remove": [{"node": "n2", "key": "k2", "value": "", "effect": "NoExecute", "rule": "r2",
                               "cause": "recovered"}]},
        "repair": {"start": [{"node": "n3", "rule": "r", "step": 1, "action": "restart", "service": "kubelet",
                              "id": "x", "cause": "c"}],
                   "end": [{"node": "n4", "rule": "r", "result": "it answers", "repaired": True},
                           {"node": "n5", "rule": "r", "result": "gave up", "repaired": False}],
                   "waiting": [{"node": "n6", "rule": "r", "step": "drain", "why": "pods left",
                                "until": "2024-05-01T13:00:00Z"}]}})
    lines = render.plan(doc).splitlines()
    assert lines[0].split() == ["ACTION", "WHAT", "NODE", "WHY"]
    assert not lines[0].startswith(" ")  # the plan's table has no indent
    rows = [line.split() for line in lines[1:]]
    assert rows[0] == ["taint", "k1:NoSchedule", "n1", "c1"]
    assert rows[1] == ["untaint", "k2:NoExecute", "n2", "recovered"]
    assert rows[2] == ["repair", "restart", "kubelet", "n3", "step", "1", "of", "r:", "c"]
    assert rows[3] == ["repaired", "r", "n4", "it", "answers"]
    assert rows[4] == ["unrepaired", "r", "n5", "gave", "up"]
    assert rows[5] == ["repair-wait", "drain", "n6", "pods", "left", "(until", "2024-05-01T13:00:00Z)"]


def test_check_says_who_reported_each_condition_and_which_agent_pod_runs() -> None:
    node = {"metadata": {"name": "n1"}, "status": {"conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z", "reason": "KubeletReady",
         "message": "ok"},
        "not an object",
        {"type": "KernelDeadlock", "status": "True", "reason": "TaskHung", "message": "blocked\x1b]52;c;x\x07"}]}}
    lines = render.check(node, {"metadata": {"name": "nm-agent-x"}, "status": {"phase": "Running"}}).splitlines()
    assert lines[0] == "n1: agent nm-agent-x is Running"
    assert lines[1].split() == ["TYPE", "STATUS", "SINCE", "BY", "REASON:", "MESSAGE"]
    assert lines[2].split() == ["Ready", "True", "2024-05-01T11:00:00Z", "kubelet", "KubeletReady:", "ok"]
    assert lines[3].split() == ["KernelDeadlock", "True", "agent", "TaskHung:", "blocked\\x1b]52;c;x\\x07"]
    assert len(lines) == 4


def test_check_without_an_agent_pod_or_conditions_says_so() -> None:
    lines = render.check({"metadata": {"name": "n1"}, "status": {"conditions": "broken"}}, None).splitlines()
    assert lines == ["n1: no nodemedic agent pod on this node", "  TYPE  STATUS  SINCE  BY  REASON: MESSAGE"]


def test_check_with_an_agent_pod_without_a_phase_says_question_mark() -> None:
    assert render.check({"metadata": {"name": "n1"}}, {"metadata": {"name": "a"}}).splitlines()[0] == "n1: agent a is ?"
