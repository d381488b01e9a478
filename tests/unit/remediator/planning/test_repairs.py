"""The repair ladders as the planner walks them: each step after the one before, the rails, a person's controls."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

import pytest

from nodemedic_common.repair_contract import (
    ANSWER_CONDITION,
    HOLD_ANNOTATION,
    NEXT_ANNOTATION,
    OPT_OUT_LABEL,
    REPAIR_ANNOTATION,
    RepairAction,
    answer_message,
)
from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import Condition, Effect, LabelSelector, NodeRecord, OwnerRef, PodRecord, Taint
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.planning.repairs import plan_repairs
from remediator.planning.taints import plan_taints
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy, StrategyConfig
from remediator.policy.repair import RepairSettings, RepairStep
from remediator.policy.rules import TaintRule
from remediator.policy.safety import Safety
from remediator.policy.window import MaintenanceWindow
from remediator.read_side.plan_answer import PlanAnswer
from remediator.repair.decisions import RepairPlan
from remediator.repair.state import parse_state
from remediator.state.snapshot import Snapshot
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

NOW = dt.datetime(2026, 11, 28, 12, 0, 0, tzinfo=dt.UTC)
TAINT = Taint("nodemedic.io/kubelet-unhealthy", "true", Effect.NO_SCHEDULE)
MIN = dt.timedelta(minutes=1)
LADDER = (RepairStep(RepairAction.RESTART, 3 * MIN, "kubelet"), RepairStep(RepairAction.REBOOT, 15 * MIN),
          RepairStep(RepairAction.REPLACE, 30 * MIN), RepairStep(RepairAction.PERSON, dt.timedelta(0)))
RULE = TaintRule(name="kubelet-unhealthy", condition_type="KubeletUnhealthy", condition_status="True",
                 for_=2 * MIN, taint=TAINT, evict=False, repair=LADDER)


def sick(name: str = "n1", *, claim: str = "", labels: dict[str, str] | None = None,
         annotations: dict[str, str] | None = None, status: str = "True", ready: str = "True",
         extra: tuple[Condition, ...] = ()) -> NodeRecord:
    at = NOW - dt.timedelta(minutes=10)
    ann = {OWNED_TAINTS_ANNOTATION: render_owned([OwnedTaint(TAINT, (RULE.name,), "test", at)]), **(annotations or {})}
    return NodeRecord(name=name, labels=labels or {}, annotations=ann, taints=(TAINT,), claim=claim,
                      conditions=(Condition("Ready", ready, at),
                                  Condition("KubeletUnhealthy", status, at, observed_at=at), *extra))


def healthy(name: str, labels: dict[str, str] | None = None) -> NodeRecord:
    return NodeRecord(name=name, labels=labels or {}, conditions=(Condition("Ready", "True", NOW - MIN * 60),),
                      allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110})


def snap(*nodes: NodeRecord, now: dt.datetime = NOW, pods: dict[str, list[PodRecord]] | None = None) -> Snapshot:
    return Snapshot(now=now, nodes={n.name: n for n in nodes}, pods_by_node=pods or {}, pods_by_owner={})


def policy(rule: TaintRule = RULE, **settings: object) -> Policy:
    return Policy(rules=(rule,), safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None),
                  repair=RepairSettings(**{"max_unhealthy_percent": 100.0, **settings}))  # type: ignore[arg-type]


def repairs(s: Snapshot, p: Policy) -> RepairPlan:
    return plan_repairs(s, p, plan_taints(s, p, {}).owned_after).plan


def at_step(node: NodeRecord, plan: RepairPlan) -> NodeRecord:
    """The node as the writer leaves it: the started step's annotation on it."""
    (start,) = [s for s in plan.starts if s.node == node.name]
    return replace(node, annotations={**node.annotations, REPAIR_ANNOTATION: start.state.to_annotation()})


def test_a_ladder_starts_with_its_first_step_once_the_rules_taint_is_on() -> None:
    plan = repairs(snap(sick(), healthy("n2")), policy())
    (start,) = plan.starts
    assert (start.node, start.state.action, start.state.service, start.state.step) == ("n1", "restart", "kubelet", 0)
    assert start.state.requested == NOW and start.state.id == f"{int(NOW.timestamp())}-0"
    assert "KubeletUnhealthy=True for 10m" in start.cause


