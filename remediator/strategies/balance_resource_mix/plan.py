"""BalanceResourceMix (the balancing engine): move pods so that every node's cpu:memory mix comes near the cluster's.

A node whose requests are CPU-heavy while another's are memory-heavy strands memory on the first and CPU on the
second: the fragmentation the placement engine repairs one pending pod at a time. The deviation of a node is the
distance, in percentage points, between its mix and the cluster's: |(cpu% - memory%) - (cluster cpu% - cluster
memory%)|, requests over allocatable; the total deviation (the article's "entropy") is its sum over the nodes.
Moves leave the cluster's totals unchanged, so each one that lowers the sum evens the mix.

Per cycle, greedily, up to `maxMovesPerCycle`: among the most deviating nodes, the pod whose move to a node leaning
the other way lowers the total deviation most (by at least `minImprovement` points), never leaving the destination
above `maxUtilization` on cpu or memory; each move through the cycle's gate (DefaultEvictor, PDB budgets, limits,
loop guard, node fit, zone spread). Only single moves: a swap would need each pod to count on the room of the other
before either has left.
"""

from __future__ import annotations

from collections.abc import Mapping

from remediator.model import PlannedEviction, PodRecord, ResourceMix, Snapshot
from remediator.planning.cycle import CYCLE, Cycle
from remediator.scheduling.usage import eviction_order, live_pods
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs

NAME = "BalanceResourceMix"
KIND = "balance"
SOURCES, DESTINATIONS = 10, 20  # the most deviating nodes looked at per move, each way


def lean(used: Mapping[str, int], allocatable: Mapping[str, int]) -> float:
    """cpu% - memory% of a node's requests."""
    return _pct(used.get("cpu", 0), allocatable.get("cpu", 0)) - _pct(used.get("memory", 0),
                                                                       allocatable.get("memory", 0))


def _pct(used: int, allocatable: int) -> float:
    return 100.0 * used / allocatable if allocatable > 0 else 0.0


def deviation(snapshot: Snapshot, usage: Mapping[str, Mapping[str, int]],
              scope: list[str]) -> tuple[float, dict[str, float]]:
    """The cluster's lean and each node's signed distance from it (positive: more CPU-heavy than the cluster)."""
    total_used = {r: sum(usage[n].get(r, 0) for n in scope) for r in ("cpu", "memory")}
    total_alloc = {r: sum(snapshot.nodes[n].allocatable.get(r, 0) for n in scope) for r in ("cpu", "memory")}
    cluster = lean(total_used, total_alloc)
    return cluster, {n: lean(usage[n], snapshot.nodes[n].allocatable) - cluster for n in scope}


def total_deviation(excess: Mapping[str, float]) -> float:
    return sum(abs(e) for e in excess.values())


def plan(snapshot: Snapshot, args: BalanceResourceMixArgs, cycle: Cycle) -> None:
    scope = sorted(n for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting and not rec.unschedulable)
    if len(scope) < 2:
        return
    usage = {n: cycle.usage(n) for n in scope}
    _, excess = deviation(snapshot, usage, scope)
    before = total_deviation(excess)
    tried: set[tuple[str, str]] = set()
    moves = 0
    while moves < args.max_moves_per_cycle:
        best = _best_move(snapshot, args, cycle, usage=usage, excess=excess, tried=tried)
        if best is None:
            break
        pod, dest, gain = best
        tried.add((pod.key, dest))
        source = pod.node_name
        reason = (f"evens the cpu:memory mix: {source} leans {excess[source]:+.0f} and {dest} "
                  f"{excess[dest]:+.0f} points from the cluster's; total deviation -{gain:.1f}")
        outcome = cycle.move(PlannedEviction(pod, NAME, reason), [dest])
        if outcome.stop == CYCLE:
            break
        if outcome.evicted:
            moves += 1
            for n in (source, dest):
                usage[n] = cycle.usage(n)
            _, excess = deviation(snapshot, usage, scope)
    cycle.plan.resource_mix = ResourceMix(before=before, after=total_deviation(excess), nodes=len(scope))


def _best_move(snapshot: Snapshot, args: BalanceResourceMixArgs, cycle: Cycle, *, usage: dict[str, dict[str, int]],
               excess: Mapping[str, float], tried: set[tuple[str, str]]) -> tuple[PodRecord, str, float] | None:
    ranked = sorted(excess, key=lambda n: (-abs(excess[n]), n))
    sources = [n for n in ranked if cycle.hold(n) is None][:SOURCES]
    best: tuple[float, str, str, PodRecord] | None = None
    for source in sources:
        sign = 1 if excess[source] > 0 else -1
        alloc_s = snapshot.nodes[source].allocatable
        destinations = [n for n in ranked if n != source and excess[n] * sign < 0 and n not in cycle.exclude
                        and cycle.hold(n) is None][:DESTINATIONS]
        for pod in eviction_order(live_pods(snapshot, source)):
            if pod.key in cycle.decided or pod.namespace in args.evictable_namespaces_exclude:
                continue
            if lean(pod.requests, alloc_s) * sign <= 0:
                continue  # moving it would push the source further from the cluster's mix
            for dest in destinations:
                if (pod.key, dest) in tried:
                    continue
                gain = _gain(snapshot, args, usage=usage, excess=excess, pod=pod, source=source, dest=dest)
                if gain is not None and gain >= args.min_improvement and (best is None or gain > best[0]):
                    best = (gain, source, dest, pod)
    return None if best is None else (best[3], best[2], best[0])


def _gain(snapshot: Snapshot, args: BalanceResourceMixArgs, *, usage: Mapping[str, Mapping[str, int]],
          excess: Mapping[str, float], pod: PodRecord, source: str, dest: str) -> float | None:
    """How much the total deviation falls when `pod` moves from `source` to `dest`; None when the destination would
    end above `maxUtilization`."""
    cluster = lean(usage[source], snapshot.nodes[source].allocatable) - excess[source]
    after = {}
    for node, sign in ((source, -1), (dest, 1)):
        used = dict(usage[node])
        for r, q in pod.requests.items():
            used[r] = used.get(r, 0) + sign * q
        alloc = snapshot.nodes[node].allocatable
        if sign > 0 and any(_pct(used.get(r, 0), alloc.get(r, 0)) > args.max_utilization for r in ("cpu", "memory")):
            return None
        after[node] = lean(used, alloc) - cluster
    return abs(excess[source]) + abs(excess[dest]) - abs(after[source]) - abs(after[dest])
