"""MakeRoomForPendingPods through the planner: the article's cluster as pods, and the gate's rails on its moves."""

from __future__ import annotations

import datetime as dt

from remediator.control.planner import make_plan
from remediator.model.plan import Plan
from remediator.model.records import Condition, LabelSelector, NodeRecord, OwnerRef, PdbRecord, PodRecord
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.policy.safety import Safety
from remediator.state.snapshot import Snapshot
from remediator.strategies.make_room_for_pending_pods.args import MakeRoomForPendingPodsArgs
from remediator.strategies.make_room_for_pending_pods.report import Fragmentation

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MB = 1000 * 1000
UNSCHEDULABLE = "0/3 nodes are available: 1 Insufficient cpu, 2 Insufficient memory."
ARTICLE = {"node-1": [(400, 400), (200, 600), (200, 600)],
           "node-2": [(300, 300), (300, 300), (200, 400)],
           "node-3": [(200, 500), (200, 500), (300, 500)]}


def node(name: str, labels: dict[str, str] | None = None) -> NodeRecord:
    return NodeRecord(name=name, labels=labels or {}, conditions=(Condition("Ready", "True", NOW),),
                      allocatable={"cpu": 1000, "memory": 2000 * MB, "pods": 110})


def pod(name: str, node_name: str, cpu: int, memory: int, *, priority: int | None = None,
        labels: dict[str, str] | None = None, unschedulable: str = "",
        node_selector: dict[str, str] | None = None) -> PodRecord:
    created = NOW - dt.timedelta(hours=1)
    return PodRecord(namespace="default", name=name, uid=f"uid-{name}", node_name=node_name,
                     phase="Running" if node_name else "Pending",
                     owners=(OwnerRef("ReplicaSet", f"{name}-rs", f"uid-{name}-rs", controller=True),),
                     priority=priority, qos="Burstable", labels=labels or {"app": name},
                     requests={"cpu": cpu, "memory": memory * MB}, start_time=created, created=created,
                     unschedulable=unschedulable, node_selector=node_selector or {})


def snapshot(nodes: list[NodeRecord], pods: list[PodRecord], pdbs: list[PdbRecord] | None = None) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    for p in pods:
        if p.node_name:
            by_node.setdefault(p.node_name, []).append(p)
        for o in p.owners:
            by_owner.setdefault(o.uid, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner=by_owner,
                    pdbs=pdbs or [], pending=[p for p in pods if not p.node_name])


def article(**kw: object) -> list[PodRecord]:
    return [pod(f"{n}-p{i}", n, c, m, **kw) for n, rows in ARTICLE.items()  # type: ignore[arg-type]
            for i, (c, m) in enumerate(rows)]


def policy(**args: object) -> Policy:
    return Policy(strategies=(StrategyConfig("MakeRoomForPendingPods",
                                             MakeRoomForPendingPodsArgs(**args)),),  # type: ignore[arg-type]
                  limits=Limits(owner_cooldown=dt.timedelta(0)))


NODES = [node("node-1"), node("node-2"), node("node-3")]
PENDING = pod("pending", "", 300, 600, unschedulable=UNSCHEDULABLE)


def fragmentation(plan: Plan) -> Fragmentation:
    """The strategy's report in the plan (every plan with the strategy configured has one)."""
    report = plan.reports["MakeRoomForPendingPods"]
    assert isinstance(report, Fragmentation)
    return report


def test_the_articles_cluster_gets_one_move_and_the_pending_pod_its_room() -> None:
    plan = make_plan(snapshot(NODES, [*article(), PENDING]), policy(), PlannerMemory())
    assert len(plan.evictions) == 1
    (e,) = plan.evictions
    assert e.strategy == "MakeRoomForPendingPods" and "for pending default/pending" in e.reason
    assert [p.key for p in fragmentation(plan).pending] == ["default/pending"]
    (made,) = fragmentation(plan).made_room
    assert (made.pod, made.node, made.moved) == (PENDING, e.pod.node_name, (e.pod.key,))
    assert fragmentation(plan).stranded == {"cpu": 700, "memory": 1900 * MB}


def test_a_pod_the_scheduler_has_not_refused_is_left_to_the_scheduler() -> None:
    waiting = pod("pending", "", 300, 600)  # no PodScheduled=False/Unschedulable yet
    plan = make_plan(snapshot(NODES, [*article(), waiting]), policy(), PlannerMemory())
    assert plan.evictions == [] and fragmentation(plan).pending == ()


def test_a_real_shortage_is_the_autoscalers_business() -> None:
    big = pod("pending", "", 800, 600, unschedulable=UNSCHEDULABLE)  # 800m > the 700m free in all
    plan = make_plan(snapshot(NODES, [*article(), big]), policy(), PlannerMemory())
    assert plan.evictions == [] and fragmentation(plan).pending == ()


def test_a_pod_bound_to_one_pool_is_judged_against_that_pool() -> None:
    nodes = [node("node-1"), node("node-2", {"pool": "b"}), node("node-3", {"pool": "b"})]
    pinned = pod("pending", "", 300, 600, unschedulable=UNSCHEDULABLE, node_selector={"pool": "b"})
    plan = make_plan(snapshot(nodes, [*article(), pinned]), policy(), PlannerMemory())
    assert fragmentation(plan).pending == (pinned,)
    assert fragmentation(plan).stranded == {"cpu": 500, "memory": 1500 * MB}  # node-2 and node-3 only
    (e,) = plan.evictions
    assert fragmentation(plan).made_room[0].node in {"node-2", "node-3"}
    assert e.pod.node_name == fragmentation(plan).made_room[0].node


def test_higher_priority_pods_and_exhausted_pdbs_are_not_moved() -> None:
    pods = article(priority=1000, labels={"app": "db"})
    plan = make_plan(snapshot(NODES, [*pods, PENDING]), policy(), PlannerMemory())
    assert plan.evictions == []  # every pod matters more than the pending one
    pdb = PdbRecord("default", "all", LabelSelector(), disruptions_allowed=0)
    plan = make_plan(snapshot(NODES, [*article(), PENDING], [pdb]), policy(), PlannerMemory())
    assert plan.evictions == []


def test_a_pause_stops_it() -> None:
    paused = Policy(strategies=policy().strategies, safety=Safety(paused=True))
    assert make_plan(snapshot(NODES, [*article(), PENDING]), paused, PlannerMemory()).evictions == []


def test_room_is_made_once_per_pod_until_retry_after() -> None:
    memory = PlannerMemory()
    snap = snapshot(NODES, [*article(), PENDING])
    assert len(make_plan(snap, policy(), memory).evictions) == 1
    assert make_plan(snap, policy(), memory).evictions == []  # its evictions are playing out
    snap.now = NOW + dt.timedelta(minutes=3)
    assert len(make_plan(snap, policy(), memory).evictions) == 1  # still pending after retryAfter: again
