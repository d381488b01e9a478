"""The balancing engine's measure as the plan shows it: `resourceMix` in its JSON and the gauge
`nodemedic_resource_mix_deviation`, before and after the plan's moves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

from remediator.model.migration import Gain
from remediator.model.plan import NodeNotice, Nomination, StrategyReport


@dataclass(frozen=True)
class ResourceMix:
    """The summed distance of each node's cpu:memory mix from the cluster's."""

    before: float  # percentage points, over the nodes in scope
    after: float  # once this plan's moves are made
    nodes: int

    @property
    def json_key(self) -> str:
        return "resourceMix"

    def to_json(self) -> object:
        return {"deviationBefore": round(self.before, 2), "deviationAfter": round(self.after, 2), "nodes": self.nodes}

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return ()

    def nominations(self) -> Sequence[Nomination]:
        return ()

    def gain(self) -> Gain | None:
        return Gain("resource-mix deviation (points)", self.before, self.after)


def report_metrics(registry: CollectorRegistry) -> Callable[[StrategyReport], None]:
    gauge = Gauge("nodemedic_resource_mix_deviation", "Summed distance of the nodes' cpu:memory request mix from the "
                  "cluster's, in percentage points, before and after the plan's moves (BalanceResourceMix)",
                  ["when"], registry=registry)

    def show(report: StrategyReport) -> None:
        assert isinstance(report, ResourceMix)
        gauge.labels("before").set(report.before)
        gauge.labels("after").set(report.after)
    return show
