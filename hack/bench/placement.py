"""Benchmark: the placement engine (MakeRoomForPendingPods) over the synthetic 5,000-node / 150,000-pod cluster of
plan_cycle.py, with 100 pods pending for fragmentation.

The pending pods belong to a node pool (the busier untainted nodes) and ask for more than any node of it has free in
cpu and memory together (one node's free memory with 300m more cpu than it has free), while the nodes' free room adds
up to far more. Times
`make_plan` with only MakeRoomForPendingPods (its `timeBudget` bounds the search) and prints the median cycle,
the pods made room for and the evictions, the same for warm cycles (what the cycle works out per node kept from the
last, as the controller's cycles after its first), and the peak RSS (targets: <= 2 s with the budget, <= 1 GiB).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import random
import resource
import time

from hack.bench.lib.stats import summarize
from hack.bench.plan_cycle import NOW, build  # the same generator, so the two benchmarks share their cluster
from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import NodeSelectorTerm, OwnerRef, PodRecord, SelectorRequirement
from remediator.policy.loader import parse_policy
from remediator.scheduling.nodefit import pod_request_summary
from remediator.state.derived import Derived
from remediator.state.heap import HeapFreezer
from remediator.state.snapshot import Snapshot
from remediator.strategies import CATALOG
from remediator.strategies.make_room_for_pending_pods.report import Fragmentation

POLICY = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: MakeRoomForPendingPods
  args: {maxEvictionsPerPod: 2, chainDepth: 1, timeBudget: %(budget)s, maxPendingPods: 100}
limits: {maxNoOfPodsToEvictTotal: 500}
"""
MESSAGE = "0/5000 nodes are available: 2400 Insufficient cpu, 2600 Insufficient memory."


def pending_pods(snapshot: Snapshot, count: int, seed: int) -> list[PodRecord]:
    """Pods of a workload bound (required node affinity) to the busier untainted nodes, a node pool with no idle
    node: each asks for one node's free memory and 300m more cpu than that node has, which no node has free."""
    rng = random.Random(seed)
    free: dict[str, tuple[int, int]] = {}
    for name, node in snapshot.nodes.items():
        if node.taints or not node.ready or node.unschedulable:
            continue
        used = pod_request_summary(snapshot.pods(name))
        if used.get("cpu", 0) >= node.allocatable["cpu"] // 4:
            free[name] = (node.allocatable["cpu"] - used.get("cpu", 0), node.allocatable["memory"] - used["memory"])
    pool = (NodeSelectorTerm(match_fields=(SelectorRequirement("metadata.name", "In", tuple(sorted(free))),)),)
    rooms = list(free.values())
    out = []
    for i in range(count):
        while True:
            cpu, memory = rng.choice(rooms)
            cpu, memory = cpu + 300, int(memory * 0.9)
            if memory > 1 << 30 and not any(c >= cpu and m >= memory for c, m in rooms):
                break
        owner = OwnerRef("ReplicaSet", f"pending-{i % 10}", f"uid-pending-{i % 10}", controller=True)
        out.append(PodRecord(namespace="bench", name=f"pending-{i}", uid=f"uid-pending-{i}", phase="Pending",
                             priority=1000, owners=(owner,), requests={"cpu": cpu, "memory": memory},
                             qos="Burstable", required_node_affinity=pool,
                             created=NOW - dt.timedelta(seconds=60 - i % 60), unschedulable=MESSAGE))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--pending", type=int, default=100)
    ap.add_argument("--budget", default="1s", help="the strategy's timeBudget")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    t0 = time.perf_counter()
    snapshot = build(args.nodes, args.pods, args.seed)
    snapshot = dataclasses.replace(snapshot, pending=pending_pods(snapshot, args.pending, args.seed))
    pods = sum(len(p) for p in snapshot.pods_by_node.values())
    print(f"cluster: {len(snapshot.nodes)} nodes, {pods} pods, {len(snapshot.pending)} pending "
          f"(built in {time.perf_counter() - t0:.1f} s, not timed)")
    heap = HeapFreezer()
    heap.maybe_freeze()  # as the remediator does once its caches are synced; its cycles run in heap.cycle()
    policy = parse_policy(POLICY % {"budget": args.budget}, source="bench-policy.yaml", catalog=CATALOG)
    times, plan = [], None
    for _ in range(args.runs):
        # A fresh Snapshot each run, as the controller takes one per cycle: what it builds lazily (Snapshot.notable,
        # Snapshot.live) is paid by every run, not only the first, and nothing is kept from an earlier run's pod lists
        # (state/derived.py): a cold cycle.
        fresh = dataclasses.replace(snapshot, derived=Derived())
        t = time.perf_counter()
        with heap.cycle():
            plan = make_plan(fresh, policy, PlannerMemory())
        times.append(time.perf_counter() - t)
    print("runs: " + ", ".join(f"{t:.3f}" for t in times))
    assert plan is not None
    f = plan.reports["MakeRoomForPendingPods"]
    assert isinstance(f, Fragmentation)
    print(f"plan: {len(f.pending)} pending for fragmentation, room made for {len(f.made_room)} "
          f"with {len(plan.evictions)} evictions; stranded cpu {f.stranded.get('cpu', 0) / 1000:.0f} cores, "
          f"memory {f.stranded.get('memory', 0) / 2**30:.0f} GiB")
    cycle = summarize(times)
    print(f"planning cycle: median {cycle.median:.3f} s over {args.runs} runs "
          f"(min {cycle.minimum:.3f}, max {cycle.maximum:.3f}); timeBudget {args.budget}; target <= 2 s")
    # The controller's later cycles: a new snapshot each, what was worked out per node kept from the one before
    # (state/derived.py); a new planner memory each, so that every pending pod is searched for again.
    derived, warm = Derived(), []
    for i in range(args.runs + 1):
        t = time.perf_counter()
        with heap.cycle():
            plan = make_plan(dataclasses.replace(snapshot, derived=derived), policy, PlannerMemory())
        if i:  # the first fills what the others keep
            warm.append(time.perf_counter() - t)
    f = plan.reports["MakeRoomForPendingPods"]
    assert isinstance(f, Fragmentation)
    kept = summarize(warm)
    print(f"warm cycles (values kept per node, as the controller's next cycles): median {kept.median:.3f} s over "
          f"{args.runs} runs (min {kept.minimum:.3f}, max {kept.maximum:.3f}); room made for {len(f.made_room)} with "
          f"{len(plan.evictions)} evictions")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"peak RSS: {rss / 1024:.0f} MiB; target <= 1024 MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
