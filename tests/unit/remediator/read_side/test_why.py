"""`why NODE`: each fact the remediator decides on for a node, in a sentence, with when it changes on its own."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.plan import Plan, PlannedEviction, Protected
from remediator.model.records import Condition, Effect, LabelSelector, PdbRecord, Taint
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.policy.loader import parse_policy
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.policy.safety import EXCLUDE_LABEL
from remediator.read_side.why import why
from remediator.read_side.why_answer import FactLine
from remediator.strategies import CATALOG
from tests.unit.remediator.strategies.cluster import NOW, node, pod, snapshot

POLICY = parse_policy("""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 5m}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
  recoverAfter: 10m
""", source="policy.yaml", catalog=CATALOG)
TAINT = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)


def with_deadlock(status: str, since: dt.timedelta, **kw: object) -> object:
    base = node("n1", **kw)  # type: ignore[arg-type]
    c = Condition("KernelDeadlock", status, NOW - since, "TaskHung", "task blocked for more than 120 s")
    return dataclasses.replace(base, conditions=(*base.conditions, c))


def sentences(facts: list[object], topic: str) -> list[str]:
    return [f.sentence for f in facts if f.topic == topic]  # type: ignore[attr-defined]


def test_a_condition_not_yet_lasting_for_says_when_the_taint_comes() -> None:
    s = snapshot([with_deadlock("True", dt.timedelta(minutes=2))], [])  # type: ignore[list-item]
    facts = why("n1", s, POLICY, Plan())
    rule = [f for f in facts if f.topic == "rule"]
    # lastTransitionTime has whole seconds: the condition is counted from the end of its second (Condition.held_since)
    assert rule[0].sentence == ("rule kernel-deadlock waits: KernelDeadlock=True for 1m59s of `for` 5m0s; then the "
                                "node gets nodemedic.io/kernel-deadlock:NoSchedule")
    assert rule[0].changes_at == NOW + dt.timedelta(minutes=3, seconds=1)
    assert FactLine.of(rule[0], NOW).changes_in == "3m1s"
    assert sentences(facts, "condition") == [
        "KernelDeadlock=True for 1m59s (TaskHung: task blocked for more than 120 s)"]


def test_a_tainted_node_whose_condition_cleared_says_when_the_taint_goes() -> None:
    owned = render_owned([OwnedTaint(TAINT, ("kernel-deadlock",), "KernelDeadlock=True for 5m0s",
                                     NOW - dt.timedelta(hours=1))])
    n = with_deadlock("False", dt.timedelta(minutes=4))
    n = dataclasses.replace(n, taints=(TAINT,), annotations={OWNED_TAINTS_ANNOTATION: owned})  # type: ignore[type-var]
    facts = why("n1", snapshot([n], []), POLICY, Plan())  # type: ignore[list-item]
    taint = [f for f in facts if f.topic == "taint"]
    assert "every condition behind it has cleared, so it is removed after `recoverAfter`" in taint[0].sentence
    assert taint[0].changes_at == NOW + dt.timedelta(minutes=6, seconds=1)
    assert sentences(facts, "rule") == ["rule kernel-deadlock does not apply: KernelDeadlock is False, not True"]


def test_rails_plan_pdbs_and_the_autoscaler_are_each_said() -> None:
    web = pod("web-1", "n1", labels={"app": "web"})
    ds = pod("agent-x", "n1", owner="DaemonSet")
    n = node("n1", labels={EXCLUDE_LABEL: "true"})
    s = snapshot([n, node("n2")], [web, ds])
    s.pdbs.append(PdbRecord("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=0))
    plan = Plan(protected=[Protected(web, "node opted out")], evictions=[PlannedEviction(ds, "X", "because")])
    facts = why("n1", s, POLICY, plan)
    assert sentences(facts, "rail") == [
        f"no taint is added and no pod evicted here: node opted out ({EXCLUDE_LABEL}=true)"]
    assert "not evicting default/web-1: node opted out" in sentences(facts, "plan")
    assert "evicting default/agent-x (X): because" in sentences(facts, "plan")
    assert sentences(facts, "pdb") == [
        "PodDisruptionBudget default/web allows 0 disruption(s) now and selects 1 pod(s) here (default/web-1)"]
    assert sentences(facts, "autoscaler") == ["1 pod(s) keep a node autoscaler from removing the node as empty "
                                              "(default/web-1)"]
    empty = why("n2", s, POLICY, plan)
    assert sentences(empty, "autoscaler") == ["only DaemonSet and mirror pods run here: a node autoscaler may remove "
                                              "the node as empty"]


def test_a_node_the_breaker_holds_says_so_from_the_real_plan() -> None:
    sick = [with_deadlock("True", dt.timedelta(hours=1)), dataclasses.replace(
        with_deadlock("True", dt.timedelta(minutes=30)), name="n2")]  # type: ignore[type-var]
    policy = dataclasses.replace(POLICY, safety=dataclasses.replace(POLICY.safety, max_tainted_nodes=1,
                                                                    max_tainted_nodes_percent=None))
    s = snapshot(sick, [])  # type: ignore[arg-type]
    plan = make_plan(s, policy, PlannerMemory())
    assert [c.node for c in plan.taints_add] == ["n1"]
    held = sentences(why("n2", s, policy, plan), "plan")
    assert held == ["nodemedic.io/kernel-deadlock is held back: circuit breaker: 1/1 nodes tainted"]
    assert sentences(why("n1", s, policy, plan), "plan")[0].startswith(
        "this cycle adds nodemedic.io/kernel-deadlock:NoSchedule: KernelDeadlock=True for 59m59s")


def test_a_node_outside_the_plan_says_nothing_happens_to_it() -> None:
    facts = why("gone", snapshot([node("n1")], []), POLICY, Plan())
    assert [f.sentence for f in facts] == ["gone is not among the nodes the remediator plans for (gone, or outside "
                                           "the policy's nodeSelector): nothing happens to it"]
