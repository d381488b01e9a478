"""The zone-exposure gauges: a series pair for each exposed workload (below the policy's minSurvivingShare while a
better spread exists), at most the policy's zoneExposure.maxSeries of them, and two counts that are always there: the
workloads exposed, and those of them left without a series.

Every replicated workload once had its pair, exposed or not: 20,000 two-replica workloads made 40,000 series, 3.8 MB
of /metrics rendered on the leader's event loop at every scrape. The alert NodemedicWorkloadZoneExposed needs only
the exposed workloads; a cluster with more of them than the bound is told by the omitted count (and its alert), and
`kubectl nodemedic plan` lists them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from remediator.alerts.metrics import Metrics
from remediator.model.plan import ZoneExposure

Workload = tuple[str, str]  # (namespace, "Kind/name")


@dataclass
class ZoneExposureGauges:
    metrics: Metrics
    shown: set[Workload] = field(default_factory=set)  # the workloads with a series pair now

    def show(self, exposed: Mapping[Workload, ZoneExposure], max_series: int) -> None:
        """Series for at most `max_series` of the `exposed` workloads, none for any other: those shown already keep
        theirs (an alert's `for` runs on rather than restarting when another workload gets worse), then the least
        surviving first; a workload no longer exposed, or gone, loses its pair."""
        ranked = sorted(exposed, key=lambda w: (w not in self.shown, exposed[w].surviving, w))
        shown = set(ranked[:max(max_series, 0)])
        m = self.metrics
        for gone in self.shown - shown:
            m.zone_surviving.remove(*gone)
            m.zone_surviving_best.remove(*gone)
        for w in shown:
            m.zone_surviving.labels(*w).set(exposed[w].surviving)
            m.zone_surviving_best.labels(*w).set(exposed[w].best)
        self.shown = shown
        m.zone_exposed.set(len(exposed))
        m.zone_exposed_omitted.set(len(exposed) - len(shown))
