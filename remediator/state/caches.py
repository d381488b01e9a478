"""list+watch caches of nodes, pods, PDBs, PriorityClasses and PVCs as slim records, indexed by node and by owner.

Each resource is listed once, then watched from the list's resourceVersion (bookmarks keep it fresh) by the
list+watch loop both programs share (nodemedic_common/informer.py): a 410 Gone relists, any other error re-watches
from the last resourceVersion after a back-off. In steady state the remediator makes no LIST requests. `changed` is
set on every change so the controller wakes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from nodemedic_common.informer import Informer
from nodemedic_common.kube_client import Kube
from remediator.model.records import NodeRecord, PdbRecord, PodRecord
from remediator.state import records
from remediator.state.derived import Derived
from remediator.state.snapshot import NodeAutoscaler, Snapshot
from remediator.state.snapshot_parts import SnapshotParts

POD_PAGE = 500
SlimPod = tuple[PodRecord, tuple[str, ...]]  # the record, and the times it keeps as unknown (logged once)


def slim_pod(obj: dict[str, Any]) -> SlimPod:
    """All the cache keeps of a pod: its record, and why a time of it is unknown (read only when one is)."""
    rec = records.pod(obj)
    unknown = rec.created is None or rec.start_time is None or any(
        c.seconds_after_created is None for c in rec.conditions)
    return rec, tuple(records.unusable_times(obj)) if unknown else ()


class ClusterCache:
    def __init__(self, kube: Kube, *, log: logging.Logger,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self.clock = clock
        self.nodes: dict[str, NodeRecord] = {}
        self.pods: dict[str, PodRecord] = {}  # "ns/name" -> record
        self.pods_by_node: dict[str, dict[str, PodRecord]] = {}
        self.pods_by_owner: dict[str, dict[str, PodRecord]] = {}
        self.pending: dict[str, PodRecord] = {}  # pods without a node yet
        self.pdbs: dict[str, PdbRecord] = {}
        self.priority_classes: dict[str, int] = {}  # for evictor.priorityThreshold.name
        self.claim_classes: dict[str, str] = {}  # PVC "ns/name" -> storage class, for evictor.protectedStorageClasses
        self.raw_nodes: dict[str, dict[str, Any]] = {}  # annotations/taints the taint writer patches from
        # The pod lists the last snapshot was handed, by node and by owner, and the nodes and owners whose pods changed
        # since: an unchanged one's list is handed again, the very object, so what planning worked out from it is kept
        # (derived.py; at 65,000 nodes the lists alone are 2,000,000 references to copy every cycle).
        self._node_lists: dict[str, list[PodRecord]] = {}
        self._owner_lists: dict[str, list[PodRecord]] = {}
        self._changed_nodes: set[str] = set()
        self._changed_owners: set[str] = set()
        self.derived = Derived()
        self.log = log
        # Node or pod key -> the unusable times last logged for it: each object's problem is logged once, not at
        # every watch event (a node's heartbeat would repeat it every few seconds).
        self.time_problems: dict[str, tuple[str, ...]] = {}
        self.changed = asyncio.Event()
        self.informers = [
            Informer(kube, "/api/v1/nodes", reset=self._reset_nodes, apply=self._apply_node, log=log),
            # Pods slimmed to records page by page, 500 a page (client-go's page too): holding 30,000 decoded pods
            # took 664 MiB that the allocator never gave back, 5,000 a page 194 MiB, 500 a page 109 MiB.
            Informer(kube, "/api/v1/pods", reset=self._reset_pods, apply=self._apply_pod, log=log, slim=slim_pod,
                     page_size=POD_PAGE),
            Informer(kube, "/apis/policy/v1/poddisruptionbudgets", reset=self._reset_pdbs, apply=self._apply_pdb,
                     log=log),
            Informer(kube, "/apis/scheduling.k8s.io/v1/priorityclasses", reset=self._reset_priority_classes,
                     apply=self._apply_priority_class, log=log),
            Informer(kube, "/api/v1/persistentvolumeclaims", reset=self._reset_claims, apply=self._apply_claim,
                     log=log),
        ]

    async def run(self) -> None:
        await asyncio.gather(*(i.run() for i in self.informers))

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self.informers))

    # --- nodes ---------------------------------------------------------------------------------
    def _reset_nodes(self, items: list[dict[str, Any]]) -> None:
        previous = dict(self.nodes)  # a relist keeps what the watch saw of conditions that did not change
        self.nodes.clear()
        self.raw_nodes.clear()
        for obj in items:
            self._apply_node("ADDED", obj, previous)

    def _apply_node(self, kind: str, obj: dict[str, Any], previous: dict[str, NodeRecord] | None = None) -> None:
        rec = records.node(obj)
        rec = _stamp_observed(rec, (self.nodes if previous is None else previous).get(rec.name), self.clock())
        if kind == "DELETED":
            self.nodes.pop(rec.name, None)
            self.raw_nodes.pop(rec.name, None)
            self.time_problems.pop(f"node/{rec.name}", None)
        else:
            if rec.created is None or any(c.last_transition is None for c in rec.conditions):
                self._note_problems(f"node/{rec.name}", tuple(records.unusable_times(obj)))
            self.nodes[rec.name] = rec
            meta = obj.get("metadata") or {}
            self.raw_nodes[rec.name] = {"resourceVersion": meta.get("resourceVersion", ""),
                                        "taints": (obj.get("spec") or {}).get("taints") or []}
        self.changed.set()

    # --- pods ----------------------------------------------------------------------------------
    def _reset_pods(self, items: list[SlimPod]) -> None:
        self.pods.clear()
        self.pods_by_node.clear()
        self.pods_by_owner.clear()
        self.pending.clear()
        self._node_lists.clear()
        self._owner_lists.clear()
        for rec, problems in items:
            self._put_pod("ADDED", rec, problems)

    def _unindex(self, rec: PodRecord) -> None:
        self.pending.pop(rec.key, None)
        self._changed_nodes.add(rec.node_name)
        self._changed_owners.update(o.uid for o in rec.owners)
        by_node = self.pods_by_node.get(rec.node_name)
        if by_node is not None:
            by_node.pop(rec.key, None)
            if not by_node:
                del self.pods_by_node[rec.node_name]
        for o in rec.owners:
            by_owner = self.pods_by_owner.get(o.uid)
            if by_owner is not None:
                by_owner.pop(rec.key, None)
                if not by_owner:
                    del self.pods_by_owner[o.uid]

    def _apply_pod(self, kind: str, obj: dict[str, Any]) -> None:
        self._put_pod(kind, *slim_pod(obj))

    def _put_pod(self, kind: str, rec: PodRecord, problems: tuple[str, ...]) -> None:
        old = self.pods.pop(rec.key, None)
        if old is not None:
            self._unindex(old)
        if kind == "DELETED":
            self.time_problems.pop(f"pod/{rec.key}", None)
        else:
            self._note_problems(f"pod/{rec.key}", problems)
            self.pods[rec.key] = rec
            if rec.node_name:
                self.pods_by_node.setdefault(rec.node_name, {})[rec.key] = rec
                self._changed_nodes.add(rec.node_name)
            else:
                self.pending[rec.key] = rec
            for o in rec.owners:
                self.pods_by_owner.setdefault(o.uid, {})[rec.key] = rec
                self._changed_owners.add(o.uid)
        self.changed.set()

    def _note_problems(self, key: str, problems: tuple[str, ...]) -> None:
        """Log, once per object and problem, the times its record keeps as unknown (records.parse_time): planning
        goes on without them, and this says why that object is treated as it is."""
        if not problems:
            self.time_problems.pop(key, None)
            return
        if self.time_problems.get(key) != problems:
            self.log.warning("unusable times treated as unknown", extra={"object": key, "problems": list(problems)})
        self.time_problems[key] = problems

    # --- PDBs ----------------------------------------------------------------------------------
    def _reset_pdbs(self, items: list[dict[str, Any]]) -> None:
        self.pdbs.clear()
        for obj in items:
            self._apply_pdb("ADDED", obj)

    def _apply_pdb(self, kind: str, obj: dict[str, Any]) -> None:
        rec = records.pdb(obj)
        key = f"{rec.namespace}/{rec.name}"
        if kind == "DELETED":
            self.pdbs.pop(key, None)
        else:
            self.pdbs[key] = rec
        self.changed.set()

    # --- PriorityClasses -------------------------------------------------------------------------
    def _reset_priority_classes(self, items: list[dict[str, Any]]) -> None:
        self.priority_classes.clear()
        for obj in items:
            self._apply_priority_class("ADDED", obj)

    def _apply_priority_class(self, kind: str, obj: dict[str, Any]) -> None:
        rec = records.priority_class(obj)
        if kind == "DELETED" or rec is None:
            self.priority_classes.pop(str((obj.get("metadata") or {}).get("name", "")), None)
        else:
            self.priority_classes[rec[0]] = rec[1]
        self.changed.set()

    # --- PersistentVolumeClaims: only their storage class -------------------------------------------
    def _reset_claims(self, items: list[dict[str, Any]]) -> None:
        self.claim_classes.clear()
        for obj in items:
            self._apply_claim("ADDED", obj)

    def _apply_claim(self, kind: str, obj: dict[str, Any]) -> None:
        key, storage_class = records.claim_class(obj)
        if kind == "DELETED":
            self.claim_classes.pop(key, None)
        else:
            self.claim_classes[key] = storage_class
        self.changed.set()

    def snapshot(self, now: dt.datetime, *, autoscalers: frozenset[NodeAutoscaler] = frozenset()) -> Snapshot:
        """`autoscalers`: the node autoscalers found in the cluster (autoscaler_detection.py)."""
        pods_by_node = _lists(self.pods_by_node, self._node_lists, self._changed_nodes)
        pods_by_owner = _lists(self.pods_by_owner, self._owner_lists, self._changed_owners)
        self.derived.keep_only(pods_by_node)
        return Snapshot(
            now=now,
            nodes=dict(self.nodes),
            pods_by_node=pods_by_node,
            pods_by_owner=pods_by_owner,
            pdbs=list(self.pdbs.values()),
            priority_classes=dict(self.priority_classes),
            claim_classes=dict(self.claim_classes),
            pending=list(self.pending.values()),
            autoscalers=autoscalers,
            derived=self.derived,
        )


def _lists(pods: dict[str, dict[str, PodRecord]], handed: dict[str, list[PodRecord]],
           changed: set[str]) -> dict[str, list[PodRecord]]:
    """Key -> its pods as a list, in `pods`' order: a new list for a key in `changed` (then emptied) or never handed
    out, the one handed out last time otherwise."""
    for key in changed:
        if key in pods:
            handed[key] = list(pods[key].values())
        else:
            handed.pop(key, None)
    changed.clear()
    out = {}
    for key, by_key in pods.items():
        kept = handed.get(key)
        if kept is None:
            kept = handed[key] = list(by_key.values())
        out[key] = kept
    return out


def _stamp_observed(rec: NodeRecord, previous: NodeRecord | None, now: dt.datetime) -> NodeRecord:
    """Carry each condition's `observed_at` while its status and lastTransitionTime stay; stamp `now` on a new one.
    A condition first seen in a (re)list gets the list's time: we cannot tell how long before that it changed."""
    before = {c.type: c for c in previous.conditions} if previous is not None else {}
    conditions = []
    for c in rec.conditions:
        old = before.get(c.type)
        seen = old.observed_at if old is not None and (old.status, old.last_transition) == (
            c.status, c.last_transition) else now
        conditions.append(dataclasses.replace(c, observed_at=seen))
    return dataclasses.replace(rec, conditions=tuple(conditions))


