"""Usage from the `metrics.k8s.io/v1beta1` API (metrics-server, or any server registered for it as an APIService).

metrics.k8s.io has no watch: the reader LISTs `/apis/metrics.k8s.io/v1beta1/nodes` and `/pods` (every namespace),
two requests per refresh, answered by the metrics server from memory. A sample older than `max_age` (its timestamp
plus its window, against the time of the cycle) is dropped: unknown, never usage.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from nodemedic_common.kube_client import Kube
from remediator.state import quantity
from remediator.state.records import parse_time

BASE = "/apis/metrics.k8s.io/v1beta1"
NODES, PODS = f"{BASE}/nodes", f"{BASE}/pods"
_MEASURED = ("cpu", "memory")

Usage = dict[str, dict[str, int]]


async def list_metrics(kube: Kube) -> list[dict[str, Any]]:
    """NodeMetrics and PodMetrics items, each with its `kind` (list items carry none)."""
    items: list[dict[str, Any]] = []
    for path, kind in ((NODES, "NodeMetrics"), (PODS, "PodMetrics")):
        for obj in (await kube.get(path)).get("items") or []:
            obj["kind"] = kind
            items.append(obj)
    return items


def usage_from_items(items: Iterable[dict[str, Any]], *, now: dt.datetime,
                     max_age: dt.timedelta) -> tuple[Usage, Usage, int]:
    """(node -> usage, "namespace/name" -> usage, samples dropped as stale or unreadable) from NodeMetrics and
    PodMetrics objects; other kinds are skipped."""
    nodes: Usage = {}
    pods: Usage = {}
    dropped = 0
    for obj in items:
        kind = obj.get("kind") if isinstance(obj, dict) else None  # a --snapshot file may hold anything
        if kind not in ("NodeMetrics", "PodMetrics"):
            continue
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        name = meta.get("name")
        if not isinstance(name, str) or not _fresh(obj, now, max_age):
            dropped += 1
            continue
        if kind == "NodeMetrics":
            usage = _usage([obj.get("usage")])
            if usage is None:
                dropped += 1
            else:
                nodes[name] = usage
            continue
        containers = obj.get("containers")
        usage = _usage([c.get("usage") for c in containers if isinstance(c, dict)]) \
            if isinstance(containers, list) and containers else None
        if usage is None:
            dropped += 1
        else:
            pods[f"{meta.get('namespace', '')}/{name}"] = usage
    return nodes, pods, dropped


def _fresh(obj: dict[str, Any], now: dt.datetime, max_age: dt.timedelta) -> bool:
    stamp = parse_time(obj.get("timestamp"))
    if stamp is None:
        return False
    return now - stamp <= max_age


def _usage(lists: list[Any]) -> dict[str, int] | None:
    """The sum of resource lists, cpu in millicores and memory in bytes; None when one lacks cpu or memory (as
    descheduler, which will not count a pod some of whose containers were not measured)."""
    total = dict.fromkeys(_MEASURED, 0)
    for raw in lists:
        parsed = quantity.resources(raw if isinstance(raw, dict) else None)
        if any(r not in parsed for r in _MEASURED):
            return None
        for r in _MEASURED:
            total[r] += parsed[r]
    return total
