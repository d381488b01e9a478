"""LowNodeUtilization and HighNodeUtilization: scenarios with the evictions the algorithm implies.

Each row is a small cluster (nodes with allocatable, pods with requests), the strategy's args and the pods the
plan must evict. The expectation is worked out by hand from descheduler's algorithm (descheduler.md §4) and, where
nodemedic deliberately differs, the row's `differs` names the difference (docs/utilization.md) and says what
descheduler would do instead: the quirks kept and the quirks fixed are both pinned here.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from remediator.control.planner import make_plan
from remediator.model.records import (
    Condition,
    Effect,
    LabelSelector,
    NodeRecord,
    OwnerRef,
    PdbRecord,
    PodRecord,
    SpreadConstraint,
    Taint,
    Toleration,
)
from remediator.planning.memory import PlannerMemory
from remediator.planning.owned_taints import OwnedTaint, render_owned, strategy_owner
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.limits import Limits
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy, StrategyConfig
from remediator.policy.rules import TaintRule
from remediator.policy.safety import Safety
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.snapshot import Snapshot
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.high_node_utilization.consolidation import CONSOLIDATION_TAINT
from remediator.strategies.high_node_utilization.plan import NAME as HNU
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
GiB = 1 << 30
ZONE = "topology.kubernetes.io/zone"
DEADLOCK = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
RULE = TaintRule(name="deadlock", condition_type="KernelDeadlock", condition_status="True",
                 for_=dt.timedelta(seconds=30), taint=DEADLOCK)


def node(name: str, *, cpu: int = 4000, memory: int = 16 * GiB, pods: int = 110, zone: str = "",
         taints: tuple[Taint, ...] = (), unschedulable: bool = False, sick: bool = False,
         annotations: dict[str, str] | None = None, extra: dict[str, int] | None = None) -> NodeRecord:
    conditions = [Condition("Ready", "True", NOW - dt.timedelta(hours=1))]
    if sick:
        conditions.append(Condition("KernelDeadlock", "True", NOW - dt.timedelta(minutes=5),
                                    observed_at=NOW - dt.timedelta(minutes=5)))
    return NodeRecord(name=name, labels={ZONE: zone} if zone else {}, taints=taints, unschedulable=unschedulable,
                      conditions=tuple(conditions), annotations=annotations or {},
                      allocatable={"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})})


def pod(name: str, node_name: str, cpu: int = 400, memory: int = 256 << 20, *, owner: str | None = None,
        kind: str = "ReplicaSet", namespace: str = "default", priority: int | None = None, qos: str = "Burstable",
        labels: dict[str, str] | None = None, tolerations: tuple[Toleration, ...] = (),
        extra: dict[str, int] | None = None, annotations: dict[str, str] | None = None,
        created: dt.datetime = NOW - dt.timedelta(hours=1)) -> PodRecord:
    owner_name = owner or f"{name}-rs"
    owners = (OwnerRef(kind, owner_name, f"uid-{owner_name}", controller=True),) if kind else ()
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return PodRecord(namespace=namespace, name=name, uid=f"uid-{name}", node_name=node_name, phase="Running",
                     owners=owners, priority=priority, qos=qos, labels=labels or {"app": name},
                     tolerations=tolerations, requests={**requests, **(extra or {})},
                     annotations=annotations or {}, start_time=created, created=created)


def pods_on(node_name: str, count: int, cpu: int = 400, prefix: str | None = None, **kw: object) -> list[PodRecord]:
    return [pod(f"{prefix or node_name}-{i}", node_name, cpu, **kw) for i in range(count)]  # type: ignore[arg-type]


def lnu(thresholds: dict[str, float], targets: dict[str, float], **kw: object) -> StrategyConfig:
    return StrategyConfig("LowNodeUtilization", LowNodeUtilizationArgs(
        thresholds=tuple(sorted(thresholds.items())), target_thresholds=tuple(sorted(targets.items())),
        **kw))  # type: ignore[arg-type]


def hnu(thresholds: dict[str, float], **kw: object) -> StrategyConfig:
    return StrategyConfig("HighNodeUtilization", HighNodeUtilizationArgs(
        thresholds=tuple(sorted(thresholds.items())), **kw))  # type: ignore[arg-type]


def consolidating_annotation(since: dt.datetime) -> dict[str, str]:
    return {OWNED_TAINTS_ANNOTATION: render_owned([OwnedTaint(CONSOLIDATION_TAINT, (strategy_owner(HNU),), "t",
                                                              since)])}


@dataclass
class Case:
    id: str
    nodes: list[NodeRecord]
    pods: list[PodRecord]
    strategies: tuple[StrategyConfig, ...]
    evicted: list[str]  # in plan order
    taints_add: list[str] = field(default_factory=list)  # nodes getting the consolidation taint
    taints_remove: list[str] = field(default_factory=list)
    protected: dict[str, str] = field(default_factory=dict)  # pod -> substring of why
    deferred: dict[str, str] = field(default_factory=dict)
    limits: Limits = dataclasses.field(default_factory=lambda: Limits(owner_cooldown=dt.timedelta(0)))
    pdbs: list[PdbRecord] = field(default_factory=list)
    memory: PlannerMemory = field(default_factory=PlannerMemory)
    safety: Safety = dataclasses.field(default_factory=lambda: Safety(max_tainted_nodes=None,
                                                                      max_tainted_nodes_percent=None))
    rules: tuple[TaintRule, ...] = ()
    differs: str = ""  # the documented difference from descheduler this row pins, and what descheduler does


HOST = "kubernetes.io/hostname"
SOFT_HOST = SpreadConstraint(max_skew=1, topology_key=HOST, selector=LabelSelector(match_labels=(("app", "web"),)))
HOT = pods_on("hot", 9)  # 9 x 400m of 4000m = 90 % cpu
CASES = [
    # --- LowNodeUtilization --------------------------------------------------------------------------------
    Case("lnu-balanced", [node("a"), node("b"), node("c")],
         pods_on("a", 4) + pods_on("b", 4) + pods_on("c", 4), (lnu({"cpu": 20}, {"cpu": 50}),), []),
    Case("lnu-one-hot-node-relieved-down-to-target",
         [node("hot"), node("cold1"), node("cold2")], HOT + pods_on("cold1", 1) + pods_on("cold2", 1),
         (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"]),
    Case("lnu-number-of-nodes-not-exceeded", [node("hot"), node("cold1"), node("cold2")],
         HOT + pods_on("cold1", 1) + pods_on("cold2", 1), (lnu({"cpu": 20}, {"cpu": 50}, number_of_nodes=2),), []),
    Case("lnu-every-node-underutilized", [node("a"), node("b")], pods_on("a", 1) + pods_on("b", 1),
         (lnu({"cpu": 20}, {"cpu": 50}),), []),
    Case("lnu-no-node-underutilized", [node("hot"), node("mid")], HOT + pods_on("mid", 5),
         (lnu({"cpu": 20}, {"cpu": 50}),), []),
    Case("lnu-eviction-order-priority-then-qos",
         [node("hot"), node("cold")],
         [pod("guaranteed", "hot", 800, qos="Guaranteed"), pod("high", "hot", 800, priority=1000),
          pod("low", "hot", 800, priority=10), pod("burstable", "hot", 800),
          pod("besteffort-ish", "hot", 800, qos="BestEffort")],
         (lnu({"cpu": 20}, {"cpu": 60}),),
         # no priority first (BestEffort < Burstable < Guaranteed), then ascending priority; 100% -> 60% = 2 pods
         ["besteffort-ish", "burstable"]),
    Case("lnu-a-pod-that-frees-nothing-over-target-stays",
         [node("hot"), node("cold")], [pod("nothing", "hot", 0, 0, qos="BestEffort"), *pods_on("hot", 9)],
         (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"],
         differs="relieves: descheduler evicts the BestEffort pod first (it sorts first) though it frees no cpu"),
    Case("lnu-pod-fits-no-single-destination-though-the-pool-has-room",
         [node("hot"), node("cold1"), node("cold2")],
         [pod("big", "hot", 1500), pod("filler", "hot", 2000), *pods_on("cold1", 2), *pods_on("cold2", 2)],
         (lnu({"cpu": 20}, {"cpu": 50}),), [],
         protected={"big": "would go above target cpu 50%"},
         differs="dest-fit: descheduler evicts big (pooled budget 2 x 1200m >= 1500m); it fits neither node"),
    Case("lnu-destination-taints-toleration-checked-per-effect",
         [node("hot"), node("cold", taints=(Taint("dedicated", "x", Effect.NO_SCHEDULE),
                                            Taint("soft", "", Effect.PREFER_NO_SCHEDULE)))],
         [pod("tolerant", "hot", 1200, tolerations=(Toleration("dedicated", "Equal", "x", "NoSchedule"),)),
          pod("intolerant", "hot", 1200), pod("stay", "hot", 1200)],
         (lnu({"cpu": 20}, {"cpu": 70}),), ["tolerant"],
         protected={"intolerant": "untolerated taint dedicated"},
         differs="tolerations: descheduler skips tolerant too (fewer tolerations than the node has taints)"),
    Case("lnu-eviction-limits-node", [node("hot"), node("cold1"), node("cold2")],
         HOT + pods_on("cold1", 1) + pods_on("cold2", 1),
         (lnu({"cpu": 20}, {"cpu": 50}, eviction_limit_per_node=2),), ["hot-0", "hot-1"]),
    Case("lnu-excluded-namespace-counts-but-does-not-move", [node("hot"), node("cold")],
         pods_on("hot", 5, namespace="kube-system", prefix="sys") + pods_on("hot", 4),
         (lnu({"cpu": 20}, {"cpu": 50}, evictable_namespaces_exclude=("kube-system",)),), ["hot-0", "hot-1", "hot-2",
                                                                                        "hot-3"]),
    Case("lnu-pdb-budget", [node("hot"), node("cold1"), node("cold2")],
         pods_on("hot", 9, owner="web", labels={"app": "web"}) + pods_on("cold1", 1, prefix="c1")
         + pods_on("cold2", 1, prefix="c2"),
         (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0"],
         pdbs=[PdbRecord("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=1)],
         deferred={"hot-1": "PodDisruptionBudget default/web allows 1"},
         differs="pdb: descheduler plans 4 and the API refuses 3 with 429s"),
    Case("lnu-owner-cooldown-one-pod-of-an-owner-per-cycle", [node("hot"), node("cold1"), node("cold2")],
         pods_on("hot", 9, owner="web"), (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0"],
         limits=Limits(owner_cooldown=dt.timedelta(seconds=30)), deferred={"hot-1": "owner cool-down"},
         differs="cooldown: descheduler has no memory of evictions"),
    Case("lnu-loop-guard", [node("hot"), node("cold1"), node("cold2")],
         [pod("back", "hot", owner="web", created=NOW - dt.timedelta(minutes=5)),
          *pods_on("hot", 8, owner="web")],
         (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"],
         memory=PlannerMemory(moved_off={("uid-web", "hot"): NOW - dt.timedelta(minutes=10)}),
         deferred={"back": "loop guard"},
         differs="loop: descheduler evicts back, the replacement that came back after the last move"),
    Case("lnu-zone-spread-not-made-worse",
         [node("hot", zone="a"), node("cold-b", zone="b"), node("cold-c", zone="c")],
         [pod("a-spread", "hot", 400, owner="spread"), *pods_on("hot", 8),
          pod("spread-b", "cold-b", 400, owner="spread"), pod("spread-c", "cold-c", 400, owner="spread")],
         (lnu({"cpu": 30}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"],
         protected={"a-spread": "zone spread"},
         differs="spread: descheduler moves the spread pod first (name order), leaving zone a without one"),
    Case("lnu-schedule-anyway-spread-not-made-worse",
         [dataclasses.replace(node("hot"), labels={HOST: "hot"}),
          dataclasses.replace(node("cold"), labels={HOST: "cold"})],
         [dataclasses.replace(pod("a-web", "hot", owner="web", labels={"app": "web"}), soft_spread=(SOFT_HOST,)),
          dataclasses.replace(pod("web-cold", "cold", owner="web", labels={"app": "web"}), soft_spread=(SOFT_HOST,)),
          *pods_on("hot", 8)],
         (lnu({"cpu": 30}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"],
         protected={"a-web": "ScheduleAnyway"},
         differs="spread: descheduler moves a-web first, leaving cold with both web pods (skew 2 > maxSkew 1)"),
    Case("lnu-cordoned-node-is-a-source-not-a-destination",
         [node("hot", unschedulable=True), node("cordoned-cold", unschedulable=True), node("cold")],
         HOT, (lnu({"cpu": 20}, {"cpu": 50}),), ["hot-0", "hot-1", "hot-2", "hot-3"]),
    Case("lnu-pods-resource", [node("full", pods=10), node("empty", pods=10), node("half", pods=10)],
         pods_on("full", 10, cpu=10) + pods_on("half", 5, cpu=10), (lnu({"pods": 20}, {"pods": 60}),),
         ["full-0", "full-1", "full-2", "full-3"]),
    Case("lnu-extended-resource", [node("gpu-hot", extra={"nvidia.com/gpu": 4}),
                                   node("gpu-cold", extra={"nvidia.com/gpu": 4}), node("no-gpu")],
         [pod(f"g{i}", "gpu-hot", 10, extra={"nvidia.com/gpu": 1}) for i in range(4)],
         (lnu({"nvidia.com/gpu": 25}, {"nvidia.com/gpu": 50}),), ["g0", "g1"]),
    Case("lnu-deviation-thresholds", [node("a"), node("b"), node("c")],
         pods_on("a", 8) + pods_on("b", 4) + pods_on("c", 0),
         # mean 40 %: low 40-10 = 30 (c at 0 % is under), high 40+30 = 70 (a at 80 % is over): one move
         (lnu({"cpu": 10}, {"cpu": 30}, use_deviation_thresholds=True),), ["a-0"]),
    # --- HighNodeUtilization -------------------------------------------------------------------------------
    Case("hnu-one-idle-node-emptied-and-tainted", [node("idle"), node("busy1"), node("busy2")],
         pods_on("idle", 2) + pods_on("busy1", 6) + pods_on("busy2", 6), (hnu({"cpu": 20}),),
         ["idle-0", "idle-1"], taints_add=["idle"]),
    Case("hnu-daemonset-and-mirror-pods-neither-move-nor-block", [node("idle"), node("busy")],
         [pod("ds", "idle", 100, kind="DaemonSet"), pod("app", "idle", 400), *pods_on("busy", 6)],
         (hnu({"cpu": 20}),), ["app"], taints_add=["idle"]),
    Case("hnu-a-node-that-cannot-be-emptied-is-left-alone", [node("idle"), node("busy")],
         [pod("bare", "idle", 100, kind=""), pod("app", "idle", 400), *pods_on("busy", 6)],
         (hnu({"cpu": 20}),), [], protected={"app": "cannot be emptied", "bare": "cannot be emptied"},
         differs="hnu-whole-node: descheduler evicts app and leaves the node half full"),
    Case("hnu-pods-that-do-not-all-fit-move-none", [node("idle"), node("busy", cpu=3000)],
         pods_on("idle", 3) + pods_on("busy", 6), (hnu({"cpu": 30}),), [],
         protected={"idle-0": "cannot be emptied"},
         differs="hnu-whole-node: descheduler moves two pods (budget 600m) and leaves the third"),
    Case("hnu-every-node-underutilized-the-fuller-take-the-emptier", [node("a"), node("b"), node("c")],
         pods_on("a", 1) + pods_on("b", 1, cpu=600) + pods_on("c", 1, cpu=700), (hnu({"cpu": 20}),),
         ["a-0"], taints_add=["a"],
         differs="hnu-all-under: descheduler does nothing when every node is underutilized (#725)"),
    Case("hnu-an-empty-node-takes-no-consolidation-slot", [node("empty"), node("idle"), node("busy")],
         [pod("ds", "empty", 100, kind="DaemonSet"), *pods_on("idle", 1), *pods_on("busy", 6)],
         (hnu({"cpu": 20}),), ["idle-0"], taints_add=["idle"]),
    Case("hnu-all-under-packs-into-the-fullest-never-into-an-emptier-node", [node("x"), node("y"), node("z")],
         [*pods_on("x", 1, cpu=100), *pods_on("y", 1, cpu=300), *pods_on("z", 1, cpu=600)],
         (hnu({"cpu": 20}, taint_drained_nodes=False),), ["x-0", "y-0"],
         differs="hnu-all-under: descheduler does nothing; nodemedic empties x and y into z, the fullest"),
    Case("hnu-number-of-nodes", [node("idle"), node("busy")], pods_on("idle", 1) + pods_on("busy", 6),
         (hnu({"cpu": 20}, number_of_nodes=1),), []),
    Case("hnu-one-consolidation-at-a-time", [node("i1"), node("i2"), node("i3"), node("busy")],
         pods_on("i1", 1) + pods_on("i2", 1, cpu=300) + pods_on("i3", 1, cpu=200) + pods_on("busy", 5),
         (hnu({"cpu": 20}),), ["i3-0"], taints_add=["i3"]),
    Case("hnu-without-taints-every-idle-node", [node("i1"), node("i2"), node("busy")],
         pods_on("i1", 1) + pods_on("i2", 1, cpu=300) + pods_on("busy", 5),
         (hnu({"cpu": 20}, taint_drained_nodes=False),), ["i2-0", "i1-0"]),
    Case("hnu-continues-a-consolidation-without-a-new-taint",
         [node("draining", taints=(CONSOLIDATION_TAINT,), annotations=consolidating_annotation(NOW)),
          node("i2"), node("busy")],
         pods_on("draining", 1) + pods_on("i2", 1, cpu=300) + pods_on("busy", 5), (hnu({"cpu": 20}),),
         ["draining-0"]),
    Case("hnu-gives-a-node-back-after-the-timeout",
         [node("draining", taints=(CONSOLIDATION_TAINT,),
               annotations=consolidating_annotation(NOW - dt.timedelta(minutes=20))), node("busy")],
         pods_on("busy", 5), (hnu({"cpu": 20}),), [], taints_remove=["draining"]),
    Case("hnu-removed-from-policy-gives-nodes-back",
         [node("draining", taints=(CONSOLIDATION_TAINT,), annotations=consolidating_annotation(NOW)),
          node("busy")], pods_on("busy", 5), (), [], taints_remove=["draining"]),
    Case("hnu-no-new-consolidation-while-the-breaker-is-open",
         [node("sick1", sick=True), node("sick2", sick=True), node("idle"), node("busy")],
         pods_on("idle", 1) + pods_on("busy", 5), (hnu({"cpu": 20}),), [],
         rules=(RULE,), safety=Safety(max_tainted_nodes=1, max_tainted_nodes_percent=None)),
    Case("hnu-excluded-namespace-blocks-the-node", [node("idle"), node("busy")],
         [pod("sys", "idle", 100, namespace="kube-system"), pod("app", "idle", 100), *pods_on("busy", 5)],
         (hnu({"cpu": 20}, evictable_namespaces_exclude=("kube-system",)),), [],
         protected={"app": "excluded namespace"}),
    # --- together with the taint strategy ------------------------------------------------------------------
    Case("deschedule-runs-first-and-a-node-receiving-pods-is-not-drained",
         [node("sick", sick=True), node("idle"), node("busy", cpu=2000)],
         pods_on("sick", 1, cpu=1000) + pods_on("idle", 1) + pods_on("busy", 3),
         (StrategyConfig("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs()), hnu({"cpu": 30})),
         # sick-0 (1000m) fits only on idle (busy has 800m free): idle receives it and is not emptied
         ["sick-0"], rules=(RULE,)),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario(case: Case) -> None:
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    for p in case.pods:
        by_node.setdefault(p.node_name, []).append(p)
        for o in p.owners:
            by_owner.setdefault(o.uid, []).append(p)
    snapshot = Snapshot(now=NOW, nodes={n.name: n for n in case.nodes}, pods_by_node=by_node,
                        pods_by_owner=by_owner, pdbs=case.pdbs)
    policy = Policy(rules=case.rules, evictor=EvictorArgs(), strategies=case.strategies, limits=case.limits,
                    safety=case.safety)
    plan = make_plan(snapshot, policy, case.memory)
    assert [e.pod.name for e in plan.evictions] == case.evicted, PlanAnswer.of(plan).to_json()
    consolidation = CONSOLIDATION_TAINT.identity()
    assert [c.node for c in plan.taints_add if c.taint.identity() == consolidation] == case.taints_add
    assert [c.node for c in plan.taints_remove if c.taint.identity() == consolidation] == case.taints_remove
    protected = {p.pod.name: p.why for p in plan.protected}
    deferred = {p.pod.name: p.why for p in plan.deferred}
    for name, why in case.protected.items():
        assert why in protected.get(name, ""), (name, protected)
    for name, why in case.deferred.items():
        assert why in deferred.get(name, ""), (name, deferred)


def test_every_difference_a_row_names_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[4] / "docs" / "utilization.md").read_text()
    for case in CASES:
        if case.differs:
            ident = case.differs.split(":")[0]
            assert f"`{ident}`" in doc, f"{case.id}: difference {ident!r} is not in docs/utilization.md"


def test_balance_moves_are_remembered_for_the_loop_guard_and_forgotten_after_it() -> None:
    memory = PlannerMemory()
    p = pod("p", "hot")
    memory.record_eviction(p, balance=True, now=NOW)
    assert memory.moved_off == {("uid-p-rs", "hot"): NOW}
    memory.record_eviction(pod("q", "x"), balance=False, now=NOW)
    assert ("uid-q-rs", "x") not in memory.moved_off and memory.owner_last_eviction["uid-q-rs"] == NOW
    memory.forget_before(NOW + dt.timedelta(seconds=1))
    assert memory.moved_off == {}
