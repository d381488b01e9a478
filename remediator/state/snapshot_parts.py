"""A Snapshot built one listed object at a time: from a `kind: List` file (`plan --snapshot`, snapshot_from_list in
caches.py) and from the cluster's lists as their pages come (`plan --kubeconfig`, live_cluster.py), so that the one-
shot never holds the whole cluster as decoded JSON and both read an object the same way."""

from __future__ import annotations

import datetime as dt
from typing import Any

from remediator.model.records import NodeRecord, PdbRecord, PodRecord
from remediator.state import records
from remediator.state.snapshot import NodeAutoscaler, Snapshot


class SnapshotParts:
    def __init__(self) -> None:
        self.nodes: dict[str, NodeRecord] = {}
        self.by_node: dict[str, list[PodRecord]] = {}
        self.by_owner: dict[str, list[PodRecord]] = {}
        self.pdbs: list[PdbRecord] = []
        self.priority_classes: dict[str, int] = {}
        self.claim_classes: dict[str, str] = {}
        self.pending: list[PodRecord] = []

    def add(self, obj: Any) -> None:
        """One object, by its `kind` (Node, Pod, PodDisruptionBudget, PriorityClass, PersistentVolumeClaim); any
        other kind, or anything that is not an object, is passed over like any odd data."""
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind == "Node":
            n = records.node(obj)
            self.nodes[n.name] = n
        elif kind == "Pod":
            p = records.pod(obj)
            if p.node_name:
                self.by_node.setdefault(p.node_name, []).append(p)
            else:
                self.pending.append(p)
            for o in p.owners:
                self.by_owner.setdefault(o.uid, []).append(p)
        elif kind == "PodDisruptionBudget":
            self.pdbs.append(records.pdb(obj))
        elif kind == "PriorityClass" and (rec := records.priority_class(obj)) is not None:
            self.priority_classes[rec[0]] = rec[1]
        elif kind == "PersistentVolumeClaim":
            key, storage_class = records.claim_class(obj)
            self.claim_classes[key] = storage_class

    def snapshot(self, now: dt.datetime, *, autoscalers: frozenset[NodeAutoscaler] = frozenset()) -> Snapshot:
        return Snapshot(now=now, nodes=self.nodes, pods_by_node=self.by_node, pods_by_owner=self.by_owner,
                        pdbs=self.pdbs, priority_classes=self.priority_classes, claim_classes=self.claim_classes,
                        pending=self.pending, autoscalers=autoscalers)
