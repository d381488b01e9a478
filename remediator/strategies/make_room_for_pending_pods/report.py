"""What the placement engine saw and did, as the plan shows it: `fragmentation` in its JSON, the gauges
`nodemedic_fragmentation_pending_pods` and `nodemedic_fragmentation_stranded`, and a nomination of each pending pod
it made room for (before its evictions; none of them without it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Gauge

from remediator.model.migration import Gain
from remediator.model.plan import NodeNotice, Nomination, StrategyReport
from remediator.model.records import PodRecord

EVENT_REASON = "NodemedicMakingRoom"  # the Event on a pending pod it nominates


@dataclass(frozen=True)
class MadeRoom:
    pod: PodRecord  # the pending pod
    node: str  # the node the plan's evictions free for it
    moved: tuple[str, ...]  # keys of the pods evicted for it


@dataclass(frozen=True)
class Fragmentation:
    """Pods pending although the cluster has room for them, only not on one node."""

    pending: tuple[PodRecord, ...]  # unschedulable for insufficient resources, yet their pool's free room adds up
    stranded: dict[str, int]  # per resource: free room on the nodes of those pods' pools
    made_room: tuple[MadeRoom, ...] = ()

    @property
    def json_key(self) -> str:
        return "fragmentation"

    def to_json(self) -> object:
        return {"pending": [{"namespace": p.namespace, "name": p.name} for p in self.pending],
                "stranded": dict(self.stranded),
                "madeRoom": [{"namespace": m.pod.namespace, "name": m.pod.name, "node": m.node, "moved": list(m.moved)}
                             for m in self.made_room]}

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return ()

    def nominations(self) -> Sequence[Nomination]:
        return [Nomination(m.pod, m.node, m.moved, EVENT_REASON, "pending because free room is split across nodes: "
                                                                 f"nodemedic moves pods to free {m.node}")
                for m in self.made_room]

    def gain(self) -> Gain | None:
        return Gain("pending pods seated", len(self.pending), len(self.pending) - len(self.made_room))


def report_metrics(registry: CollectorRegistry) -> Callable[[StrategyReport], None]:
    pending = Gauge("nodemedic_fragmentation_pending_pods", "Pods pending for resources although their pool's free "
                    "room adds up to their requests (MakeRoomForPendingPods)", registry=registry)
    stranded = Gauge("nodemedic_fragmentation_stranded", "Free room on the pools of pods pending for fragmentation "
                     "(cpu in millicores, memory in bytes)", ["resource"], registry=registry)

    def show(report: StrategyReport) -> None:
        assert isinstance(report, Fragmentation)
        pending.set(len(report.pending))
        for resource in ("cpu", "memory"):
            stranded.labels(resource).set(report.stranded.get(resource, 0))
    return show
