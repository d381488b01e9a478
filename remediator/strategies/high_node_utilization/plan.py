"""HighNodeUtilization: empty underutilized nodes into the others, so the cluster autoscaler can remove them.

descheduler's algorithm and argument names (docs/utilization.md lists each difference and why):
1. usage: requests of the non-terminal pods on each Ready node in % of allocatable; with `metricsUtilization`
   (descheduler has it for LowNodeUtilization only) the usage a metrics source measured, a node of unknown usage
   being neither a source nor a destination;
2. sources: nodes where every configured resource is at or below `thresholds` (cordoned ones included);
   destinations: the other schedulable nodes;
3. nothing to do when there are no sources or at most numberOfNodes of them;
4. sources in ascending usage, their pods in eviction order, until the destinations' pooled room runs out.
nodemedic's changes:
- `hnu-whole-node`: a source is drained only if it can be emptied: every pod that would keep the autoscaler from
  removing it (anything but DaemonSet and mirror pods) may be evicted and fits a destination, all together.
  Otherwise none of its pods move: a half-emptied node saves nothing and costs restarts.
- `hnu-all-under`: when every node is underutilized (descheduler stops, #725), the fuller sources serve as
  destinations for the emptier ones.
- `taintDrainedNodes` (default true): the node being emptied gets nodemedic's NoSchedule taint
  `nodemedic.io/consolidating`, so the scheduler does not refill it; at most `maxConsolidatingNodes` carry it,
  none is added while the circuit breaker holds a problem back, and it is removed again when the node was not
  removed within `consolidationTimeout` (the node is then left alone for as long).
- `dest-fit`: each pod must fit a particular destination that is not itself being drained.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from nodemedic_common.durations import format_duration
from remediator.model.plan import PlannedEviction
from remediator.model.records import PodRecord
from remediator.planning.gate import CYCLE, NODE, Gate
from remediator.planning.pod_protection import MIRROR_ANNOTATION
from remediator.planning.utilization import Utilization, describe_source
from remediator.planning.wants import NodeCause, Wants
from remediator.scheduling.nodefit import PODS
from remediator.scheduling.usage import Percentages, at_or_below, describe, eviction_order, live_pods
from remediator.state.snapshot import Snapshot
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs

NAME = "HighNodeUtilization"
KIND = "balance"


def plan(snapshot: Snapshot, args: HighNodeUtilizationArgs, gate: Gate) -> Wants:
    wants = _Wants(released={node: t for node, t in gate.view.remembered.items()
                             if snapshot.now - t < args.consolidation_timeout})
    _plan(snapshot, args, gate, wants)
    return Wants(taint=tuple(wants.taint), untaint=tuple(wants.untaint), remember=wants.released)


@dataclass
class _Wants:
    taint: list[NodeCause] = field(default_factory=list)
    untaint: list[NodeCause] = field(default_factory=list)
    # node -> when a consolidation gave up on it (not picked again for consolidationTimeout)
    released: dict[str, dt.datetime] = field(default_factory=dict)


def _plan(snapshot: Snapshot, args: HighNodeUtilizationArgs, gate: Gate, wants: _Wants) -> None:
    thresholds = dict(args.thresholds)
    draining = gate.view.carrying  # the nodes carrying the consolidation taint -> its age in seconds
    _release_timed_out(snapshot, args, draining, wants)
    usage = Utilization(snapshot, gate, args.metrics_utilization, thresholds)
    pct: dict[str, Percentages] = {}
    for n in sorted(n for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting):
        known = usage.percentages(n)
        # A node of unknown usage is neither emptied nor filled; one being emptied stays a source whatever it uses.
        if known is not None or n in draining:
            pct[n] = known if known is not None else {}
    scope = sorted(pct)
    if len(scope) <= 1:
        return
    # Nodes already being consolidated stay sources whatever their usage: they are being emptied.
    # Nodes out of rotation for a problem (tainted, held back) are the rules' business, not consolidation's.
    sources = [n for n in scope if n in draining or (n not in gate.view.excluded and at_or_below(pct[n], thresholds))]
    if not sources or len(sources) <= args.number_of_nodes:
        return
    is_source = set(sources)  # (a list of thousands of nodes is no membership test)
    others = [n for n in scope
              if n not in is_source and not snapshot.nodes[n].unschedulable and n not in gate.view.excluded]
    all_under = not others
    order = sorted(sources, key=lambda n: (n not in draining, max(pct[n].values(), default=0.0), n))
    open_slots = args.max_consolidating_nodes - len(draining)
    if gate.view.exhausted():
        open_slots = 0  # this cycle can move nothing more: start no consolidation it cannot make progress on
    breaker = gate.view.breaker_open
    chosen: list[str] = []  # nodes being emptied this cycle: never a destination
    for source in order:
        if source in draining and draining[source] >= args.consolidation_timeout.total_seconds():
            continue  # released above
        if gate.view.hold(source) is not None or gate.view.receiving(source):
            continue  # opted out / autoscaler at work / a planned move counts on room here
        already = source in draining
        if args.taint_drained_nodes and not already and (open_slots <= 0 or breaker):
            continue
        if not already and source in wants.released:
            continue  # a consolidation gave up on this node recently
        # Destinations: the non-sources; with every node underutilized, the sources fuller than this one (not being
        # emptied). Fullest first, as a MostAllocated scheduler would place the pods: packing is the point.
        if all_under:
            fuller = order[order.index(source) + 1:]
            candidates = [n for n in fuller if n not in chosen and n not in draining
                          and not snapshot.nodes[n].unschedulable and n not in gate.view.excluded]
        else:
            candidates = [n for n in others if n not in chosen]
        destinations = gate.view.by_room(candidates)[::-1]
        if not destinations:
            continue
        movers, blockers = _movers(snapshot, gate, source, args)
        if blockers:
            why = "; ".join(w for _, w in blockers[:3]) + (f" (and {len(blockers) - 3} more)" if len(blockers) > 3
                                                          else "")
            for pod in [p for p, _ in blockers] + movers:
                gate.protect(pod, f"node {source} cannot be emptied: {why}")
            continue
        if not movers:
            continue  # already empty (DaemonSet pods aside): nothing to move, no slot or taint to spend on it
        ok, why = gate.fits_all(movers, destinations)
        if not ok:
            for pod in movers:
                gate.protect(pod, f"node {source} cannot be emptied: {why}")
            continue
        chosen.append(source)
        gate.empty(source)
        if args.taint_drained_nodes and not already:
            open_slots -= 1
            wants.taint.append(NodeCause(source, f"{describe(pct[source])} at or below thresholds "
                                                 f"{describe(thresholds)}"))
        by = "" if usage.by_requests else f", by {describe_source(args.metrics_utilization)}"
        reason = f"node {source} underutilized ({describe(pct[source])}{by}): emptying it"
        for pod in movers:
            outcome = gate.move(PlannedEviction(pod, NAME, reason), destinations)
            if outcome.stop == CYCLE:
                return
            if outcome.stop == NODE:
                break


def _movers(snapshot: Snapshot, gate: Gate, source: str,
            args: HighNodeUtilizationArgs) -> tuple[list[PodRecord], list[tuple[PodRecord, str]]]:
    """(pods to move, pods that would keep the node from being emptied with why). DaemonSet and mirror pods
    neither move nor block: the autoscaler ignores them when it removes a node."""
    movers: list[PodRecord] = []
    blockers: list[tuple[PodRecord, str]] = []
    for pod in eviction_order(live_pods(snapshot, source)):
        if MIRROR_ANNOTATION in pod.annotations or any(o.kind == "DaemonSet" for o in pod.owners):
            continue
        if pod.key in gate.view.decided:
            continue  # a deschedule strategy already decided it
        if args.only_thresholding_resources and not any(pod.requests.get(r, 0) > 0 for r in dict(args.thresholds)
                                                        if r != PODS):
            continue  # evictionModes OnlyThresholdingResources: not ours to move
        if pod.namespace in args.evictable_namespaces_exclude:
            blockers.append((pod, f"{pod.key} is in excluded namespace {pod.namespace}"))
            continue
        why = gate.view.protection(pod)
        if why is not None:
            blockers.append((pod, f"{pod.key}: {why}"))
            continue
        movers.append(pod)
    return movers, blockers


def _release_timed_out(snapshot: Snapshot, args: HighNodeUtilizationArgs, draining: Mapping[str, float],
                       wants: _Wants) -> None:
    timeout = args.consolidation_timeout.total_seconds()
    for node, age in sorted(draining.items()):
        if age >= timeout:
            wants.untaint.append(NodeCause(node, f"not removed within {format_duration(args.consolidation_timeout)}: "
                                                 "giving the node back"))
            wants.released[node] = snapshot.now
