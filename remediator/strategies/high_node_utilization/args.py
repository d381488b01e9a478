"""HighNodeUtilization's arguments (descheduler's names plus consolidation's), their defaults and their validation."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.fields import read_evictable_namespaces, read_resource_percentages
from remediator.policy.measured_usage import MetricsUtilization, read_metrics_utilization
from remediator.policy.reader import Reader, Section

_HNU_ARGS_KEYS = ("thresholds", "numberOfNodes", "evictableNamespaces", "evictionModes", "taintDrainedNodes",
                  "maxConsolidatingNodes", "consolidationTimeout", "metricsUtilization")
EVICTION_MODES = ("OnlyThresholdingResources",)
# Shorter than this and the taint on a node being emptied comes off before a node autoscaler could remove the node
# (cluster-autoscaler waits scale-down-unneeded-time, 10m by default): at 0s HighNodeUtilization added and removed
# its taint on alternate cycles and replanned the same evictions.
MIN_CONSOLIDATION_TIMEOUT = (dt.timedelta(minutes=1), "a node autoscaler needs time to remove the emptied node; "
                                                      "cluster-autoscaler waits 10m by default")


@dataclass(frozen=True)
class HighNodeUtilizationArgs:
    """descheduler's HighNodeUtilization arguments, plus what consolidation needs (see docs/utilization.md)."""

    thresholds: tuple[tuple[str, float], ...] = ()
    number_of_nodes: int = 0
    evictable_namespaces_exclude: tuple[str, ...] = ()
    only_thresholding_resources: bool = False  # evictionModes: [OnlyThresholdingResources]
    # nodemedic: taint a node being emptied (NoSchedule, owned) so the scheduler does not refill it and the
    # cluster autoscaler can remove it; at most `max_consolidating_nodes` carry it at once; the taint is
    # removed again when the node was not removed within `consolidation_timeout`.
    taint_drained_nodes: bool = True
    max_consolidating_nodes: int = 1
    consolidation_timeout: dt.timedelta = dt.timedelta(minutes=15)
    # nodemedic: descheduler's metricsUtilization, which descheduler has for LowNodeUtilization only. None: requests
    metrics_utilization: MetricsUtilization | None = None


def read_args(r: Reader, strategy: Section) -> HighNodeUtilizationArgs:
    m = r.section(strategy, "args", _HNU_ARGS_KEYS, required=True)
    d = HighNodeUtilizationArgs()
    thresholds = read_resource_percentages(r, m, "thresholds")
    modes = r.strings(m, "evictionModes",
                      lambda s: None if s in EVICTION_MODES else f"must be one of {', '.join(EVICTION_MODES)}")
    metrics = read_metrics_utilization(r, m, [("thresholds", thresholds)])
    return HighNodeUtilizationArgs(
        thresholds=thresholds,
        number_of_nodes=r.integer(m, "numberOfNodes", d.number_of_nodes),
        evictable_namespaces_exclude=read_evictable_namespaces(r, m),
        only_thresholding_resources="OnlyThresholdingResources" in (modes or ()),
        taint_drained_nodes=r.flag(m, "taintDrainedNodes", d.taint_drained_nodes),
        max_consolidating_nodes=r.integer(m, "maxConsolidatingNodes", d.max_consolidating_nodes, minimum=1),
        consolidation_timeout=r.duration(m, "consolidationTimeout", d.consolidation_timeout,
                                         floor=MIN_CONSOLIDATION_TIMEOUT),
        metrics_utilization=metrics,
    )
