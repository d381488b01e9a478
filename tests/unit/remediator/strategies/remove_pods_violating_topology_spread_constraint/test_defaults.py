"""RemovePodsViolatingTopologySpreadConstraint on pods that declare no constraint: the scheduler's default
constraints, as the policy's `scheduler` section gives them (the zone article's Deployment D, placed 1/2/3)."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.plan import Plan
from remediator.model.records import ContainerStatuses, DefaultConstraint, LabelSelector, PodRecord, SpreadConstraint
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.policy.scheduler import SchedulerSettings
from remediator.read_side.plan_answer import PlanAnswer
from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import (
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from remediator.strategies.remove_pods_violating_topology_spread_constraint.kept import KeptSpreads
from remediator.strategies.remove_pods_violating_topology_spread_constraint.plan import _defaulted
from tests.unit.remediator.strategies.cluster import evicted, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
NODES = [node(f"n-{z}", labels={ZONE: z, "kubernetes.io/hostname": f"n-{z}"}) for z in ("a", "b", "c")]
ZONE_ONE = SchedulerSettings(default_constraints=(DefaultConstraint(1, ZONE, "ScheduleAnyway"),), configured=True)


def d(i: int, zone: str, **kw: object) -> PodRecord:
    return pod(f"d-{i}", f"n-{zone}", owner_name="d-7d9f", labels={"app": "d", "pod-template-hash": "7d9f"}, **kw)


ONE_TWO_THREE = [d(0, "a"), d(1, "b"), d(2, "b"), d(3, "c"), d(4, "c"), d(5, "c")]


def plan(pods: list[PodRecord], *, constraints: tuple[str, ...], scheduler: SchedulerSettings) -> Plan:
    args = RemovePodsViolatingTopologySpreadConstraintArgs(constraints=constraints)
    policy = Policy(strategies=(StrategyConfig("RemovePodsViolatingTopologySpreadConstraint", args),),
                    limits=Limits(owner_cooldown=dt.timedelta(0)), scheduler=scheduler)
    return make_plan(snapshot(NODES, pods), policy, PlannerMemory())


def test_a_plain_deployment_placed_one_two_three_moves_one_pod_from_the_fullest_zone() -> None:
    p = plan(ONE_TWO_THREE, constraints=("DoNotSchedule", "ScheduleAnyway"), scheduler=ZONE_ONE)
    assert len(p.evictions) == 1 and p.evictions[0].pod.node_name == "n-c", PlanAnswer.of(p).to_json()
    assert p.evictions[0].destination == "n-a"
    assert "ScheduleAnyway spread on topology.kubernetes.io/zone: c holds 3" in p.evictions[0].reason


def test_schedule_anyway_defaults_are_left_alone_unless_the_strategy_lists_them() -> None:
    assert evicted(plan(ONE_TWO_THREE, constraints=("DoNotSchedule",), scheduler=ZONE_ONE)) == []


def test_an_unconfigured_default_scheduler_tolerates_the_skew_its_own_defaults_allow() -> None:
    """With the policy's profile a second scheduler, default-scheduler pods get kube-scheduler's internal defaults
    (zone maxSkew 5): a skew of 2 is within them."""
    second = SchedulerSettings(profile="nodemedic-spread", default_constraints=ZONE_ONE.default_constraints,
                               configured=True)
    assert evicted(plan(ONE_TWO_THREE, constraints=("DoNotSchedule", "ScheduleAnyway"), scheduler=second)) == []
    moved = plan([d(i, z, scheduler_name="nodemedic-spread") for i, z in enumerate("abbccc")],
                 constraints=("DoNotSchedule", "ScheduleAnyway"), scheduler=second)
    assert len(moved.evictions) == 1, PlanAnswer.of(moved).to_json()


def test_node_fit_says_it_cannot_predict_a_scheduler_it_does_not_know() -> None:
    hard = SpreadConstraint(1, ZONE, LabelSelector(match_labels=(("app", "d"),)))
    pods = [d(i, z, hard_spread=(hard,), scheduler_name=name) for i, z in enumerate("abbccc")
            for name in ["mystery" if i == 3 else "default-scheduler"]]
    p = plan(pods, constraints=("DoNotSchedule",), scheduler=ZONE_ONE)
    assert {pr.pod.name: pr.why for pr in p.protected}.get("d-3", "").endswith(
        "schedulerName 'mystery' is not a scheduler nodemedic knows (scheduler.profile, packingProfile, "
        "otherSchedulers): where it would place the pod cannot be predicted"), PlanAnswer.of(p).to_json()
    assert [e.pod.name for e in p.evictions] == ["d-4"], "a pod of a known scheduler of the same zone moves instead"


def test_namespaces_are_balanced_in_the_order_of_their_first_workload_in_scope_with_defaults_or_not() -> None:
    # Owners in this order: a Job's pod in x (no default constraints), Deployment e in y, Deployment f in x, both
    # placed 1/2/3. x comes first, so with room for one eviction it is f's.
    job = pod("job-0", "n-a", owner="Job", owner_name="job", namespace="x")

    def replica(name: str, i: int, zone: str, namespace: str) -> PodRecord:
        return pod(f"{name}-{i}", f"n-{zone}", owner_name=f"{name}-7d9f", namespace=namespace,
                   labels={"app": name, "pod-template-hash": "7d9f"})
    pods = [job, *(replica("e", i, z, "y") for i, z in enumerate("abbccc")),
            *(replica("f", i, z, "x") for i, z in enumerate("abbccc"))]
    args = RemovePodsViolatingTopologySpreadConstraintArgs(constraints=("DoNotSchedule", "ScheduleAnyway"))
    policy = Policy(strategies=(StrategyConfig("RemovePodsViolatingTopologySpreadConstraint", args),),
                    limits=Limits(owner_cooldown=dt.timedelta(0), max_pods_to_evict_total=1), scheduler=ZONE_ONE)
    p = make_plan(snapshot(NODES, pods), policy, PlannerMemory())
    assert [(e.pod.namespace, e.pod.name) for e in p.evictions] == [("x", "f-3")], PlanAnswer.of(p).to_json()


def test_a_workload_s_default_constraints_found_again_for_a_new_status_are_the_objects_kept() -> None:
    args = RemovePodsViolatingTopologySpreadConstraintArgs(constraints=("DoNotSchedule", "ScheduleAnyway"))
    first = snapshot(NODES, ONE_TWO_THREE)
    kept = first.derived.kept_by("RemovePodsViolatingTopologySpreadConstraint", KeptSpreads).run_on(first.nodes)
    [before] = _defaulted(first, kept, args, ZONE_ONE).values()
    restarted = [dataclasses.replace(p, containers=ContainerStatuses(restarts=2)) for p in ONE_TWO_THREE]
    [again] = _defaulted(dataclasses.replace(first, pods_by_owner={"uid-d-7d9f": restarted}), kept, args,
                         ZONE_ONE).values()
    assert again[0] is before[0], "the same spread and domains: the kept object, and what is kept by it, stand"
    relabelled = [dataclasses.replace(p, labels={"app": "d2", "pod-template-hash": "7d9f"}) for p in ONE_TWO_THREE]
    [other] = _defaulted(dataclasses.replace(first, pods_by_owner={"uid-d-7d9f": relabelled}), kept, args,
                         ZONE_ONE).values()
    assert other[0] is not before[0] and other[0].spread != before[0].spread
