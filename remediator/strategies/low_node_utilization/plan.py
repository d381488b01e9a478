"""LowNodeUtilization: move pods off overutilized nodes so that underutilized nodes take them.

descheduler's algorithm and argument names (docs/utilization.md lists each difference and why):
1. usage: requests of the non-terminal pods on each Ready node, in % of allocatable, after the moves this cycle
   already planned; with `metricsUtilization`, the usage a metrics source measured (planning/utilization.py);
2. thresholds as given, or with useDeviationThresholds distances below/above the mean usage;
3. underutilized: schedulable and every configured resource at or below `thresholds`; overutilized: any configured
   resource above `targetThresholds`; the rest are left alone;
4. nothing to do when no node is underutilized, when at most numberOfNodes are, when every node is, or when none
   is overutilized;
5. the busiest source first, its pods in eviction order; a source is relieved until nothing configured is above
   target, and the strategy ends when the underutilized nodes' pooled room (up to target) runs out.
nodemedic's changes: a pod must fit one particular underutilized node and leave it at or under target (`dest-fit`);
a pod that frees nothing of what is over target is not evicted (`relieves`); sources are ordered by their highest
percentage, not by a raw sum of millicores and bytes (`order`); PDBs, zone spread, the loop guard and the owner
cool-down apply (the cycle gate). With measured usage: a node or pod of unknown usage is left alone (`unknown`), and
with a Prometheus query one pod per source node and cycle (`one-per-query`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from remediator.model.plan import PlannedEviction
from remediator.model.records import NodeRecord, PodRecord
from remediator.planning.gate import CYCLE, NODE, Gate
from remediator.planning.utilization import Utilization, describe_source
from remediator.planning.wants import NOTHING, Wants
from remediator.policy.measured_usage import METRIC_RESOURCE
from remediator.scheduling.nodefit import PODS
from remediator.scheduling.usage import (
    Percentages,
    above,
    at_or_below,
    describe,
    eviction_order,
    levels,
    live_pods,
)
from remediator.state.snapshot import Snapshot
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs

NAME = "LowNodeUtilization"
KIND = "balance"


def plan(snapshot: Snapshot, args: LowNodeUtilizationArgs, gate: Gate) -> Wants:
    thresholds, targets = dict(args.thresholds), dict(args.target_thresholds)
    usage = Utilization(snapshot, gate, args.metrics_utilization, thresholds)
    pct = _known(snapshot, usage)
    scope = sorted(pct)
    if len(scope) <= 1:
        return NOTHING
    low, high = levels(thresholds, targets, deviation=args.use_deviation_thresholds, usage=list(pct.values()))
    under = [n for n in scope if not snapshot.nodes[n].unschedulable and at_or_below(pct[n], low)]
    is_under = set(under)  # (a list of thousands of nodes is no membership test)
    over = [n for n in scope if n not in is_under and above(pct[n], high)]
    if not under or len(under) <= args.number_of_nodes or len(under) == len(scope) or not over:
        return NOTHING

    destinations = gate.view.by_room(n for n in under if n not in gate.view.excluded)
    budget = _budget(usage, snapshot, destinations, high)
    measured = describe_source(args.metrics_utilization)

    def stays_under_target(pod: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
        with_pod = usage.with_pod(node.name, pod, after)
        if with_pod is None:
            return f"its {measured} is unknown"
        for r, limit in high.items():
            if with_pod.get(r, 0.0) > limit:
                return f"would go above target {r} {limit:g}%"
        return None

    for source in sorted(over, key=lambda n: (-max(pct[n].values(), default=0.0), n)):
        if gate.view.hold(source) is not None:
            continue  # opted out, or the autoscaler is at work there: not ours to relieve
        moved = 0
        for pod in eviction_order(live_pods(snapshot, source)):
            now = usage.percentages(source) or {}
            hot = above(now, high)
            if not hot:
                break  # relieved
            if not usage.per_pod and moved:
                break  # a query measures the node, not its pods: one move per cycle, then measure again
            if any(v <= 0 for v in budget.values()):
                return NOTHING
            if args.eviction_limit_per_node is not None and moved >= args.eviction_limit_per_node:
                break
            if pod.namespace in args.evictable_namespaces_exclude:
                continue
            frees = usage.pod(pod)
            if frees is None:
                gate.protect(pod, "metrics.k8s.io reports no usage for it: evicting it may relieve nothing")
                continue
            if usage.per_pod and not (PODS in hot or any(frees.get(r, 0) > 0 for r in hot)):
                continue  # e.g. a BestEffort pod on a node hot on CPU: evicting it frees nothing that matters
            reason = (f"node {source} above target ({describe(_only(now, hot))} > {describe(_only(high, hot))}"
                      f"{'' if usage.by_requests else ', by ' + measured})")
            outcome = gate.move(PlannedEviction(pod, NAME, reason), destinations, accept=stays_under_target)
            if outcome.evicted:
                moved += 1
                usage.moved(pod, source, outcome.destination)
                budget[PODS] -= 1
                for r in budget:
                    if r != PODS:
                        budget[r] -= frees.get(r, 0)
            elif outcome.stop == CYCLE:
                return NOTHING
            elif outcome.stop == NODE:
                break
    return NOTHING


def _known(snapshot: Snapshot, usage: Utilization) -> dict[str, Percentages]:
    """Each Ready node's usage in percent; a node of unknown usage is left out: neither relieved nor filled."""
    out: dict[str, Percentages] = {}
    for n, rec in snapshot.nodes.items():
        known = usage.percentages(n) if rec.ready and not rec.deleting else None
        if known is not None:
            out[n] = known
    return out


def _only(pct: Percentages, keys: list[str]) -> Percentages:
    return {k: pct[k] for k in keys}


def _budget(usage: Utilization, snapshot: Snapshot, destinations: Sequence[str], high: Percentages) -> dict[str, float]:
    """Room on the destinations up to the target, per resource (cpu, memory and pods always, as descheduler; with a
    Prometheus query pods and MetricResource)."""
    resources = {"cpu", "memory", PODS, *high} if usage.per_pod else {PODS, *high}
    budget = dict.fromkeys(resources, 0.0)
    for n in destinations:
        allocatable = snapshot.nodes[n].allocatable
        used = usage.used(n) or {}
        pct = usage.percentages(n) or {}
        for r in resources:
            limit = high.get(r, 100.0)
            if r == METRIC_RESOURCE:
                budget[r] += max(0.0, limit - pct.get(r, 100.0))
            elif r == PODS and not usage.per_pod:
                budget[r] += max(0.0, limit * allocatable.get(r, 0) / 100 - usage.gate.view.usage(n).get(r, 0))
            else:
                budget[r] += max(0.0, limit * allocatable.get(r, 0) / 100 - used.get(r, 0))
    return budget
