"""What `nodemedic-remediator plan --kubeconfig` reads of the cluster, once: its nodes, pods, PDBs, priority classes
and claims, each object read into the snapshot's records as its page comes (what `plan --snapshot` reads from a
file: remediator/state/snapshot_parts.py), the measured usage the policy asks for, and the node autoscalers found.

The five lists are read at once, in pages of POD_PAGE objects (the pod informer's), each page asked for while the one
before is decoded (Kube.list_pages): the API server encodes while this process decodes, and no more than a page is
held as JSON."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from nodemedic_common.json_kinds import json_kind
from nodemedic_common.kube_client import Kube
from remediator.policy.model import Policy
from remediator.state.autoscaler_detection import detect
from remediator.state.caches import POD_PAGE
from remediator.state.credentials import load_credentials
from remediator.state.measured.reader import UsageReader
from remediator.state.snapshot import MeasuredUsage, NodeAutoscaler
from remediator.state.snapshot_parts import SnapshotParts

LISTS = (("/api/v1/nodes", "Node"), ("/api/v1/pods", "Pod"),
         ("/apis/policy/v1/poddisruptionbudgets", "PodDisruptionBudget"),
         ("/apis/scheduling.k8s.io/v1/priorityclasses", "PriorityClass"),
         ("/api/v1/persistentvolumeclaims", "PersistentVolumeClaim"))


@dataclass(frozen=True)
class LiveCluster:
    """What `plan --kubeconfig` reads of the cluster, once."""

    parts: SnapshotParts  # the cluster's objects, as the snapshot's records
    measured: MeasuredUsage  # the usage the policy's strategies measure (nothing when none does)
    autoscalers: frozenset[NodeAutoscaler]  # the node autoscalers found (looked for only for addsNodes: auto)
    unanswered: list[str]  # why an autoscaler could not be looked for (counted as not found)


async def read_live_cluster(kubeconfig: str, policy: Policy, now: dt.datetime, secrets_dir: str, *,
                            detect_autoscalers: bool) -> LiveCluster:
    """`detect_autoscalers`: look for the node autoscalers too."""
    kube = Kube(load_credentials(kubeconfig), registry=CollectorRegistry())
    parts = SnapshotParts()
    usage = UsageReader(kube, registry=CollectorRegistry(), log=logging.getLogger("nodemedic.remediator"),
                        secrets_dir=secrets_dir)
    try:
        await asyncio.gather(*(_read(kube, path, kind, parts) for path, kind in LISTS))
        measured = await usage.read(policy, list(parts.nodes), now)
        probes = await detect(kube, now, policy.autoscaler.active_within) if detect_autoscalers else {}
    finally:
        await usage.close()
        await kube.close()
    return LiveCluster(parts, measured, frozenset(a for a, probe in probes.items() if probe.present),
                       [f"{a}: {probe.evidence}" for a, probe in probes.items() if probe.present is None])


async def _read(kube: Kube, path: str, kind: str, parts: SnapshotParts) -> None:
    async for page in kube.list_pages(path, page_size=POD_PAGE):
        for obj in list_items(page, path):
            obj["kind"] = kind  # list items carry no kind
            parts.add(obj)  # an odd field reads as its default (records.py), never an exception


def list_items(answer: object, path: str) -> list[dict[str, Any]]:
    """The items of a LIST answer; ValueError naming the path and field when it is not a Kubernetes list (a proxy,
    a mock or an aggregated API answering something else must not become a traceback)."""
    if not isinstance(answer, dict):
        raise ValueError(f"GET {path}: not a Kubernetes list: the answer is {json_kind(answer)}, not an object")
    items = answer.get("items")
    if items is None:
        return []  # an empty list is sent as `items: null` by some servers
    if not isinstance(items, list):
        raise ValueError(f"GET {path}: not a Kubernetes list: items is {json_kind(items)}, not a list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"GET {path}: not a Kubernetes list: items[{i}] is {json_kind(item)}, not an object")
    return items