def test_no_ladder_without_the_rules_own_taint() -> None:
    node = replace(sick(), annotations={}, taints=())
    assert repairs(snap(node), policy()).starts == []


def test_a_step_waits_out_its_wait_then_the_next_starts_after_the_drain() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    plan = repairs(snap(first, now=NOW + 2 * MIN), policy())
    assert plan.starts == [] and plan.waiting[0].until == NOW + 3 * MIN
    assert "waiting for KubeletUnhealthy=True to clear" in plan.waiting[0].why
    pod = PodRecord("ns", "web-1", "u1", node_name="n1", phase="Running")
    later = NOW + 4 * MIN
    undrained = plan_repairs(snap(first, now=later, pods={"n1": [pod]}), policy(),
                             plan_taints(snap(first, now=later), policy(), {}).owned_after)
    assert undrained.plan.starts == [] and undrained.drain == {"n1": [TAINT]}
    assert "draining first" in undrained.plan.waiting[0].why and "ns/web-1" in undrained.plan.waiting[0].why
    daemon = PodRecord("ns", "agent-1", "u2", node_name="n1", phase="Running",
                       owners=(OwnerRef("DaemonSet", "agent", "d1", True),))
    plan = repairs(snap(first, now=later, pods={"n1": [daemon]}), policy())
    (reboot,) = plan.starts
    assert (reboot.state.action, reboot.state.step) == ("reboot", 1)
    (tried,) = reboot.state.history
    assert tried.action == "restart" and "still there 3m0s after it" in tried.result


def test_the_drain_is_made_by_the_taint_strategy_with_the_rules_taint() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    pod = PodRecord("ns", "web-1", "u1", node_name="n1", phase="Running",
                    owners=(OwnerRef("ReplicaSet", "web", "r1", True),), created=NOW - 60 * MIN)
    p = replace(policy(), strategies=(StrategyConfig("RemovePodsViolatingNodeTaints",
                                                     RemovePodsViolatingNodeTaintsArgs()),))
    s = snap(first, healthy("n2"), now=NOW + 4 * MIN, pods={"n1": [pod]})
    plan = make_plan(s, p, PlannerMemory())
    assert [e.pod.key for e in plan.evictions] == ["ns/web-1"]


def test_an_agent_that_answers_failed_ends_its_step_at_once() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    state = parse_state(first.annotations[REPAIR_ANNOTATION])
    answer = Condition(ANSWER_CONDITION, "False", NOW, reason="Failed",
                       message=answer_message(state.id, "systemctl exited 5: Unit kubelet.service not found"))
    node = replace(first, conditions=(*first.conditions, answer))
    (reboot,) = repairs(snap(node, now=NOW + MIN), policy()).starts
    assert reboot.state.action == "reboot"
    assert "the agent answered Failed: systemctl exited 5" in reboot.state.history[0].result


def test_an_answer_to_an_older_step_is_not_this_steps() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    answer = Condition(ANSWER_CONDITION, "False", NOW, reason="Failed", message=answer_message("1-0", "old"))
    node = replace(first, conditions=(*first.conditions, answer))
    assert repairs(snap(node, now=NOW + MIN), policy()).starts == []


def test_the_ladder_ends_repaired_once_the_condition_clears_and_the_node_is_ready() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    cleared = replace(first, conditions=(Condition("Ready", "True", NOW), Condition("KubeletUnhealthy", "False", NOW)))
    plan = repairs(snap(cleared, now=NOW + MIN), policy())
    (end,) = plan.ends
    assert end.repaired and end.result == "KubeletUnhealthy=False after restart kubelet"
    not_ready = replace(cleared, conditions=(Condition("Ready", "Unknown", NOW), Condition("KubeletUnhealthy", "False",
                                                                                           NOW)))
    plan = repairs(snap(not_ready, now=NOW + MIN), policy())
    assert plan.ends == [] and "waiting for the node to be Ready" in plan.waiting[0].why


