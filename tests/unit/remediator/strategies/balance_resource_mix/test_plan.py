"""BalanceResourceMix on a generated mixed cluster: the deviation falls, within the moves, utilization and PDBs."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random

from remediator.control.planner import make_plan
from remediator.model.plan import Plan
from remediator.model.records import Condition, LabelSelector, NodeRecord, OwnerRef, PdbRecord, PodRecord
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.snapshot import Snapshot
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs
from remediator.strategies.balance_resource_mix.plan import deviation, total_deviation
from remediator.strategies.balance_resource_mix.report import ResourceMix

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
GiB = 1 << 30


def resource_mix(plan: Plan) -> ResourceMix:
    """The strategy's report in the plan (every plan with the strategy configured has one)."""
    report = plan.reports["BalanceResourceMix"]
    assert isinstance(report, ResourceMix)
    return report


def mixed_cluster(seed: int) -> Snapshot:
    """12 nodes of 4 cores / 16 GiB: half filled by CPU-heavy pods, half by memory-heavy ones."""
    rng = random.Random(seed)
    nodes = {f"n{i}": NodeRecord(name=f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"},
                                 conditions=(Condition("Ready", "True", NOW),),
                                 allocatable={"cpu": 4000, "memory": 16 * GiB, "pods": 110}) for i in range(12)}
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    created = NOW - dt.timedelta(hours=1)
    for i, name in enumerate(nodes):
        cpu_heavy = i % 2 == 0
        for j in range(rng.randint(4, 6)):
            cpu, mem = (rng.choice((400, 500, 600)), rng.choice((256, 512)) << 20) if cpu_heavy else \
                (rng.choice((100, 200)), rng.choice((2, 3)) * GiB)
            app = f"{'cpu' if cpu_heavy else 'mem'}-{i}-{j}"
            owner = OwnerRef("ReplicaSet", app, f"uid-{app}", controller=True)
            pod = PodRecord(namespace="default", name=f"{app}-x", uid=f"uid-{app}-x", node_name=name, phase="Running",
                            owners=(owner,), labels={"app": app}, requests={"cpu": cpu, "memory": mem},
                            qos="Burstable", created=created, start_time=created)
            by_node.setdefault(name, []).append(pod)
            by_owner.setdefault(owner.uid, []).append(pod)
    return Snapshot(now=NOW, nodes=nodes, pods_by_node=by_node, pods_by_owner=by_owner)


def policy(**args: object) -> Policy:
    """The engine's moves made as planned (approval automatic): what each cycle plans is what these tests read."""
    args = {"approval": "automatic", **args}
    return Policy(strategies=(StrategyConfig("BalanceResourceMix", BalanceResourceMixArgs(**args)),),  # type: ignore[arg-type]
                  limits=Limits(owner_cooldown=dt.timedelta(0)))


def test_with_approval_required_the_moves_are_one_proposal_with_the_plans_gain_and_nothing_is_evicted() -> None:
    automatic = make_plan(mixed_cluster(18), policy(max_moves_per_cycle=3), PlannerMemory())
    plan = make_plan(mixed_cluster(18), policy(max_moves_per_cycle=3, approval="required"), PlannerMemory())
    assert plan.evictions == [] and len(plan.proposals) == 1
    (proposal,) = plan.proposals
    assert proposal.engine == "BalanceResourceMix" and list(proposal.moves) == automatic.evictions
    assert all(m.destination not in (None, m.pod.node_name) for m in proposal.moves)
    mix = resource_mix(plan)
    assert proposal.gain is not None and (proposal.gain.before, proposal.gain.after) == (mix.before, mix.after)


def test_while_a_migration_of_the_engine_is_open_its_moves_are_deferred_and_none_is_proposed() -> None:
    memory = PlannerMemory(open_migrations={"BalanceResourceMix": "migration-0011aabb"})
    plan = make_plan(mixed_cluster(18), policy(max_moves_per_cycle=3, approval="required"), memory)
    assert plan.evictions == [] and plan.proposals == [] and len(plan.deferred) == 3
    assert all("migration migration-0011aabb of BalanceResourceMix is open" in d.why for d in plan.deferred)


def test_the_deviation_falls_on_a_mixed_cluster() -> None:
    snap = mixed_cluster(18)
    plan = make_plan(snap, policy(max_moves_per_cycle=8), PlannerMemory())
    mix = resource_mix(plan)
    print(f"\nresource mix on 12 mixed nodes: total deviation {mix.before:.1f} -> {mix.after:.1f} points "
          f"({len(plan.evictions)} moves)")
    assert 0 < len(plan.evictions) <= 8
    assert mix.after < mix.before
    assert all(e.strategy == "BalanceResourceMix" for e in plan.evictions)
    # the reported "after" is what the moves give, recomputed independently from the plan's destinations
    usage = {n: {"cpu": sum(p.requests["cpu"] for p in snap.pods(n)),
                 "memory": sum(p.requests["memory"] for p in snap.pods(n))} for n in snap.nodes}
    _, before = deviation(snap, usage, sorted(snap.nodes))
    assert abs(total_deviation(before) - mix.before) < 1e-6
    for e in plan.evictions:
        dest = e.reason.split("; to ")[1].split(" ")[0]
        for r in ("cpu", "memory"):
            usage[e.pod.node_name][r] -= e.pod.requests[r]
            usage[dest][r] += e.pod.requests[r]
        assert usage[dest]["cpu"] <= 0.8 * 4000 and usage[dest]["memory"] <= 0.8 * 16 * GiB
    _, after = deviation(snap, usage, sorted(snap.nodes))
    assert abs(total_deviation(after) - mix.after) < 1e-6


def test_a_pdb_without_room_and_the_move_limit_hold() -> None:
    snap = mixed_cluster(18)
    snap.pdbs = [PdbRecord("default", "all", LabelSelector(), disruptions_allowed=0)]
    plan = make_plan(snap, policy(), PlannerMemory())
    assert plan.evictions == []
    assert resource_mix(plan).after == resource_mix(plan).before
    assert len(make_plan(mixed_cluster(18), policy(max_moves_per_cycle=1), PlannerMemory()).evictions) == 1


def test_a_balanced_cluster_is_left_alone() -> None:
    snap = mixed_cluster(18)
    for n in snap.nodes:  # every node 10 % cpu and 10 % memory: the cluster's own mix everywhere
        first = snap.pods(n)[0]
        snap.pods_by_node[n] = [dataclasses.replace(first, requests={"cpu": 400, "memory": 16 * GiB // 10})]
    plan = make_plan(snap, policy(), PlannerMemory())
    assert plan.evictions == [] and resource_mix(plan).before < 1e-6
