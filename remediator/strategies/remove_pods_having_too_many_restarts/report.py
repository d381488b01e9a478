"""The crash-loop nodes RemovePodsHavingTooManyRestarts found (DS-RST-1), as the plan shows them: `crashLoopNodes`
in its JSON (in every plan, empty when there is none or the strategy is not configured), a Warning Event on each
node the first cycle it is found, and the gauge `nodemedic_crash_loop_node` while it lasts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

from remediator.model.migration import Gain
from remediator.model.plan import NodeNotice, Nomination, StrategyReport

# The notification's kind (alerts/alert.py) and the Event's reason.
ALERT_KIND = "CrashLoopNode"
EVENT_REASON = "NodemedicCrashLoopNode"


@dataclass(frozen=True)
class CrashLoopNode:
    """One node holds the restarting replicas of a workload whose replicas on other nodes are healthy: a problem of
    the node that no check of the agent sees."""

    node: str
    namespace: str
    owner: str  # "ReplicaSet/web-7d9f"
    restarting: tuple[str, ...]  # names of the owner's pods on the node at or over the threshold
    healthy_elsewhere: int  # the owner's running pods on other nodes under the threshold

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.node, self.namespace, self.owner)

    def describe(self) -> str:
        return (f"{len(self.restarting)} pod(s) of {self.namespace}/{self.owner} restart on {self.node} "
                f"while {self.healthy_elsewhere} on other nodes are healthy")


@dataclass(frozen=True)
class CrashLoopNodes:
    nodes: tuple[CrashLoopNode, ...] = ()

    @property
    def json_key(self) -> str:
        return "crashLoopNodes"

    def to_json(self) -> object:
        return [{"node": c.node, "namespace": c.namespace, "owner": c.owner, "pods": list(c.restarting),
                 "healthyElsewhere": c.healthy_elsewhere} for c in self.nodes]

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return [NodeNotice(c.key, c.node, ALERT_KIND, EVENT_REASON, c.describe(),
                           (("namespace", c.namespace), ("owner", c.owner), ("pods", ",".join(c.restarting))))
                for c in self.nodes]

    def nominations(self) -> Sequence[Nomination]:
        return ()

    def gain(self) -> Gain | None:
        return None


NONE_FOUND = CrashLoopNodes()


def report_metrics(registry: CollectorRegistry) -> Callable[[StrategyReport], None]:
    """The gauge: one series per crash-loop node of the latest plan, each gone with its crash loop."""
    gauge = Gauge("nodemedic_crash_loop_node", "Pods of a workload restarting on this node while its pods on other "
                  "nodes are healthy (RemovePodsHavingTooManyRestarts)", ["node", "namespace", "owner"],
                  registry=registry)
    shown: set[tuple[str, str, str]] = set()

    def show(report: StrategyReport) -> None:
        assert isinstance(report, CrashLoopNodes)
        current = {c.key: c for c in report.nodes}
        for key in shown - set(current):
            gauge.remove(*key)
        for key, c in sorted(current.items()):
            gauge.labels(*key).set(len(c.restarting))
        shown.clear()
        shown.update(current)
    return show