def test_replace_is_skipped_without_a_nodeclaim_and_the_node_goes_to_a_person() -> None:
    rule = replace(RULE, repair=LADDER[2:])
    plan = repairs(snap(sick()), policy(rule))
    (start,) = plan.starts
    assert start.state.action == RepairAction.PERSON and start.state.step == 1
    assert start.state.history[0].result.startswith("skipped: no Karpenter NodeClaim")
    assert plan.needs_a_person() == ["n1"]


def test_replace_with_a_nodeclaim_names_it() -> None:
    rule = replace(RULE, repair=LADDER[2:])
    (start,) = repairs(snap(sick(claim="default-x7k2p")), policy(rule)).starts
    assert (start.state.action, start.claim) == ("replace", "default-x7k2p")


def test_a_ladder_without_person_still_ends_with_one() -> None:
    rule = replace(RULE, repair=LADDER[:1])
    first = at_step(sick(), repairs(snap(sick()), policy(rule)))
    (start,) = repairs(snap(first, now=NOW + 4 * MIN), policy(rule)).starts
    assert start.state.action == RepairAction.PERSON


def test_a_node_with_a_person_waits_until_the_condition_clears_or_a_person_resumes() -> None:
    rule = replace(RULE, repair=(LADDER[0], LADDER[3]))
    node = at_step(sick(), repairs(snap(sick()), policy(rule)))
    node = at_step(node, repairs(snap(node, now=NOW + 4 * MIN), policy(rule)))
    state = parse_state(node.annotations[REPAIR_ANNOTATION])
    assert state.action == RepairAction.PERSON
    plan = repairs(snap(node, now=NOW + 600 * MIN), policy(rule))
    assert plan.starts == [] and "handed to a person" in plan.waiting[0].why
    resumed = replace(node, annotations={**node.annotations, NEXT_ANNOTATION: state.id})
    (again,) = repairs(snap(resumed, now=NOW + 601 * MIN), policy(rule)).starts
    assert (again.state.action, again.state.step, again.consumes_next) == ("restart", 0, True)
    assert again.state.started == NOW + 601 * MIN and len(again.state.history) == 2


def test_next_ends_the_step_under_way_and_hold_stops_the_ladder() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    state = parse_state(first.annotations[REPAIR_ANNOTATION])
    held = replace(first, annotations={**first.annotations, HOLD_ANNOTATION: "alice 2026-11-28T12:01:00Z"})
    plan = repairs(snap(held, now=NOW + 60 * MIN), policy())
    assert plan.starts == [] and plan.waiting[0].why.startswith("held by a person")
    nxt = replace(first, annotations={**first.annotations, NEXT_ANNOTATION: state.id})
    (reboot,) = repairs(snap(nxt, now=NOW + MIN), policy()).starts
    assert reboot.state.action == "reboot" and reboot.consumes_next
    assert reboot.state.history[-1].result.startswith("ended by a person")


@pytest.mark.parametrize(("node", "why"), [
    (sick(labels={OPT_OUT_LABEL: "true"}), "opted out of repair"),
    (sick(labels={"nodemedic.io/exclude": "true"}), "node opted out (nodemedic.io/exclude=true)"),
], ids=["repair opt-out label", "the safety exclude label"])
def test_an_opted_out_node_is_not_repaired(node: NodeRecord, why: str) -> None:
    plan = repairs(snap(node), policy())
    assert plan.starts == [] and why in plan.waiting[0].why


def test_max_concurrent_repairs_one_node_of_a_pool_at_a_time() -> None:
    pool = {"karpenter.sh/nodepool": "gpu"}
    nodes = [sick(f"n{i}", labels=pool) for i in range(5)]
    plan = repairs(snap(*nodes), policy())
    assert [s.node for s in plan.starts] == ["n0"]
    assert all("1 node(s) of karpenter.sh/nodepool=gpu in repair already (repair.maxConcurrent 1)" in w.why
               for w in plan.waiting)
    other = sick("m0", labels={"karpenter.sh/nodepool": "cpu"})
    assert [s.node for s in repairs(snap(*nodes, other), policy()).starts] == ["m0", "n0"]


