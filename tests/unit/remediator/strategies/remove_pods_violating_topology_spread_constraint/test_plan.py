"""remove_pods_violating_topology_spread_constraint/plan.py: descheduler's balanceDomains arithmetic
(`descheduler_moves`), and one planning cycle through the real gate on declared constraints: what an eviction says,
which constraints are balanced (`constraints`), which pods move first, which nodes count as domains, the pods in
scope, and what a constraint found within maxSkew keeps for the next cycle. test_defaults.py covers the scheduler's
default constraints, test_balance_strategies.py the scenario table."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.plan import Plan
from remediator.model.records import LabelSelector, NodeRecord, PodRecord, SpreadConstraint, Taint
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.derived import Derived
from remediator.strategies.pod_life_time.args import PodLifeTimeArgs
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import (
    RemovePodsViolatingTopologySpreadConstraintArgs,
)
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint
from remediator.strategies.remove_pods_violating_topology_spread_constraint.plan import (
    NAME,
    _constraints,
    descheduler_moves,
)
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
WEB = LabelSelector(match_labels=(("app", "web"),))
SKEW_1 = SpreadConstraint(max_skew=1, topology_key=ZONE, selector=WEB)
ZONES = [node(f"n-{z}", labels={ZONE: z}) for z in ("a", "b", "c")]


def web(i: int, zone: str, *, spread: SpreadConstraint = SKEW_1, soft: bool = False, **kw: object) -> PodRecord:
    declared = {"soft_spread": (spread,)} if soft else {"hard_spread": (spread,)}
    return pod(f"web-{i}", f"n-{zone}", owner_name="web", labels={"app": "web"}, **declared, **kw)  # type: ignore[arg-type]


def run(pods: list[PodRecord], nodes: list[NodeRecord] = ZONES, **kw: object) -> Plan:
    return cycle(snapshot(nodes, pods), NAME, RemovePodsViolatingTopologySpreadConstraintArgs(**kw))  # type: ignore[arg-type]


def test_the_domain_arithmetic_moves_from_the_fullest_to_each_emptier_domain_in_turn() -> None:
    assert list(descheduler_moves([("a", 0), ("b", 0), ("c", 6)], 2, 1)) == [("c", "a", 2), ("c", "b", 2)]


def test_the_domain_arithmetic_moves_nothing_within_max_skew_or_with_one_domain() -> None:
    assert list(descheduler_moves([("a", 2), ("b", 3), ("c", 3)], 8 / 3, 1)) == []
    assert list(descheduler_moves([("a", 1), ("b", 5)], 3, 4)) == []
    assert list(descheduler_moves([("a", 9)], 9, 1)) == []


def test_an_overfilled_zone_gives_a_pod_to_the_emptiest_and_the_eviction_says_the_counts() -> None:
    plan = run([web(0, "a"), web(1, "b"), web(2, "c"), web(3, "c"), web(4, "c")])
    assert [(e.pod.node_name, e.destination) for e in plan.evictions] == [("n-c", "n-a")]
    assert plan.evictions[0].reason.startswith(
        "DoNotSchedule spread on topology.kubernetes.io/zone: c holds 3 matching pods, a 1 (maxSkew 1)")


def test_schedule_anyway_constraints_are_balanced_only_when_listed() -> None:
    pods = [web(i, z, soft=True) for i, z in enumerate("abccc")]
    assert evicted(run(pods)) == []
    plan = run(pods, constraints=("ScheduleAnyway",))
    assert len(plan.evictions) == 1 and plan.evictions[0].reason.startswith("ScheduleAnyway spread")


def test_pods_without_node_selection_then_the_lowest_priority_move_first() -> None:
    pods = [web(0, "a"), web(1, "c", priority=5), web(2, "c", priority=1), web(3, "c", node_selector={ZONE: "c"}),
            web(4, "c", priority=0)]
    assert evicted(run(pods)) == ["web-4", "web-2"]


def test_nodes_without_the_topology_key_or_not_ready_are_no_domain() -> None:
    """Only zone c is a domain: a single domain is always balanced."""
    nodes = [node("n-a"), node("n-b", ready=False, labels={ZONE: "b"}), node("n-c", labels={ZONE: "c"})]
    assert evicted(run([web(i, "c") for i in range(4)], nodes)) == []


def test_a_node_the_declaring_pod_cannot_go_to_is_no_domain() -> None:
    """nodeAffinityPolicy Honor (the default): zone a's node does not match the pods' selector, so b and c, each
    within maxSkew of the other, are the only domains."""
    nodes = [node("n-a", labels={ZONE: "a"}), node("n-b", labels={ZONE: "b", "pool": "x"}),
             node("n-c", labels={ZONE: "c", "pool": "x"})]
    pods = [web(i, z, node_selector={"pool": "x"}) for i, z in enumerate("bcc")]
    assert evicted(run(pods, nodes)) == []


def test_a_tainted_node_counts_as_a_domain_unless_the_constraint_honors_taints() -> None:
    """nodeTaintsPolicy Ignore (the default): zone a's tainted node is a domain holding 0, which no pod can reach,
    and the scheduler's spread filter refuses b (it would hold 2 to a's 0); Honor: a is no domain, c gives b one."""
    nodes = [dataclasses.replace(ZONES[0], taints=(Taint("dedicated", "x"),)), *ZONES[1:]]
    ignored = run([web(i, z) for i, z in enumerate("bccc")], nodes)
    assert evicted(ignored) == []
    assert {p.pod.name: p.why for p in ignored.protected}["web-1"].endswith(
        "1 current node, 1 topology spread, 1 untolerated taint dedicated")
    honor = dataclasses.replace(SKEW_1, honor_node_taints=True)
    honored = run([web(i, z, spread=honor) for i, z in enumerate("bccc")], nodes)
    assert [(e.pod.name, e.destination) for e in honored.evictions] == [("web-1", "n-b")]


def test_a_constraint_without_a_selector_or_declared_out_of_scope_is_not_balanced() -> None:
    none = dataclasses.replace(SKEW_1, selector=None)
    assert evicted(run([web(i, z, spread=none) for i, z in enumerate("accc")])) == []
    pods = [web(i, z, namespace="shop") for i, z in enumerate("accc")]
    assert evicted(run(pods, scope=PodScope(Namespaces(exclude=("shop",))))) == []
    assert evicted(run(pods)) != []


def test_a_constraint_kept_within_max_skew_is_worked_out_again_when_its_pods_or_the_nodes_change() -> None:
    # One Derived across cycles, as the controller's cache keeps it: the first finds web within maxSkew and keeps it.
    derived = Derived()
    args = RemovePodsViolatingTopologySpreadConstraintArgs()

    def again(nodes: list[NodeRecord], pods: list[PodRecord]) -> Plan:
        return cycle(dataclasses.replace(snapshot(nodes, pods), derived=derived), NAME, args)
    settled = [web(0, "a"), web(1, "b"), web(2, "c"), web(3, "c")]
    assert evicted(again(ZONES, settled)) == [] and evicted(again(ZONES, settled)) == []
    # The same pods, but a new zone with a node and no pod: d holds 0, c 2.
    zone_d = [*ZONES, node("n-d", labels={ZONE: "d"})]
    assert [(e.pod.node_name, e.destination) for e in again(zone_d, settled).evictions] == [("n-c", "n-d")]
    # The same nodes, one more pod in c.
    assert len(again(ZONES, settled).evictions) == 0
    assert [e.destination for e in again(ZONES, [*settled, web(4, "c")]).evictions] == ["n-a"]


def test_a_kept_constraint_one_of_whose_pods_an_earlier_strategy_evicts_this_cycle_is_worked_out_again() -> None:
    derived = Derived()
    spread = StrategyConfig(NAME, RemovePodsViolatingTopologySpreadConstraintArgs())
    old = web(0, "a", age=dt.timedelta(days=30))
    settled = [old, web(1, "b"), web(2, "c"), web(3, "c")]
    limits = Limits(owner_cooldown=dt.timedelta(0))
    plan = make_plan(dataclasses.replace(snapshot(ZONES, settled), derived=derived),
                     Policy(strategies=(spread,), limits=limits), PlannerMemory())
    assert evicted(plan) == []  # kept: within maxSkew
    # PodLifeTime runs first and evicts a's only pod (nodeFit off: it may go back to a): a holds none, c two, and c
    # gives one to a.
    lifetime = StrategyConfig("PodLifeTime", PodLifeTimeArgs(max_pod_life_time_seconds=7 * 86400))
    plan = make_plan(dataclasses.replace(snapshot(ZONES, settled), derived=derived),
                     Policy(evictor=EvictorArgs(node_fit=False), strategies=(lifetime, spread), limits=limits),
                     PlannerMemory())
    assert [(e.strategy, e.pod.node_name) for e in plan.evictions] == [("PodLifeTime", "n-a"), (NAME, "n-c")]


def test_a_kept_constraint_one_of_whose_pods_an_earlier_cycles_eviction_is_moving_is_worked_out_again() -> None:
    # Evictions under way (the snapshot still shows the pods where they were) count the pods where they go: both of
    # c's, sent to a by an earlier cycle, make the same pods hold other counts than the ones kept.
    derived, memory = Derived(), PlannerMemory()
    spread = Policy(strategies=(StrategyConfig(NAME, RemovePodsViolatingTopologySpreadConstraintArgs()),),
                    limits=Limits(owner_cooldown=dt.timedelta(0)))
    settled = [web(0, "a"), web(1, "b"), web(2, "c"), web(3, "c"), web(4, "a")]
    assert evicted(make_plan(dataclasses.replace(snapshot(ZONES, settled), derived=derived), spread, memory)) == []
    memory.record_eviction(settled[2], balance=True, now=snapshot(ZONES, settled).now, destination="n-a")
    memory.record_eviction(settled[3], balance=True, now=snapshot(ZONES, settled).now, destination="n-a")
    plan = make_plan(dataclasses.replace(snapshot(ZONES, settled), derived=derived), spread, memory)
    # a 4, b 1, c 0 once both land: a gives one to c and one to b
    assert [(e.pod.node_name, e.destination) for e in plan.evictions] == [("n-a", "n-c"), ("n-a", "n-b")]


def test_replicas_holding_the_same_constraint_objects_declare_one_constraint_and_other_node_selection_another() -> None:
    spreads, pool_x = (SKEW_1,), {"pool": "x"}
    replicas = [pod(f"web-{i}", "n-b", labels={"app": "web"}, hard_spread=spreads, node_selector=pool_x)
                for i in range(3)]  # one template's objects, shared as the cache shares them
    equal = pod("web-3", "n-c", labels={"app": "web"}, hard_spread=(SKEW_1,), node_selector={"pool": "x"})
    elsewhere = pod("web-4", "n-c", labels={"app": "web"}, hard_spread=spreads, node_selector={"pool": "y"})
    found = _constraints([*replicas, equal, elsewhere], RemovePodsViolatingTopologySpreadConstraintArgs(),
                         lambda identity, spread, when, declaring: Constraint(spread, when, declaring))
    assert [(c.declared_by.name, c.declared_by.node_selector) for c in found] == [
        ("web-0", {"pool": "x"}), ("web-4", {"pool": "y"})], "equal objects of another pod find the same one"