def snapshot_from_list(doc: dict[str, Any], now: dt.datetime, warn: Callable[[str], None] | None = None, *,
                       autoscalers: frozenset[NodeAutoscaler] = frozenset()) -> Snapshot:
    """A Snapshot from `kubectl get nodes,pods,pdb,priorityclasses,pvc -A -o json` output (a `kind: List`).
    ValueError when `doc` is not such a list; an item that is not an object is skipped, like any odd data.
    `warn` is told "items[i] (Kind name): field: problem" for each time planning treats as unknown. `autoscalers`: the
    node autoscalers the cluster runs (a list of objects does not show them: detected, or said by the user)."""
    parts = SnapshotParts()
    for index, obj in enumerate(_list_items(doc)):
        if warn is not None and isinstance(obj, dict) and obj.get("kind") in ("Node", "Pod"):
            _warn_times(warn, f"items[{index}]", obj)
        parts.add(obj)
    return parts.snapshot(now, autoscalers=autoscalers)


def _warn_times(warn: Callable[[str], None], where: str, obj: dict[str, Any]) -> None:
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    for problem in records.unusable_times(obj):
        warn(f"{where} ({obj.get('kind')} {name}): {problem}: treated as unknown")


def _list_items(doc: object) -> list[Any]:
    """The items of a `kind: List` document (a file the user gives `plan`: any JSON); ValueError naming the shape."""
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object with `items` (kubectl's `kind: List`), not a {type(doc).__name__}")
    items = doc.get("items")
    if not isinstance(items, list | None):
        raise ValueError(f"`items` must be a list, not {type(items).__name__}")
    return items or []
