"""Zone spread of a workload: a balance move must not make it worse.

Counts, per owner (controller UID), its live pods per zone (`topology.kubernetes.io/zone`), over the zones of
the cluster's schedulable nodes. A move from zone a to zone b is refused when the owner's skew (most minus
fewest pods in a zone) would end above both its current skew and 1: moves within a zone, moves that even the
spread out, and moves between zones of an already even spread that stay within one pod are all fine.
Hard `DoNotSchedule` constraints are node fit's business (topologyspread.py); this covers every workload,
including those with only `ScheduleAnyway` constraints or none, which the scheduler spreads by default.
"""

from __future__ import annotations

from collections import Counter

from remediator.model.records import NodeRecord, PodRecord
from remediator.state.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"


class ZoneSpread:
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self._zones = sorted({n.labels[ZONE] for n in snapshot.nodes.values()
                              if ZONE in n.labels and not n.unschedulable})
        self._counts: dict[str, Counter[str]] = {}  # owner uid -> zone -> pods, built on first use per owner
        self._moved: dict[str, str] = {}  # pod uid -> planned destination zone ("" without one)
        self._verdicts: dict[tuple[str, str, str], str | None] = {}  # (owner uid, from zone, to zone) -> worse?

    def _zone(self, node: str) -> str:
        record = self._snapshot.nodes.get(node)
        return record.labels.get(ZONE, "") if record is not None else ""

    def _owner_counts(self, owner_uid: str) -> Counter[str]:
        counts = self._counts.get(owner_uid)
        if counts is None:
            counts = Counter(dict.fromkeys(self._zones, 0))
            for p in self._snapshot.pods_by_owner.get(owner_uid, []):
                if not p.live:
                    continue
                zone = self._moved.get(p.uid, self._zone(p.node_name))
                if zone:
                    counts[zone] += 1
            self._counts[owner_uid] = counts
        return counts

    def worse(self, pod: PodRecord, node: object) -> str | None:
        owner = pod.controller
        if owner is None or not isinstance(node, NodeRecord):
            return None
        src, dst = self._moved.get(pod.uid, self._zone(pod.node_name)), node.labels.get(ZONE, "")
        if not src or not dst or src == dst or len(self._zones) < 2:
            return None
        # Asked for every candidate node of every move: the answer per (owner, from, to) holds until one of the
        # owner's pods is planned to move.
        key = (owner.uid, src, dst)
        if key not in self._verdicts:
            self._verdicts[key] = self._worse(owner.uid, src, dst)
        return self._verdicts[key]

    def _worse(self, owner_uid: str, src: str, dst: str) -> str | None:
        counts = self._owner_counts(owner_uid)
        before = max(counts.values()) - min(counts.values())
        after_counts = counts.copy()
        after_counts[src] -= 1
        after_counts[dst] += 1
        after = max(after_counts.values()) - min(after_counts.values())
        if after > max(before, 1):
            return "zone spread"
        return None

    def add(self, pod: PodRecord, node: str) -> None:
        self._shift(pod, self._zone(node))

    def remove(self, pod: PodRecord, node: str) -> None:
        self._shift(pod, self._zone(pod.node_name))
        self._moved.pop(pod.uid, None)

    def _shift(self, pod: PodRecord, zone: str) -> None:
        owner = pod.controller
        current = self._moved.get(pod.uid, self._zone(pod.node_name))
        self._moved[pod.uid] = zone
        if owner is not None:
            for key in [k for k in self._verdicts if k[0] == owner.uid]:
                del self._verdicts[key]
        if owner is None or owner.uid not in self._counts:
            return  # counted from _moved when first needed
        counts = self._counts[owner.uid]
        if current:
            counts[current] -= 1
        if zone:
            counts[zone] += 1
