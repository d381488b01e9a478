"""The API server's audit log of a cluster started with it on (`_started(..., audit=True)`), with object names: who
made which request, for counting a client's requests and for telling who removed a pod."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from tests.e2e.conftest import LocalCluster


@dataclass(frozen=True)
class Call:
    at: float  # stageTimestamp, seconds since the epoch
    user_agent: str
    verb: str
    resource: str  # "pods/eviction", "nodes", ...
    namespace: str
    name: str
    code: int


def audit_calls(cluster: LocalCluster, since: float = 0.0) -> list[Call]:
    """Every completed request (a watch: when it started) logged at or after `since` (epoch seconds)."""
    assert cluster.owned is not None and cluster.owned.audit
    out = []
    path = cluster.owned.audit_log
    for line in path.read_bytes().splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue  # the line being written
        stage, verb = ev.get("stage"), ev.get("verb", "")
        if (verb == "watch") != (stage == "ResponseStarted") or stage not in ("ResponseStarted", "ResponseComplete"):
            continue
        stamp = ev.get("stageTimestamp", "")
        at = dt.datetime.fromisoformat(stamp).timestamp() if stamp else 0.0
        if at < since:
            continue
        ref = ev.get("objectRef") or {}
        resource = ref.get("resource", "") + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        out.append(Call(at, ev.get("userAgent", ""), verb, resource, ref.get("namespace", ""), ref.get("name", ""),
                        int((ev.get("responseStatus") or {}).get("code", 0))))
    return out


def remediator_calls(calls: list[Call]) -> list[Call]:
    return [c for c in calls if c.user_agent.startswith("nodemedic-remediator")]


def evictions(calls: list[Call]) -> list[Call]:
    """Eviction requests the API server granted (201): each one is a pod evicted."""
    return [c for c in calls if c.verb == "create" and c.resource == "pods/eviction" and c.code == 201]


def pod_removals(calls: list[Call], namespace: str) -> list[str]:
    """Every request that took, or tried to take, a pod of `namespace` away (an eviction, a delete, a delete of
    them all, whatever its answer), one line each: when, by whom (the User-Agent names the controller), what."""
    return [f"{dt.datetime.fromtimestamp(c.at, dt.UTC).isoformat()} {c.verb} {c.resource} "
            f"{c.name or '*'} -> {c.code} by {c.user_agent}"
            for c in calls if c.namespace == namespace and (
                (c.verb == "create" and c.resource == "pods/eviction")
                or (c.verb in ("delete", "deletecollection") and c.resource == "pods"))]
