"""high_node_utilization/plan.py, one planning cycle at a time through the real gate: what an emptied node's
evictions and consolidation taint say, the consolidation slots, a node given back after the timeout and not picked
again while it is remembered, and the pods that neither move nor block (DaemonSet, mirror, OnlyThresholdingResources).
The scenario table of test_utilization_strategies.py covers descheduler's algorithm itself."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.control.planner import make_plan
from remediator.model.plan import Plan
from remediator.model.records import NodeRecord, PodRecord
from remediator.planning.memory import PlannerMemory
from remediator.planning.owned_taints import OwnedTaint, render_owned, strategy_owner
from remediator.planning.pod_protection import MIRROR_ANNOTATION
from remediator.policy.limits import Limits
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy, StrategyConfig
from remediator.policy.safety import Safety
from remediator.state.snapshot import Snapshot
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.high_node_utilization.consolidation import CONSOLIDATION_TAINT
from remediator.strategies.high_node_utilization.plan import NAME
from tests.unit.remediator.strategies.cluster import NOW, evicted, node, pod, snapshot

BUSY = [pod(f"busy-{i}", "busy", cpu=500) for i in range(5)]  # 62.5 % cpu


def args(**kw: object) -> HighNodeUtilizationArgs:
    return HighNodeUtilizationArgs(thresholds=(("cpu", 20.0),), **kw)  # type: ignore[arg-type]


def cycle(s: Snapshot, a: HighNodeUtilizationArgs, memory: PlannerMemory | None = None) -> Plan:
    policy = Policy(strategies=(StrategyConfig(NAME, a),), limits=Limits(owner_cooldown=dt.timedelta(0)),
                    safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None))
    return make_plan(s, policy, memory or PlannerMemory())


def draining(name: str, since: dt.datetime) -> NodeRecord:
    owned = render_owned([OwnedTaint(CONSOLIDATION_TAINT, (strategy_owner(NAME),), "t", since)])
    return dataclasses.replace(node(name), taints=(CONSOLIDATION_TAINT,),
                               annotations={OWNED_TAINTS_ANNOTATION: owned})


def test_an_emptied_node_s_evictions_and_taint_say_its_usage_against_the_thresholds() -> None:
    plan = cycle(snapshot([node("idle"), node("busy")], [pod("app", "idle", cpu=400), *BUSY]), args())
    assert evicted(plan) == ["app"]
    assert plan.evictions[0].reason.startswith("node idle underutilized (cpu 10%): emptying it")
    assert plan.evictions[0].destination == "busy"
    [change] = plan.taints_add
    assert (change.node, change.taint, change.rules) == ("idle", CONSOLIDATION_TAINT, (strategy_owner(NAME),))
    assert change.cause == "cpu 10% at or below thresholds cpu 20%"


def test_daemonset_and_mirror_pods_stay_and_a_node_with_nothing_else_is_left_alone() -> None:
    ds = pod("ds", "idle", owner="DaemonSet", cpu=100)
    mirror = pod("static", "idle", owner="", cpu=100, annotations={MIRROR_ANNOTATION: "x"})
    plan = cycle(snapshot([node("idle"), node("busy")], [ds, mirror, *BUSY]), args())
    assert evicted(plan) == [] and plan.taints_add == [] and plan.protected == []


def test_with_only_thresholding_resources_a_pod_requesting_none_of_them_is_not_moved() -> None:
    best_effort = pod("be", "idle", requests={})
    plan = cycle(snapshot([node("idle"), node("busy")], [best_effort, pod("app", "idle"), *BUSY]),
                 args(only_thresholding_resources=True))
    assert evicted(plan) == ["app"]


def test_at_most_max_consolidating_nodes_are_emptied_at_once_the_emptiest_first() -> None:
    pods = [pod("a", "i1", cpu=300), pod("b", "i2", cpu=200), pod("c", "i3", cpu=100), *BUSY]
    nodes = [node("i1"), node("i2"), node("i3"), node("busy")]
    plan = cycle(snapshot(nodes, pods), args(max_consolidating_nodes=2))
    assert evicted(plan) == ["c", "b"]
    assert [c.node for c in plan.taints_add] == ["i3", "i2"]


def test_a_node_not_removed_within_the_timeout_is_given_back_and_not_picked_again_while_remembered() -> None:
    memory = PlannerMemory()
    late = draining("idle", NOW - dt.timedelta(minutes=20))
    first = cycle(snapshot([late, node("busy")], [pod("app", "idle"), *BUSY]), args(), memory)
    assert evicted(first) == []
    [change] = first.taints_remove
    assert (change.node, change.cause) == ("idle", "not removed within 15m0s: giving the node back")
    back = cycle(dataclasses.replace(snapshot([node("idle"), node("busy")], [pod("app", "idle"), *BUSY]),
                                     now=NOW + dt.timedelta(minutes=1)), args(), memory)
    assert evicted(back) == [] and back.taints_add == []
    later = cycle(dataclasses.replace(snapshot([node("idle"), node("busy")], [pod("app", "idle"), *BUSY]),
                                      now=NOW + dt.timedelta(minutes=16)), args(), memory)
    assert evicted(later) == ["app"]


def test_a_node_already_draining_stays_a_source_whatever_its_usage_and_takes_no_new_taint() -> None:
    full: list[PodRecord] = [pod(f"d-{i}", "idle", cpu=400) for i in range(3)]  # 30 %: above the threshold
    plan = cycle(snapshot([draining("idle", NOW - dt.timedelta(minutes=1)), node("busy")], [*full, *BUSY]), args())
    assert evicted(plan) == ["d-0", "d-1", "d-2"]
    assert plan.taints_add == []
