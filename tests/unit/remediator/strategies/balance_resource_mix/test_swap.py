"""BalanceResourceMix's exchanges: when no single move fits, a CPU-heavy and a memory-heavy pod trade nodes, both
or neither, within the moves per cycle and the PDBs."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.control.planner import make_plan
from remediator.model.records import Condition, LabelSelector, NodeRecord, OwnerRef, PdbRecord, PodRecord
from remediator.planning.memory import PlannerMemory
from remediator.state.snapshot import Snapshot
from tests.unit.remediator.strategies.balance_resource_mix.test_plan import NOW, GiB, policy, resource_mix

# Two nodes of 4 cores / 16 GiB with room for 4 pods each, both full: A leans CPU (77.5 % cpu, 53 % memory), B
# memory (35 % cpu, 75 % memory). Moving A's CPU-heavy pod to B would take B to 81 % memory, B's memory-heavy pod to
# A would take A to 82.5 % cpu (maxUtilization 80), and neither node has a pod slot free: only an exchange helps.
PODS_A = (("a-cpu", 1000, 1 * GiB), *((f"a-fill-{i}", 700, 5 * GiB // 2) for i in range(3)))
PODS_B = (("b-mem", 200, 3 * GiB), *((f"b-fill-{i}", 400, 3 * GiB) for i in range(3)))


def two_nodes() -> Snapshot:
    nodes = {n: NodeRecord(name=n, labels={"kubernetes.io/hostname": n}, conditions=(Condition("Ready", "True", NOW),),
                           allocatable={"cpu": 4000, "memory": 16 * GiB, "pods": 4}) for n in ("A", "B")}
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    created = NOW - dt.timedelta(hours=1)
    for node, pods in (("A", PODS_A), ("B", PODS_B)):
        for name, cpu, memory in pods:
            owner = OwnerRef("ReplicaSet", name, f"uid-rs-{name}", controller=True)
            pod = PodRecord(namespace="default", name=name, uid=f"uid-{name}", node_name=node, phase="Running",
                            owners=(owner,), labels={"app": name, "tier": "web"},
                            requests={"cpu": cpu, "memory": memory}, qos="Burstable", created=created,
                            start_time=created)
            by_node.setdefault(node, []).append(pod)
            by_owner.setdefault(owner.uid, []).append(pod)
    return Snapshot(now=NOW, nodes=nodes, pods_by_node=by_node, pods_by_owner=by_owner)


def test_when_no_single_move_fits_a_cpu_heavy_and_a_memory_heavy_pod_trade_nodes() -> None:
    plan = make_plan(two_nodes(), policy(), PlannerMemory())
    moved = {e.pod.name: e.reason.split("; to ")[1].split(" ")[0] for e in plan.evictions}
    assert moved == {"a-cpu": "B", "b-mem": "A"}
    assert all("by an exchange" in e.reason for e in plan.evictions)
    mix = resource_mix(plan)
    print(f"\nexchange on two full nodes: total deviation {mix.before:.1f} -> {mix.after:.1f} points")
    assert mix.before == pytest.approx(64.375)
    assert mix.after == pytest.approx(0.625)


def test_an_exchange_takes_two_of_the_moves_per_cycle() -> None:
    plan = make_plan(two_nodes(), policy(max_moves_per_cycle=1), PlannerMemory())
    assert plan.evictions == []


def test_one_budget_over_both_pods_allowing_one_disruption_stops_the_exchange() -> None:
    snap = two_nodes()
    snap.pdbs = [PdbRecord("default", "web", LabelSelector(match_labels=(("tier", "web"),)), disruptions_allowed=1)]
    plan = make_plan(snap, policy(), PlannerMemory())
    assert plan.evictions == []  # one of two would go alone otherwise
    assert resource_mix(plan).after == resource_mix(plan).before


def test_a_pod_whose_budget_is_spent_stays_and_its_node_trades_another_both_or_neither() -> None:
    snap = two_nodes()
    snap.pdbs = [PdbRecord("default", "b-mem", LabelSelector(match_labels=(("app", "b-mem"),)), disruptions_allowed=0)]
    plan = make_plan(snap, policy(), PlannerMemory())
    evicted = {e.pod.key for e in plan.evictions}
    assert "default/b-mem" not in evicted
    assert evicted  # another memory-leaning pod of B trades places instead
    for e in plan.evictions:  # every exchange whole: its partner is evicted too
        partner = e.reason.split(" by an exchange with ")[1].split(";")[0]
        assert partner in evicted


def test_a_pdb_allowing_both_lets_the_exchange_go() -> None:
    snap = two_nodes()
    snap.pdbs = [PdbRecord("default", "budget", LabelSelector(match_labels=(("tier", "web"),)),
                           disruptions_allowed=2)]
    assert {e.pod.name for e in make_plan(snap, policy(), PlannerMemory()).evictions} == {"a-cpu", "b-mem"}
