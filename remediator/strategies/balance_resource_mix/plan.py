"""BalanceResourceMix (the balancing engine): move pods so that every node's cpu:memory mix comes near the cluster's.

A node whose requests are CPU-heavy while another's are memory-heavy strands memory on the first and CPU on the
second: the fragmentation the placement engine repairs one pending pod at a time. The deviation of a node is the
distance, in percentage points, between its mix and the cluster's: |(cpu% - memory%) - (cluster cpu% - cluster
memory%)|, requests over allocatable; the total deviation (the article's "entropy") is its sum over the nodes.
Moves leave the cluster's totals unchanged, so each one that lowers the sum evens the mix.

Per cycle, greedily, up to `maxMovesPerCycle`: among the most deviating nodes, the pod whose move to a node leaning
the other way lowers the total deviation most (by at least `minImprovement` points), never leaving the destination
above `maxUtilization` on cpu or memory; each move through the gate (DefaultEvictor, PDB budgets, limits,
loop guard, node fit, zone spread). When no single move is left (the nodes leaning the other way too full to take
a pod), an exchange (swap.py): a pod of each lean trades places, both through the gate together (`Gate.exchange`:
each counting the room the other leaves, limits and PDB budgets counted for two), two of the cycle's moves.
"""

from __future__ import annotations

from collections.abc import Mapping

from remediator.model.plan import PlannedEviction
from remediator.model.records import PodRecord
from remediator.planning.gate import CYCLE, Gate
from remediator.planning.wants import NOTHING, Wants
from remediator.scheduling.usage import eviction_order, live_pods
from remediator.state.snapshot import Snapshot
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs
from remediator.strategies.balance_resource_mix.mix import deviation, lean, pct, total_deviation
from remediator.strategies.balance_resource_mix.report import ResourceMix
from remediator.strategies.balance_resource_mix.swap import Swap, best_swap

NAME = "BalanceResourceMix"
KIND = "balance"
SOURCES, DESTINATIONS = 10, 20  # the most deviating nodes looked at per move, each way
MAX_REFUSED_SWAPS = 10  # exchanges the gate may refuse in a cycle before the search for them stops


def plan(snapshot: Snapshot, args: BalanceResourceMixArgs, gate: Gate) -> Wants:
    scope = sorted(n for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting and not rec.unschedulable)
    if len(scope) < 2:
        return NOTHING
    usage = {n: gate.view.usage(n) for n in scope}
    _, excess = deviation(snapshot, usage, scope)
    before = total_deviation(excess)
    tried: set[tuple[str, str]] = set()
    refused: list[PodRecord] = []  # first pods of the exchanges the gate refused
    moves = 0
    while moves < args.max_moves_per_cycle:
        step = _step(snapshot, args, gate, usage=usage, excess=excess, tried=tried, refused=refused,
                     room=args.max_moves_per_cycle - moves)
        if step is None:
            break
        changed, made = step
        moves += made
        if changed:
            for n in changed:
                usage[n] = gate.view.usage(n)
            _, excess = deviation(snapshot, usage, scope)
    return Wants(report=ResourceMix(before=before, after=total_deviation(excess), nodes=len(scope)))


def _step(snapshot: Snapshot, args: BalanceResourceMixArgs, gate: Gate, *, usage: dict[str, dict[str, int]],
          excess: Mapping[str, float], tried: set[tuple[str, str]], refused: list[PodRecord],
          room: int) -> tuple[tuple[str, ...], int] | None:
    """The best single move, or else the best exchange, through the gate: (the nodes changed, evictions made); None
    when there is nothing left to try this cycle."""
    ranked = sorted(excess, key=lambda n: (-abs(excess[n]), n))
    sources = [n for n in ranked if gate.view.hold(n) is None][:SOURCES]
    best = _best_move(snapshot, args, gate, excess=excess, usage=usage, ranked=ranked, sources=sources, tried=tried)
    if best is not None:
        tried.add((best[0].key, best[1]))
        changed = _move(gate, best, excess)
        return None if changed is None else (changed, 1 if changed else 0)
    # No single move: an exchange, two evictions of the cycle's moves, both or neither.
    if room < 2 or len(refused) >= MAX_REFUSED_SWAPS:
        return None
    swap = best_swap(snapshot, args, gate, usage=usage, excess=excess, sources=sources, ranked=ranked, tried=tried)
    if swap is None:
        return None
    tried.add((swap[0].key, swap[1].key))
    changed = _exchange(gate, swap, excess)
    if not changed:
        refused.append(swap[0])
        return None if gate.view.exhausted() else ((), 0)
    return changed, 2


def _move(gate: Gate, best: tuple[PodRecord, str, float], excess: Mapping[str, float]) -> tuple[str, ...] | None:
    """Make the move through the gate: the nodes it changed (none when refused); None when the cycle is done."""
    pod, dest, gain = best
    source = pod.node_name
    reason = (f"evens the cpu:memory mix: {source} leans {excess[source]:+.0f} and {dest} "
              f"{excess[dest]:+.0f} points from the cluster's; total deviation -{gain:.1f}")
    outcome = gate.move(PlannedEviction(pod, NAME, reason), [dest])
    if outcome.stop == CYCLE:
        return None
    return (source, dest) if outcome.evicted else ()


def _exchange(gate: Gate, swap: Swap, excess: Mapping[str, float]) -> tuple[str, ...]:
    """Make the exchange through the gate: the two nodes, or none when refused."""
    a, b, gain = swap
    na, nb = a.node_name, b.node_name
    why = (f"evens the cpu:memory mix: {na} leans {excess[na]:+.0f} and {nb} {excess[nb]:+.0f} points from the "
           f"cluster's; total deviation -{gain:.1f} by an exchange")
    made = gate.exchange(PlannedEviction(a, NAME, f"{why} with {b.key}"),
                          PlannedEviction(b, NAME, f"{why} with {a.key}"))
    return (na, nb) if made else ()


def _best_move(snapshot: Snapshot, args: BalanceResourceMixArgs, gate: Gate, *, usage: dict[str, dict[str, int]],
               excess: Mapping[str, float], ranked: list[str], sources: list[str],
               tried: set[tuple[str, str]]) -> tuple[PodRecord, str, float] | None:
    best: tuple[float, str, str, PodRecord] | None = None
    for source in sources:
        sign = 1 if excess[source] > 0 else -1
        alloc_s = snapshot.nodes[source].allocatable
        destinations = [n for n in ranked if n != source and excess[n] * sign < 0 and n not in gate.view.excluded
                        and gate.view.hold(n) is None][:DESTINATIONS]
        for pod in eviction_order(live_pods(snapshot, source)):
            if pod.key in gate.view.decided or pod.namespace in args.evictable_namespaces_exclude:
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
        if sign > 0 and any(pct(used.get(r, 0), alloc.get(r, 0)) > args.max_utilization for r in ("cpu", "memory")):
            return None
        after[node] = lean(used, alloc) - cluster
    return abs(excess[source]) + abs(excess[dest]) - abs(after[source]) - abs(after[dest])
