"""One consistent view of the cluster for one planning cycle (`Snapshot`), as the caches build it (caches.py) and
`plan --snapshot` reads it: the records of model/records.py, the measured usage and node autoscalers found, and the
indexes the strategies share, each built on first use."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from enum import StrEnum

from remediator.model.records import NO_STATUSES, TERMINAL_PHASES, NodeRecord, PdbRecord, PodRecord
from remediator.state.derived import Derived, NodeNotable
from remediator.state.live_pods import LivePods


@dataclass(frozen=True)
class NotablePods:
    """Per node, the few pods the deschedule strategies look at, found in one pass over the snapshot instead of
    one pass per strategy (150,000 pods in the 5,000-node benchmark, almost all of them in none of these lists)."""

    statuses: dict[str, list[PodRecord]]  # container statuses with something to say, or a terminal phase
    node_affinity: dict[str, list[PodRecord]]  # required or preferred node affinity
    anti_affinity: dict[str, list[PodRecord]]  # required pod anti-affinity
    spreading: dict[str, list[PodRecord]]  # topology spread constraints (DoNotSchedule or ScheduleAnyway)


def _notable(pods: list[PodRecord]) -> NodeNotable:
    statuses, node_affinity, anti_affinity, spreading = [], [], [], []
    for p in pods:
        if p.containers is not NO_STATUSES or p.init_containers is not NO_STATUSES or p.phase in TERMINAL_PHASES:
            statuses.append(p)
        if p.required_node_affinity or p.preferred_node_affinity:
            node_affinity.append(p)
        if p.required_anti_affinity:
            anti_affinity.append(p)
        if p.hard_spread or p.soft_spread:
            spreading.append(p)
    return NodeNotable(statuses, node_affinity, anti_affinity, spreading)


@dataclass(frozen=True)
class MeasuredUsage:
    """Usage a metrics source measured, for the utilization strategies configured with `metricsUtilization`.

    Only fresh samples are here: a node or pod the source did not report, or reported too long ago, is absent, and
    absent means unknown (never zero): a strategy neither relieves, fills nor counts on a node whose usage it does
    not know, and does not evict a pod whose usage it does not know to relieve a node."""

    nodes: dict[str, dict[str, int]] = field(default_factory=dict)  # metrics.k8s.io: node -> cpu (m), memory (B)
    pods: dict[str, dict[str, int]] = field(default_factory=dict)  # metrics.k8s.io: "namespace/name" -> the same
    # Prometheus: query -> node (the sample's `instance` label) -> its value in [0, 1]
    scores: dict[str, dict[str, float]] = field(default_factory=dict)


class NodeAutoscaler(StrEnum):
    """A node autoscaler nodemedic can find in the cluster (state/autoscaler_detection.py), for
    `autoscaler.addsNodes: auto`: the value is the `autoscaler` label of nodemedic_autoscaler_detected."""

    KARPENTER = "karpenter"
    CLUSTER_AUTOSCALER = "cluster-autoscaler"


# Karpenter sets it on every node of a NodePool, and replaces only such nodes.
KARPENTER_NODEPOOL_LABEL = "karpenter.sh/nodepool"


@dataclass
class Snapshot:
    """One consistent view of the cluster for one planning cycle. Strategies must not mutate it."""

    now: dt.datetime
    nodes: dict[str, NodeRecord]
    pods_by_node: dict[str, list[PodRecord]]
    pods_by_owner: dict[str, list[PodRecord]]  # owner UID -> pods (every pod with that owner, any node)
    pdbs: list[PdbRecord] = field(default_factory=list)
    priority_classes: dict[str, int] = field(default_factory=dict)  # PriorityClass name -> value
    claim_classes: dict[str, str] = field(default_factory=dict)  # "ns/name" of a PVC -> storageClassName ("" unset)
    _notable: NotablePods | None = field(default=None, init=False, repr=False, compare=False)
    _live: LivePods | None = field(default=None, init=False, repr=False, compare=False)
    pending: list[PodRecord] = field(default_factory=list)  # pods not bound to a node yet
    measured: MeasuredUsage = field(default_factory=MeasuredUsage)  # only what the policy's strategies ask for
    # The node autoscalers found in the cluster (none when not looked for: `autoscaler.addsNodes` is not auto)
    autoscalers: frozenset[NodeAutoscaler] = frozenset()
    # Values worked out from a node's or an owner's pods, kept across the cycles whose snapshots share that pod list
    derived: Derived = field(default_factory=Derived, repr=False, compare=False)

    def pods(self, node: str) -> list[PodRecord]:
        return self.pods_by_node.get(node, [])

    def notable(self) -> NotablePods:
        """Built on first use and kept with the snapshot (one planning cycle); each node's share is kept across cycles
        while its pods stay the same (derived.py)."""
        if self._notable is None:
            statuses: dict[str, list[PodRecord]] = {}
            node_affinity: dict[str, list[PodRecord]] = {}
            anti_affinity: dict[str, list[PodRecord]] = {}
            spreading: dict[str, list[PodRecord]] = {}
            kept = self.derived.notable
            for node, pods in self.pods_by_node.items():
                n = kept.get(node, pods, _notable)
                if n.statuses:
                    statuses[node] = n.statuses
                if n.node_affinity:
                    node_affinity[node] = n.node_affinity
                if n.anti_affinity:
                    anti_affinity[node] = n.anti_affinity
                if n.spreading:
                    spreading[node] = n.spreading
            self._notable = NotablePods(statuses, node_affinity, anti_affinity, spreading)
        return self._notable

    def live(self) -> LivePods:
        """Built on first use and kept with the snapshot (one planning cycle): the last cycle's when it read the very
        same pods (a quiet cycle: no pod changed anywhere), else the last cycle's patched (live_pods.py)."""
        if self._live is None:
            kept = self.derived.live_pods
            if isinstance(kept, LivePods) and kept.reads(self.pods_by_node):
                self._live = kept
            else:
                self._live = self.derived.live_pods = (
                    LivePods.after(kept, self.pods_by_node, self.derived.live) if isinstance(kept, LivePods)
                    else LivePods(self.pods_by_node, self.derived.live))
        return self._live
