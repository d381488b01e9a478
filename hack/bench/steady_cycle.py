"""Benchmark: the remediator's steady planning cycle, as the controller runs it, at 5,000 to 65,000 nodes.

The cluster is bench-plan's synthetic one (hack/bench/plan_cycle.py: 30 pods a node, all ten descheduler strategies,
`maxNoOfPodsToEvictTotal: 500`), loaded into the remediator's own cache (remediator/state/caches.py) as its list of
pods would be; then each cycle is what the controller does every time it wakes: `ClusterCache.snapshot()` and
`make_plan` with the planner memory kept from the last cycle, in `HeapFreezer.cycle()` as the controller runs them
(what the cycle keeps is frozen with the caches: remediator/state/heap.py). For each size:
- the first cycle (cold): nothing worked out yet, every pod looked at;
- settling (not timed): up to `--settle` cycles without a total limit, each plan carried out (pods replaced where the
  plan counted on, taints written), the steady state the remediator keeps the cluster in;
- steady, no changes: the cluster as it was (what a quiet cluster costs between watch events);
- steady, with changes: before each cycle `--changed` of the pods are replaced by a new version of themselves (a
  restart counted, as a watch MODIFIED event brings it), spread over the nodes at random: their nodes and owners
  are worked out again, the others kept (remediator/state/derived.py); the CPU those watch events took in the cache
  is printed beside the cycle's (with the garbage collections they triggered: the controller's whole cost per cycle
  is the two together);
- steady, and nodes reported: the same, and before each cycle `--reported` of the nodes (a 30th: kubelet's status
  report every 5 min, cycles 10 s apart) report their status again, a new record with newer heartbeats, as in any
  real cluster: what placement reads of a node (labels, taints, cordon) stays as it was.
Prints each steady case's median wall and CPU time over `--runs` cycles, the plan's size, and the peak RSS. The default
sizes are 5,000 and 20,000 nodes. `--nodes 65000` (1,950,000 pods) builds in about 4 min, but its settling did not end
in 25 min (each cycle without a limit plans tens of thousands of moves, each a node-fit search over 65,000 nodes):
`--settle 0` times its steady cycles unsettled, the deschedule strategies using the limit up every cycle.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import logging
import random
import resource
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import cast

from hack.bench.lib.stats import summarize
from hack.bench.plan_cycle import NOW, POLICY, build
from nodemedic_common.kube_client import Kube
from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.plan import Plan
from remediator.model.records import NO_STATUSES
from remediator.policy.loader import parse_policy
from remediator.policy.model import Policy
from remediator.state.caches import ClusterCache
from remediator.state.heap import HeapFreezer
from remediator.strategies import CATALOG

CYCLE_STEP = dt.timedelta(seconds=10)  # between two steady cycles
SETTLE_STEP = dt.timedelta(minutes=10)  # between two settling cycles
# kubelet reports a node's status every nodeStatusReportFrequency (5 min by default) even when nothing changed: a
# 30th of the nodes between two cycles 10 s apart
REPORTED = CYCLE_STEP / dt.timedelta(minutes=5)


def load(nodes: int, pods: int, seed: int) -> ClusterCache:
    """bench-plan's cluster in a ClusterCache, through its own list and watch callbacks (no API server: the bench
    plays the informers)."""
    snapshot = build(nodes, pods, seed)
    cache = ClusterCache(cast(Kube, None), log=_quiet(), clock=lambda: NOW)
    cache.nodes.update(snapshot.nodes)
    cache._reset_pods([(p, ()) for ps in snapshot.pods_by_node.values() for p in ps])  # the LIST
    for b in snapshot.pdbs:
        cache.pdbs[f"{b.namespace}/{b.name}"] = b
    return cache


def _quiet() -> logging.Logger:
    log = logging.getLogger("bench.steady")
    log.disabled = True
    return log


def change(cache: ClusterCache, keys: list[str], rng: random.Random, count: int) -> None:
    """Replace `count` of the pods `keys` names by a new version of themselves (one more restart), as watch MODIFIED
    events would."""
    for key in rng.sample(keys, count):
        old = cache.pods[key]
        new = dataclasses.replace(old, containers=dataclasses.replace(old.containers,
                                                                      restarts=old.containers.restarts + 1))
        cache._put_pod("MODIFIED", new, ())  # a watch event


def report(cache: ClusterCache, names: list[str], rng: random.Random, count: int, clock: Clock) -> None:
    """`count` of the nodes `names` names report their status again, as kubelets do every few minutes (a watch
    MODIFIED event): a new record whose conditions carry a newer heartbeat, all else as it was."""
    for name in rng.sample(names, count):
        old = cache.nodes[name]
        conditions = tuple(dataclasses.replace(c, heartbeat=clock.now) for c in old.conditions)
        cache.nodes[name] = dataclasses.replace(old, conditions=conditions,
                                                resource_version=f"{old.resource_version}+")


def change_and_report(cache: ClusterCache, rng: random.Random, pods: int, nodes: int, clock: Clock) -> None:
    change(cache, sorted(cache.pods), rng, pods)
    report(cache, sorted(cache.nodes), rng, nodes, clock)


class Clock:
    """The cycles' time: each a step after the last."""

    def __init__(self) -> None:
        self.now = NOW

    def step(self, by: dt.timedelta) -> dt.datetime:
        self.now += by
        return self.now


