"""The loop detector: replacements that keep landing where a balance strategy moved their pods from hold the
workload from balance moves, with a note in the plan."""

from __future__ import annotations

import datetime as dt

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import PodRecord
from remediator.planning.memory import LOOP_GUARD
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.read_side.plan_answer import PlanAnswer
from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import (
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from tests.unit.remediator.strategies.cluster import NOW, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
NODES = [node(f"n-{z}", labels={ZONE: z}) for z in ("a", "b", "c")]
MOVED = NOW - dt.timedelta(minutes=2)
POLICY = Policy(strategies=(StrategyConfig("RemovePodsViolatingTopologySpreadConstraint",
                                           RemovePodsViolatingTopologySpreadConstraintArgs(
                                               constraints=("DoNotSchedule", "ScheduleAnyway"))),),
                limits=Limits(owner_cooldown=dt.timedelta(0)))


def d(i: int, zone: str, *, created: dt.datetime = NOW - dt.timedelta(days=1)) -> PodRecord:
    return pod(f"d-{i}", f"n-{zone}", owner_name="d-7d9f", labels={"app": "d", "pod-template-hash": "7d9f"},
               created=created)


def test_two_replacements_back_on_the_node_they_left_hold_the_workload() -> None:
    # Six on n-a; two were moved off it two minutes ago and the scheduler put both replacements back there.
    pods = [d(i, "a") for i in range(4)] + [d(4, "a", created=MOVED), d(5, "a", created=MOVED)]
    memory = PlannerMemory(moved_off={("uid-d-7d9f", "n-a"): MOVED})
    plan = make_plan(snapshot(NODES, pods), POLICY, memory)
    assert plan.evictions == []
    [loop] = plan.scheduler_loops
    assert (loop.owner, loop.node, loop.until) == ("ReplicaSet/d-7d9f", "n-a", NOW + LOOP_GUARD)
    assert {p.pod.name for p in plan.deferred} >= {"d-0", "d-1"}
    assert all("the scheduler disagrees with the policy" in p.why for p in plan.deferred)
    assert PlanAnswer.of(plan).scheduler_loops[0].note.startswith("the scheduler disagrees with the policy: pods of")
    later = snapshot(NODES, pods)
    later.now = NOW + LOOP_GUARD
    assert make_plan(later, POLICY, memory).scheduler_loops == [] and "uid-d-7d9f" not in memory.loops


def test_one_replacement_back_is_only_kept_where_it_is() -> None:
    pods = [d(i, "a") for i in range(5)] + [d(5, "a", created=MOVED)]
    plan = make_plan(snapshot(NODES, pods), POLICY, PlannerMemory(moved_off={("uid-d-7d9f", "n-a"): MOVED}))
    assert plan.scheduler_loops == []
    assert plan.evictions and "d-5" not in {e.pod.name for e in plan.evictions}


def test_pods_of_a_workload_that_grew_since_the_move_are_a_rollout_not_replacements() -> None:
    pods = [d(i, "a") for i in range(4)] + [d(4, "a", created=MOVED), d(5, "a", created=MOVED)]
    memory = PlannerMemory(moved_off={("uid-d-7d9f", "n-a"): MOVED}, owner_size={"uid-d-7d9f": 4})
    assert make_plan(snapshot(NODES, pods), POLICY, memory).scheduler_loops == []
    memory.owner_size["uid-d-7d9f"] = 6  # the size it had when the move was planned: these two came back
    assert [loop.owner for loop in make_plan(snapshot(NODES, pods), POLICY, memory).scheduler_loops] == [
        "ReplicaSet/d-7d9f"]


def test_the_planner_remembers_the_size_of_a_workload_it_moves() -> None:
    memory = PlannerMemory()
    plan = make_plan(snapshot(NODES, [d(i, "a") for i in range(6)]), POLICY, memory)
    assert plan.evictions and memory.owner_size == {"uid-d-7d9f": 6}


def test_a_move_planned_while_replacements_are_missing_keeps_the_workloads_full_size() -> None:
    """Two pods of an 8-pod workload evicted and gone, their replacements not made yet: the next move sees 6 live
    pods, but the workload is still 8; its replacements coming back are then a loop, not a scale-up."""
    memory = PlannerMemory(moved_off={("uid-d-7d9f", "n-a"): MOVED}, owner_size={"uid-d-7d9f": 8})
    plan = make_plan(snapshot(NODES, [d(i, "a") for i in range(6)]), POLICY, memory)
    assert plan.evictions and memory.owner_size == {"uid-d-7d9f": 8}
    back = [d(i, "a") for i in range(6)] + [d(6, "a", created=MOVED), d(7, "a", created=MOVED)]
    assert [loop.owner for loop in make_plan(snapshot(NODES, back), POLICY, memory).scheduler_loops] == [
        "ReplicaSet/d-7d9f"]