def test_past_the_unhealthy_share_nothing_in_the_group_is_repaired() -> None:
    zone = {"topology.kubernetes.io/zone": "a"}
    nodes = [sick("n0", labels=zone), sick("n1", labels=zone)] + [healthy(f"h{i}", zone) for i in range(3)]
    plan = repairs(snap(*nodes), policy(max_unhealthy_percent=20.0))
    assert plan.starts == [] and all(w.halted for w in plan.waiting)
    assert "2 of 5 nodes in topology.kubernetes.io/zone=a are unhealthy" in plan.halted["topology.kubernetes.io/zone=a"]
    one = [sick("n0", labels=zone)] + [healthy(f"h{i}", zone) for i in range(4)]
    assert [s.node for s in repairs(snap(*one), policy(max_unhealthy_percent=20.0)).starts] == ["n0"]


def test_the_hourly_rate_counts_the_steps_the_annotations_record() -> None:
    nodes = [sick(f"n{i}", labels={"karpenter.sh/nodepool": f"p{i}"}) for i in range(3)]
    assert len(repairs(snap(*nodes), policy(max_per_hour=2)).starts) == 2
    first = at_step(nodes[0], repairs(snap(nodes[0]), policy()))
    plan = repairs(snap(first, nodes[1], now=NOW + 10 * MIN), policy(max_per_hour=1))
    assert plan.starts == [] and [w.node for w in plan.waiting] == ["n0", "n1"]
    assert all("1 repair steps started in the last hour (repair.maxPerHour 1)" in w.why for w in plan.waiting)
    assert len(repairs(snap(first, nodes[1], now=NOW + 61 * MIN), policy(max_per_hour=1)).starts) == 1


def test_outside_the_window_and_with_a_blocking_pod_no_reboot_starts() -> None:
    rule = replace(RULE, repair=LADDER[1:])
    closed = MaintenanceWindow(start=dt.time(22, 0), end=dt.time(23, 0))
    plan = repairs(snap(sick()), policy(rule, window=closed))
    assert plan.starts == [] and plan.waiting[0].until == dt.datetime(2026, 11, 28, 22, 0, tzinfo=dt.UTC)
    batch = PodRecord("ns", "train-0", "u", node_name="n1", phase="Running", labels={"critical": "yes"},
                      owners=(OwnerRef("DaemonSet", "x", "d", True),))
    selector = LabelSelector(match_labels=(("critical", "yes"),))
    plan = repairs(snap(sick(), pods={"n1": [batch]}), policy(rule, blocking_pod_selector=selector))
    assert plan.starts == [] and "blockingPodSelector" in plan.waiting[0].why
    # A restart ends no pod: neither the window nor a blocking pod holds it.
    assert repairs(snap(sick(), pods={"n1": [batch]}), policy(window=closed, blocking_pod_selector=selector)).starts


def test_an_unreadable_annotation_is_reported_not_trusted() -> None:
    node = sick(annotations={REPAIR_ANNOTATION: '{"id": 5}'})
    plan = repairs(snap(node), policy())
    assert plan.unreadable == {"n1": "nodemedic.io/repair: id: expected a non-empty string"}


def test_a_ladder_whose_rule_lost_its_ladder_ends() -> None:
    first = at_step(sick(), repairs(snap(sick()), policy()))
    (end,) = repairs(snap(first), policy(replace(RULE, repair=()))).ends
    assert not end.repaired and "no longer has a repair ladder" in end.result


def test_nothing_is_looked_at_without_ladders() -> None:
    plan = repairs(snap(sick()), policy(replace(RULE, repair=())))
    assert plan.starts == [] and plan.halted == {}


def test_the_plan_json_shows_every_step_it_would_take() -> None:
    doc = PlanAnswer.of(make_plan(snap(sick()), policy(), PlannerMemory())).to_json()
    repair = doc["repair"]
    assert isinstance(repair, dict)
    assert repair["start"] == [{"node": "n1", "rule": "kubelet-unhealthy", "step": 1, "action": "restart",
                                "service": "kubelet", "id": f"{int(NOW.timestamp())}-0",
                                "cause": "KubeletUnhealthy=True for 10m0s; its taint is on"}]