def carry_out(cache: ClusterCache, plan: Plan, now: dt.datetime, serial: itertools.count[int]) -> None:
    """What the plan asks, done as the cluster would do it: each evicted pod gone and its replacement running (restarts
    reset) on the node the plan counted on (none: where it was), each taint added or removed."""
    for e in plan.evictions:
        cache._put_pod("DELETED", e.pod, ())  # a watch event
        if not e.pod.controller:
            continue
        n = next(serial)
        cache._put_pod("ADDED", dataclasses.replace(
            e.pod, name=f"{e.pod.name}-r{n}", uid=f"{e.pod.uid}-r{n}", node_name=e.destination or e.pod.node_name,
            phase="Running", reason="", containers=NO_STATUSES, created=now, start_time=now), ())
    for change_ in (*plan.taints_add, *plan.taints_remove):
        node = cache.nodes.get(change_.node)
        if node is None:
            continue
        others = tuple(t for t in node.taints if t.key != change_.taint.key)
        added = change_ in plan.taints_add
        cache.nodes[node.name] = dataclasses.replace(node, taints=(*others, change_.taint) if added else others)


def settle(cache: ClusterCache, policy: Policy, memory: PlannerMemory, clock: Clock, most: int, *,
           heap: HeapFreezer) -> list[Plan]:
    """Plan without a total limit and carry it out, ten minutes apart (cooldowns pass, replacements start), until a
    cycle plans no eviction or `most` ran: the steady state the remediator keeps the cluster in. The plans made."""
    serial = itertools.count()
    plans = []
    for _ in range(most):
        _, _, plan = cycle(cache, policy, memory, clock.step(SETTLE_STEP), heap)
        plans.append(plan)
        if not plan.evictions:
            break
        carry_out(cache, plan, clock.now, serial)
    return plans


def cycle(cache: ClusterCache, policy: Policy, memory: PlannerMemory, now: dt.datetime,
          heap: HeapFreezer) -> tuple[float, float, Plan]:
    t, c = time.perf_counter(), time.process_time()
    with heap.cycle():  # as the controller runs it (remediator/control/controller.py)
        plan = make_plan(cache.snapshot(now), policy, memory)
    return time.perf_counter() - t, time.process_time() - c, plan


def timed(label: str, cache: ClusterCache, policy: Policy, memory: PlannerMemory, clock: Clock, *, heap: HeapFreezer,
          runs: int, before: Callable[[], None]) -> None:
    wall, cpu, events = [], [], []
    plan = None
    for _ in range(runs):
        c = time.process_time()
        before()
        events.append(time.process_time() - c)
        w, c, plan = cycle(cache, policy, memory, clock.step(CYCLE_STEP), heap)
        wall.append(w)
        cpu.append(c)
    assert plan is not None
    print(f"  {label:<34} median {summarize(wall).median:7.3f} s (CPU {summarize(cpu).median:.3f} s; the watch "
          f"events before it {summarize(events).median:.3f} s); plan: {describe(plan)}", flush=True)


def describe(plan: Plan) -> str:
    by = Counter(e.strategy for e in plan.evictions)
    return (f"{len(plan.evictions)} evictions" + (f" ({', '.join(f'{n} {s}' for s, n in sorted(by.items()))})"
                                                  if by else "") + f", {len(plan.deferred)} deferred")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="5000,20000", help="cluster sizes, comma-separated (30 pods a node)")
    ap.add_argument("--runs", type=int, default=3, help="steady cycles timed per case")
    ap.add_argument("--changed", type=float, default=0.01, help="share of the pods changed before each cycle")
    ap.add_argument("--reported", type=float, default=REPORTED,
                    help="share of the nodes reporting their status before each cycle of the last case")
    ap.add_argument("--settle", type=int, default=8, help="most cycles run to carry out what the cluster needs")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    policy = parse_policy(POLICY % {"total": "500"}, source="bench-policy.yaml", catalog=CATALOG)
    unlimited = parse_policy(POLICY % {"total": "null"}, source="bench-policy.yaml", catalog=CATALOG)
    for n in (int(x) for x in args.nodes.split(",")):
        t0 = time.perf_counter()
        cache = load(n, n * 30, args.seed)
        print(f"cluster: {n} nodes, {len(cache.pods)} pods (built in {time.perf_counter() - t0:.1f} s, not timed)",
              flush=True)
        heap = HeapFreezer()
        heap.maybe_freeze()  # as the remediator does once its caches are synced (remediator/state/heap.py)
        memory, clock = PlannerMemory(), Clock()
        w, c, plan = cycle(cache, policy, memory, clock.now, heap)
        print(f"  {'first cycle (cold)':<34} {w:14.3f} s (CPU {c:.3f} s); plan: {describe(plan)}", flush=True)
        plans = settle(cache, unlimited, memory, clock, args.settle, heap=heap)
        print(f"  settling: {len(plans)} cycles without a total limit, each carried out: "
              + "; ".join(describe(p) for p in plans), flush=True)
        timed("steady, no changes", cache, policy, memory, clock, heap=heap, runs=args.runs, before=lambda: None)
        count = max(1, round(len(cache.pods) * args.changed))
        timed(f"steady, {count} pods changed", cache, policy, memory, clock, heap=heap, runs=args.runs,
              before=partial(change, cache, sorted(cache.pods), random.Random(args.seed), count))
        reports = max(1, round(len(cache.nodes) * args.reported))
        timed(f"steady, and {reports} node{'s' * (reports > 1)} reported", cache, policy, memory, clock, heap=heap,
              runs=args.runs,
              before=partial(change_and_report, cache, random.Random(args.seed), count, reports, clock))
        del cache, memory
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"\npeak RSS: {rss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
