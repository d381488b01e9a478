"""LowNodeUtilization's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.fields import read_evictable_namespaces, read_resource_percentages
from remediator.policy.measured_usage import MetricsUtilization, read_metrics_utilization
from remediator.policy.reader import Reader, Section

_LNU_ARGS_KEYS = ("thresholds", "targetThresholds", "useDeviationThresholds", "numberOfNodes", "evictableNamespaces",
                  "evictionLimits", "metricsUtilization")


@dataclass(frozen=True)
class LowNodeUtilizationArgs:
    """descheduler's LowNodeUtilization arguments (usage in percent of allocatable: requests, or measured)."""

    thresholds: tuple[tuple[str, float], ...] = ()  # resource -> percent: at or below on every one = underutilized
    target_thresholds: tuple[tuple[str, float], ...] = ()  # above on any one = overutilized
    use_deviation_thresholds: bool = False  # both are distances below/above the mean usage instead
    number_of_nodes: int = 0  # act only when more than this many nodes are underutilized
    evictable_namespaces_exclude: tuple[str, ...] = ()
    eviction_limit_per_node: int | None = None  # evictionLimits.node
    metrics_utilization: MetricsUtilization | None = None  # None: requests (the default)


def read_args(r: Reader, strategy: Section) -> LowNodeUtilizationArgs:
    m = r.section(strategy, "args", _LNU_ARGS_KEYS, required=True)
    thresholds = read_resource_percentages(r, m, "thresholds")
    targets = read_resource_percentages(r, m, "targetThresholds")
    deviation = r.flag(m, "useDeviationThresholds", False)
    metrics = read_metrics_utilization(r, m, [("thresholds", thresholds), ("targetThresholds", targets)])
    if thresholds and targets:
        low, high = dict(thresholds), dict(targets)
        if set(low) != set(high):
            r.error(m.line_node("targetThresholds"), m.at("targetThresholds"),
                    f"must name the same resources as thresholds ({', '.join(sorted(low))}), got "
                    f"{', '.join(sorted(high))}")
        elif not deviation:
            for name in sorted(low):
                if low[name] > high[name]:
                    r.error(m.line_node("targetThresholds"), m.at(f"targetThresholds.{name}"),
                            f"{high[name]:g} is below thresholds.{name} ({low[name]:g})")
    limits = r.section(m, "evictionLimits", ("node",))
    return LowNodeUtilizationArgs(
        thresholds=thresholds,
        target_thresholds=targets,
        use_deviation_thresholds=deviation,
        number_of_nodes=r.integer(m, "numberOfNodes", 0),
        evictable_namespaces_exclude=read_evictable_namespaces(r, m),
        eviction_limit_per_node=r.optional_integer(limits, "node", None),
        metrics_utilization=metrics,
    )
