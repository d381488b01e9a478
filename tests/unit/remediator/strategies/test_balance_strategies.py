"""RemoveDuplicates and RemovePodsViolatingTopologySpreadConstraint: scenarios with the evictions the algorithm
implies, worked out by hand from descheduler v0.36.0's plugins (removeduplicates.go, topologyspreadconstraint.go)
and its own test cases; where nodemedic deliberately differs, `differs` names the documented difference
(docs/balance-strategies.md) and says what descheduler does instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from remediator.cli import main
from remediator.control.planner import make_plan
from remediator.model.records import Effect, LabelSelector, NodeRecord, PdbRecord, PodRecord, SpreadConstraint, Taint
from remediator.planning.memory import PlannerMemory
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.policy.loader import load_policy
from remediator.policy.model import Policy, StrategyConfig
from remediator.policy.safety import Safety
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.caches import snapshot_from_list
from remediator.state.snapshot import Snapshot
from remediator.strategies import CATALOG
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_duplicates.args import RemoveDuplicatesArgs
from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import (
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from remediator.strategies.remove_pods_violating_topology_spread_constraint.plan import descheduler_moves
from tests.unit.remediator.strategies.test_utilization_strategies import NOW, ZONE, node, pod

ROOT = Path(__file__).resolve().parents[4]
WEB = LabelSelector(match_labels=(("app", "web"),))


def dup(**kw: object) -> StrategyConfig:
    return StrategyConfig("RemoveDuplicates", RemoveDuplicatesArgs(**kw))  # type: ignore[arg-type]


def tsc(**kw: object) -> StrategyConfig:
    return StrategyConfig("RemovePodsViolatingTopologySpreadConstraint",
                          RemovePodsViolatingTopologySpreadConstraintArgs(**kw))  # type: ignore[arg-type]


def replicas(owner: str, node_name: str, count: int, *, start: int = 0, image: str = "nginx",
             **kw: object) -> list[PodRecord]:
    """`count` pods of ReplicaSet `owner` on `node_name`, named owner-<node>-<i>."""
    return [dataclasses.replace(pod(f"{owner}-{node_name}-{i}", node_name, 100, owner=owner,  # type: ignore[arg-type]
                                    labels={"app": owner}, **kw), images=(image,))
            for i in range(start, start + count)]


def zone_nodes(*spec: tuple[str, str]) -> list[NodeRecord]:
    return [dataclasses.replace(node(name, zone=zone), labels={ZONE: zone, "kubernetes.io/hostname": name})
            for name, zone in spec]


def spread(pods: list[PodRecord], c: SpreadConstraint, *, soft: bool = False) -> list[PodRecord]:
    return [dataclasses.replace(p, soft_spread=(c,)) if soft else dataclasses.replace(p, hard_spread=(c,))
            for p in pods]


ZONE_SKEW_1 = SpreadConstraint(max_skew=1, topology_key=ZONE, selector=WEB)


@dataclass
class Case:
    id: str
    nodes: list[NodeRecord]
    pods: list[PodRecord]
    strategies: tuple[StrategyConfig, ...]
    evicted: list[str]  # in plan order
    protected: dict[str, str] = field(default_factory=dict)  # pod -> substring of why
    deferred: dict[str, str] = field(default_factory=dict)
    pdbs: list[PdbRecord] = field(default_factory=list)
    differs: str = ""  # the documented difference from descheduler this row pins, and what descheduler does


THREE = [node("n1"), node("n2"), node("n3")]
CASES = [
    # --- RemoveDuplicates (descheduler's TestFindDuplicatePods / TestRemoveDuplicatesUniformly shapes) ------
    Case("dup-three-on-one-node-of-three", THREE, replicas("web", "n1", 3), (dup(),),
         # 3 replicas over 3 target nodes: upper = 1, n1 gives up 2
         ["web-n1-0", "web-n1-1"]),
    Case("dup-already-uniform", THREE, replicas("web", "n1", 2) + replicas("web", "n2", 2) + replicas("web", "n3", 2),
         (dup(),), []),
    Case("dup-upper-average-rounds-up", THREE,
         replicas("web", "n1", 4) + replicas("web", "n2", 1), (dup(),),
         # 5 over 3: upper = 2, n1 gives up 2 (one each to n3 then n2, fewest first by room)
         ["web-n1-0", "web-n1-1"]),
    Case("dup-different-images-are-no-duplicates", THREE,
         replicas("web", "n1", 1) + replicas("web", "n1", 1, start=1, image="redis"), (dup(),), []),
    Case("dup-bare-pods-have-no-owner", THREE,
         [dataclasses.replace(p, owners=()) for p in replicas("web", "n1", 3)], (dup(),), []),
    Case("dup-exclude-owner-kinds", THREE, replicas("batch", "n1", 3, kind="Job"),
         (dup(exclude_owner_kinds=("Job",)),), []),
    Case("dup-namespaces-exclude", THREE, replicas("web", "n1", 3, namespace="kube-system"),
         (dup(scope=PodScope(Namespaces(exclude=("kube-system",)))),), []),
    Case("dup-fewer-than-two-target-nodes", [node("n1"), node("n2", taints=(Taint("gpu", "", Effect.NO_SCHEDULE),))],
         replicas("web", "n1", 3), (dup(),), []),
    Case("dup-targets-are-the-nodes-the-replicas-tolerate",
         [node("n1"), node("n2"), node("n3", taints=(Taint("gpu", "", Effect.NO_SCHEDULE),))],
         replicas("web", "n1", 4), (dup(),),
         # 4 over 2 target nodes (n3 untolerated): upper = 2, n1 gives up 2, both to n2
         ["web-n1-0", "web-n1-1"]),
    Case("dup-cordoned-node-is-no-target", [node("n1"), node("n2"), node("n3", unschedulable=True)],
         replicas("web", "n1", 4), (dup(),), ["web-n1-0", "web-n1-1"],
         differs="dup-targets: descheduler counts cordoned n3 (upper = ceil(4/3) = 2) and evicts the same two here, "
                 "but with 3 replicas it would evict 2 where only n2 can take one"),
    Case("dup-cordoned-node-is-no-target-3", [node("n1"), node("n2"), node("n3", unschedulable=True)],
         replicas("web", "n1", 3), (dup(),), ["web-n1-0"],
         differs="dup-targets: descheduler's upper = ceil(3/3) = 1 evicts 2; only n2 can take one (upper 2)"),
    Case("dup-count-every-replica", THREE,
         [dataclasses.replace(p, has_local_storage=True) for p in replicas("web", "n1", 2)]
         + replicas("web", "n1", 1, start=2), (dup(),),
         # 3 replicas over 3 nodes: upper 1; only the one without local storage may move
         ["web-n1-2"],
         differs="dup-count: descheduler counts only the evictable replica (one on n1) and evicts nothing"),
    Case("dup-no-room-elsewhere", [node("n1"), node("n2", cpu=50), node("n3", cpu=50)],
         replicas("web", "n1", 3), (dup(),), [], protected={"web-n1-0": "no destination fits"},
         differs="dup-dest: descheduler evicts 2 (its nodes are only checked for taints and node selection)"),
    Case("dup-zone-spread-not-made-worse", zone_nodes(("a1", "a"), ("a2", "a"), ("b1", "b")),
         replicas("web", "a1", 2) + replicas("web", "b1", 1), (dup(),),
         # upper = 1; the second replica on a1 goes to a2 (same zone), never to b1 which holds one already
         ["web-a1-0"]),
    Case("dup-zone-spread-evened", zone_nodes(("a1", "a"), ("b1", "b"), ("c1", "c")),
         replicas("web", "a1", 3), (dup(),), ["web-a1-0", "web-a1-1"]),
    Case("dup-zone-spread-made-worse-is-refused",
         zone_nodes(("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b")),
         replicas("web", "b1", 2) + replicas("web", "a1", 1) + replicas("web", "a2", 1),
         # 4 over 4 nodes: upper 1, b1 gives up one; the only node holding none is a3: zones a 2, b 2 -> a 3, b 1
         (dup(),), [], protected={"web-b1-0": "zone spread"},
         differs="dup-zones: descheduler evicts web-b1-0; the scheduler's default spread may put it on a3"),
    Case("dup-pdb", THREE, replicas("web", "n1", 3), (dup(),), ["web-n1-0"],
         pdbs=[PdbRecord("default", "web", WEB, disruptions_allowed=1)],
         deferred={"web-n1-1": "PodDisruptionBudget default/web allows 1"},
         differs="pdb: descheduler plans 2 and the API refuses one with a 429"),
    # --- RemovePodsViolatingTopologySpreadConstraint -------------------------------------------------------
    Case("tsc-zone-came-back", zone_nodes(("a1", "a"), ("b1", "b"), ("c1", "c")),
         spread(replicas("web", "a1", 3) + replicas("web", "b1", 3), ZONE_SKEW_1), (tsc(),),
         # [c:0, a:3, b:3], avg 2: j=b (3 > 2) vs i=c: skew 3, move min(1, 2, 1) = 1; then a vs c (1): skew 2,
         # move min(1, 1, 1) = 1 -> 2/2/2
         ["web-b1-0", "web-a1-0"]),
    Case("tsc-balanced-within-max-skew", zone_nodes(("a1", "a"), ("b1", "b"), ("c1", "c")),
         spread(replicas("web", "a1", 2) + replicas("web", "b1", 2) + replicas("web", "c1", 1), ZONE_SKEW_1),
         (tsc(),), []),
    Case("tsc-max-skew-2", zone_nodes(("a1", "a"), ("b1", "b")),
         spread(replicas("web", "a1", 5) + replicas("web", "b1", 1), dataclasses.replace(ZONE_SKEW_1, max_skew=2)),
         (tsc(),),
         # avg 3, skew 4: min(ceil(5-3), ceil(3-1), ceil((4-2)/2)) = 1 -> 4/2 within 2
         ["web-a1-0"]),
    Case("tsc-schedule-anyway-ignored-by-default", zone_nodes(("a1", "a"), ("b1", "b")),
         spread(replicas("web", "a1", 4), ZONE_SKEW_1, soft=True), (tsc(),), []),
    Case("tsc-schedule-anyway-when-listed", zone_nodes(("a1", "a"), ("b1", "b")),
         spread(replicas("web", "a1", 4), ZONE_SKEW_1, soft=True), (tsc(constraints=("ScheduleAnyway",)),),
         ["web-a1-0", "web-a1-1"]),
    Case("tsc-hostname-domains", [dataclasses.replace(n, labels={"kubernetes.io/hostname": n.name}) for n in THREE],
         spread(replicas("web", "n1", 4) + replicas("web", "n2", 1),
                SpreadConstraint(max_skew=1, topology_key="kubernetes.io/hostname", selector=WEB)),
         (tsc(),),
         # [n3:0, n2:1, n1:4], avg 5/3: n1 vs n3: skew 4, min(ceil(2.33)=3, ceil(1.67)=2, ceil(1.5)=2) = 2
         ["web-n1-0", "web-n1-1"]),
    Case("tsc-node-affinity-policy-honor-excludes-domains",
         [dataclasses.replace(n, labels={**n.labels, "pool": "web"}) for n in zone_nodes(("a1", "a"), ("b1", "b"))]
         + zone_nodes(("c1", "c")),
         [dataclasses.replace(p, node_selector={"pool": "web"}) for p in
          spread(replicas("web", "a1", 3) + replicas("web", "b1", 1), ZONE_SKEW_1)],
         # zone c is not a domain (no node there takes the pods): a 3, b 1, avg 2 -> one moves to b
         (tsc(),), ["web-a1-0"]),
    Case("tsc-node-affinity-policy-ignore-counts-the-empty-domain",
         [dataclasses.replace(n, labels={**n.labels, "pool": "web"}) for n in zone_nodes(("a1", "a"), ("b1", "b"))]
         + zone_nodes(("c1", "c")),
         [dataclasses.replace(p, node_selector={"pool": "web"}) for p in
          spread(replicas("web", "a1", 2) + replicas("web", "b1", 2),
                 dataclasses.replace(ZONE_SKEW_1, honor_node_affinity=False))],
         # a 2, b 2, c 0 (skew 2): descheduler's arithmetic moves one out of b; no node of c takes it
         (tsc(),), [], protected={"web-b1-0": "no destination fits"},
         differs="tsc-place: descheduler (topologyBalanceNodeFit: false) evicts web-b1-0, which can only come back"),
    Case("tsc-node-taints-policy-honor-excludes-tainted-domain",
         [*zone_nodes(("a1", "a"), ("b1", "b")),
          dataclasses.replace(node("c1", taints=(Taint("gpu", "", Effect.NO_SCHEDULE),)), labels={ZONE: "c"})],
         spread(replicas("web", "a1", 2) + replicas("web", "b1", 2),
                dataclasses.replace(ZONE_SKEW_1, honor_node_taints=True)),
         (tsc(),), []),
    Case("tsc-match-label-keys-separate-revisions", zone_nodes(("a1", "a"), ("b1", "b")),
         # matchLabelKeys [pod-template-hash] folded into the selector: each revision is balanced on its own
         [dataclasses.replace(p, labels={"app": "web", "pod-template-hash": "v1"}, hard_spread=(dataclasses.replace(
             ZONE_SKEW_1, selector=LabelSelector((("app", "web"), ("pod-template-hash", "v1")))),))
          for p in replicas("web", "a1", 2)]
         + [dataclasses.replace(p, labels={"app": "web", "pod-template-hash": "v2"}, hard_spread=(dataclasses.replace(
             ZONE_SKEW_1, selector=LabelSelector((("app", "web"), ("pod-template-hash", "v2")))),))
            for p in replicas("web", "b1", 2)],
         (tsc(),), []),
    Case("tsc-no-room-in-the-emptier-domain", [*zone_nodes(("a1", "a")),
                                               dataclasses.replace(node("b1", cpu=50), labels={ZONE: "b"})],
         spread(replicas("web", "a1", 4), ZONE_SKEW_1), (tsc(),), [],
         protected={"web-a1-0": "no destination fits"},
         differs="tsc-place: descheduler with topologyBalanceNodeFit: false evicts one, which comes back to zone a"),
    Case("tsc-lowest-priority-without-node-selection-first", zone_nodes(("a1", "a"), ("b1", "b")),
         spread([dataclasses.replace(replicas("web", "a1", 1, start=0)[0], priority=5),
                 dataclasses.replace(replicas("web", "a1", 1, start=1)[0], priority=20),
                 dataclasses.replace(replicas("web", "a1", 1, start=2)[0], priority=1, node_selector={ZONE: "a"})],
                ZONE_SKEW_1, soft=True),
         (tsc(constraints=("ScheduleAnyway",)),),
         # a 3, b 0: one moves (min(ceil(1.5), ceil(1.5), ceil(1)) = 1): the pinned one last, then priority 5
         ["web-a1-0"],
         differs="tsc-order: descheduler evicts web-a1-1, the highest priority among those without node selection"),
    Case("tsc-every-matching-pod-counts",
         zone_nodes(("a1", "a"), ("b1", "b")),
         spread([dataclasses.replace(p, labels={"app": "web", "tier": "x"}) for p in replicas("web", "a1", 2)]
                + replicas("web", "a1", 2, start=2)
                + [dataclasses.replace(p, labels={"app": "web", "tier": "x"}) for p in replicas("web", "b1", 1)],
                ZONE_SKEW_1),
         (tsc(scope=PodScope(label_selector=LabelSelector((("tier", "x"),)))),),
         # the scheduler sees a 4, b 1; one in-scope pod of a moves
         ["web-a1-0"],
         differs="tsc-count: descheduler counts only the pods in scope (a 2, b 1: balanced) and evicts nothing"),
    Case("tsc-label-selector-scope", zone_nodes(("a1", "a"), ("b1", "b")),
         spread(replicas("web", "a1", 4), ZONE_SKEW_1),
         (tsc(scope=PodScope(label_selector=LabelSelector((("app", "db"),)))),), []),
    Case("tsc-pdb", zone_nodes(("a1", "a"), ("b1", "b"), ("c1", "c")),
         spread(replicas("web", "a1", 3) + replicas("web", "b1", 3), ZONE_SKEW_1), (tsc(),), ["web-b1-0"],
         pdbs=[PdbRecord("default", "web", WEB, disruptions_allowed=1)],
         deferred={"web-a1-0": "PodDisruptionBudget"}),
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
    policy = Policy(evictor=EvictorArgs(), strategies=case.strategies, limits=Limits(owner_cooldown=dt.timedelta(0)),
                    safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None))
    plan = make_plan(snapshot, policy, PlannerMemory())
    assert [e.pod.name for e in plan.evictions] == case.evicted, PlanAnswer.of(plan).to_json()
    protected = {p.pod.name: p.why for p in plan.protected}
    deferred = {p.pod.name: p.why for p in plan.deferred}
    for name, why in case.protected.items():
        assert why in protected.get(name, ""), (name, protected)
    for name, why in case.deferred.items():
        assert why in deferred.get(name, ""), (name, deferred)


def test_descheduler_domain_arithmetic() -> None:
    """balanceDomains' steps for descheduler's own test shapes (topologyspreadconstraint_test.go)."""
    assert list(descheduler_moves([("c", 0), ("a", 3), ("b", 3)], 2, 1)) == [("b", "c", 1), ("a", "c", 1)]
    assert list(descheduler_moves([("b", 1), ("a", 5)], 3, 2)) == [("a", "b", 1)]
    assert list(descheduler_moves([("b", 0), ("a", 2)], 1, 1)) == [("a", "b", 1)]
    assert list(descheduler_moves([("b", 1), ("a", 2)], 1.5, 1)) == []
    # "2 domains, sizes [4,0], maxSkew=1, move 2 pods"
    assert list(descheduler_moves([("b", 0), ("a", 4)], 2, 1)) == [("a", "b", 2)]
    # "3 domains, sizes [0, 1, 100], maxSkew=1, move 66 pods to get [34, 33, 34]"
    steps = list(descheduler_moves([("c", 0), ("b", 1), ("a", 100)], 101 / 3, 1))
    assert sum(n for _, _, n in steps) == 66


def test_every_difference_a_row_names_is_documented() -> None:
    doc = (ROOT / "docs" / "balance-strategies.md").read_text() + (ROOT / "docs" / "utilization.md").read_text()
    for case in CASES:
        if case.differs:
            ident = case.differs.split(":")[0]
            assert f"`{ident}`" in doc, f"{case.id}: difference {ident!r} is not documented"


def test_the_balance_policy_reads_descheduler_argument_names() -> None:
    policy = load_policy(ROOT / "tests" / "testdata" / "policies" / "good" / "balance-strategies.yaml", catalog=CATALOG)
    assert policy.strategies == (
        dup(exclude_owner_kinds=("Job",), scope=PodScope(Namespaces(exclude=("kube-system",)))),
        tsc(constraints=("DoNotSchedule", "ScheduleAnyway"), topology_balance_node_fit=True,
            scope=PodScope(Namespaces(include=("web", "shop")), LabelSelector((("tier", "frontend"),)))),
    )


def test_topology_spread_defaults_are_descheduler_s() -> None:
    args = RemovePodsViolatingTopologySpreadConstraintArgs()
    assert args.constraints == ("DoNotSchedule",) and args.topology_balance_node_fit


def test_the_total_limit_ends_both_strategies() -> None:
    pods = replicas("dup", "n1", 3) + spread(replicas("web", "n1", 4), SpreadConstraint(
        max_skew=1, topology_key="kubernetes.io/hostname", selector=WEB))
    nodes = [dataclasses.replace(n, labels={"kubernetes.io/hostname": n.name}) for n in THREE]
    by_node = {"n1": pods}
    by_owner: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_owner.setdefault(p.owners[0].uid, []).append(p)
    snapshot = Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner=by_owner)
    policy = Policy(evictor=EvictorArgs(), strategies=(dup(), tsc()),
                    limits=Limits(owner_cooldown=dt.timedelta(0), max_pods_to_evict_total=1),
                    safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None))
    plan = make_plan(snapshot, policy, PlannerMemory())
    assert [(e.strategy, e.pod.name) for e in plan.evictions] == [("RemoveDuplicates", "dup-n1-0")]


def test_the_spread_strategy_counts_the_moves_planned_before_it() -> None:
    """RemoveDuplicates (first) already evens web out 2/2/2; the spread strategy sees that and tries nothing."""
    nodes = zone_nodes(("a1", "a"), ("b1", "b"), ("c1", "c"))
    pods = spread(replicas("web", "a1", 3) + replicas("web", "b1", 3), ZONE_SKEW_1)
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    snapshot = Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node,
                        pods_by_owner={"uid-web": pods})
    policy = Policy(evictor=EvictorArgs(), strategies=(dup(), tsc()), limits=Limits(owner_cooldown=dt.timedelta(0)),
                    safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None))
    plan = make_plan(snapshot, policy, PlannerMemory())
    assert [(e.strategy, e.pod.name) for e in plan.evictions] == [("RemoveDuplicates", "web-a1-0"),
                                                                   ("RemoveDuplicates", "web-b1-0")]
    assert plan.protected == [] and plan.deferred == []


def test_plan_json_on_a_snapshot_shows_both_balance_strategies_with_their_reasons(
        capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = ROOT / "tests" / "testdata" / "snapshots" / "balance-strategies.json"
    code = main(["plan", "--policy", str(ROOT / "tests" / "testdata" / "policies" / "good" / "balance-strategies.yaml"),
                 "--snapshot", str(snapshot), "--now", "2026-11-24T12:00:00Z", "--json"])
    assert code == 0
    got = [(e["strategy"], e["name"], e["reason"]) for e in json.loads(capsys.readouterr().out)["evictions"]]
    assert got == [
        ("RemoveDuplicates", "cart-0", "2 replicas of ReplicaSet/cart-7d9 on a-1, more than 1 (per node over the 4 "
                                       "nodes that can take them); to c-1 or alike"),
        ("RemovePodsViolatingTopologySpreadConstraint", "front-0", "DoNotSchedule spread on "
         "topology.kubernetes.io/zone: zone-a holds 2 matching pods, zone-b 0 (maxSkew 1); to c-1 or alike"),
    ]


def test_pods_without_a_uid_in_a_snapshot_keep_identities_of_their_own() -> None:
    # A hand-written snapshot without uids: moving cart-0 must not count as moving every other pod.
    doc = json.loads((ROOT / "tests" / "testdata" / "snapshots" / "balance-strategies.json").read_text())
    for item in doc["items"]:
        item["metadata"].pop("uid", None)
    plan = make_plan(snapshot_from_list(doc, dt.datetime(2026, 11, 24, 12, tzinfo=dt.UTC)),
                      load_policy(ROOT / "tests" / "testdata" / "policies" / "good" / "balance-strategies.yaml",
                                  catalog=CATALOG),
                      PlannerMemory())
    assert [(e.strategy, e.pod.name) for e in plan.evictions] == [
        ("RemoveDuplicates", "cart-0"), ("RemovePodsViolatingTopologySpreadConstraint", "front-0")]
