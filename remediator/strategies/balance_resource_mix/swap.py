"""The balancing engine's exchanges: when no single move evens the mix (the nodes leaning one way are too full to
take a pod from the other side), a pod of a node leaning one way and a pod of a node leaning the other trade places.
Each node gives up a pod of its own lean and takes one of the other, so both come nearer the cluster's mix while
their usage barely changes.
"""

from __future__ import annotations

from collections.abc import Mapping

from remediator.model.records import PodRecord
from remediator.planning.gate import Gate
from remediator.scheduling.usage import eviction_order, live_pods
from remediator.state.snapshot import Snapshot
from remediator.strategies.balance_resource_mix.args import BalanceResourceMixArgs
from remediator.strategies.balance_resource_mix.mix import lean, pct

PARTNERS = 10  # the most deviating nodes leaning the other way, for each of the most deviating ones
PODS_PER_NODE = 8  # a node's pods tried, lowest priority first, among those of its own lean

Swap = tuple[PodRecord, PodRecord, float]  # a, b, how much the total deviation falls


def best_swap(snapshot: Snapshot, args: BalanceResourceMixArgs, gate: Gate, *, usage: Mapping[str, Mapping[str, int]],
              excess: Mapping[str, float], sources: list[str], ranked: list[str],
              tried: set[tuple[str, str]]) -> Swap | None:
    """The exchange between one of `sources` and a node leaning the other way that lowers the total deviation most
    (by at least `minImprovement` points) with neither node ending above `maxUtilization`; None when there is none.
    The gate decides whether it is made."""
    best: Swap | None = None
    for source in sources:
        sign = 1 if excess[source] > 0 else -1
        partners = [n for n in ranked if excess[n] * sign < 0 and n not in gate.view.excluded
                    and gate.view.hold(n) is None][:PARTNERS]
        mine = _own_lean(snapshot, args, gate, source, sign)
        for partner in partners:
            for b in _own_lean(snapshot, args, gate, partner, -sign):
                for a in mine:
                    if (a.key, b.key) in tried:
                        continue
                    gain = _gain(snapshot, args, usage=usage, excess=excess, a=a, b=b)
                    if gain is not None and gain >= args.min_improvement and (best is None or gain > best[2]):
                        best = (a, b, gain)
    return best


def _own_lean(snapshot: Snapshot, args: BalanceResourceMixArgs, gate: Gate, node: str,
              sign: int) -> list[PodRecord]:
    """Up to PODS_PER_NODE of the node's pods that lean its way (moving one off brings the node nearer the mix)."""
    alloc = snapshot.nodes[node].allocatable
    found = []
    for pod in eviction_order(live_pods(snapshot, node)):
        if pod.key in gate.view.decided or pod.namespace in args.evictable_namespaces_exclude:
            continue
        if lean(pod.requests, alloc) * sign > 0:
            found.append(pod)
            if len(found) == PODS_PER_NODE:
                break
    return found


def _gain(snapshot: Snapshot, args: BalanceResourceMixArgs, *, usage: Mapping[str, Mapping[str, int]],
          excess: Mapping[str, float], a: PodRecord, b: PodRecord) -> float | None:
    """How much the total deviation falls when `a` and `b` trade nodes; None when either node would end above
    `maxUtilization` on a resource the exchange raises there."""
    na, nb = a.node_name, b.node_name
    cluster = lean(usage[na], snapshot.nodes[na].allocatable) - excess[na]
    after = {}
    for node, out, into in ((na, a, b), (nb, b, a)):
        used = dict(usage[node])
        for r in ("cpu", "memory"):
            used[r] = used.get(r, 0) - out.requests.get(r, 0) + into.requests.get(r, 0)
        alloc = snapshot.nodes[node].allocatable
        if any(into.requests.get(r, 0) > out.requests.get(r, 0) and pct(used.get(r, 0), alloc.get(r, 0))
               > args.max_utilization for r in ("cpu", "memory")):
            return None  # (what the exchange lowers may stay where it was)
        after[node] = lean(used, alloc) - cluster
    return abs(excess[na]) + abs(excess[nb]) - abs(after[na]) - abs(after[nb])
