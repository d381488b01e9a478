"""The pods on this agent's Node that are being deleted, kept current by one watch (the reporting side's only read
besides its Node).

LIST then WATCH `pods?fieldSelector=spec.nodeName=<node>` (the same selector the kubelet uses, indexed in the API
server's watch cache), resuming from the last resourceVersion, with bookmarks; a 410 Gone starts over with a LIST.
API cost: one LIST of the node's own pods (at most its pod capacity, 110 by default) per (re)connect, one
long-running watch connection, and one watch event per change of a pod on this node; no polling. Memory: only the
pods that carry a deletionTimestamp are kept, as plain (namespace/name -> deletion time) data for the
`stuck_pods` check, which knows nothing of Kubernetes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any
from urllib.parse import quote

from agent.reporting.kube import Kube, StreamLineTooLong
from nodemedic_common.kube_transport import ApiError

WATCH_SECONDS = 300  # the API server ends a watch after this; we resume from the last resourceVersion


class PodWatch:
    def __init__(self, kube: Kube, node: str, *, log: logging.Logger, retry: float = 5.0) -> None:
        self._kube = kube
        self._selector = quote(f"spec.nodeName={node}", safe="")
        self._log = log
        self._retry = retry
        self._deleting: dict[str, tuple[str, dt.datetime]] = {}  # uid -> (namespace/name, deletionTimestamp)
        self.synced = False

    def terminating(self) -> dict[str, dt.datetime] | None:
        """namespace/name -> deletionTimestamp of this node's pods being deleted; None before the first LIST."""
        return dict(self._deleting.values()) if self.synced else None

    async def run(self) -> None:
        version = ""
        while True:
            try:
                if not version:
                    version = await self._list()
                version = await self._watch(version)
            except ApiError as e:
                if e.status == 410:
                    version = ""  # too old: start over from a fresh LIST
                    continue
                if isinstance(e, StreamLineTooLong):
                    # Resuming from `version` would read the same event again: a LIST (no line bound) gets past it.
                    self._log.error("pod watch event over the line bound, relisting", extra={"error": str(e)})
                    version = ""
                else:
                    self._log.warning("pod watch failed", extra={"error": str(e)})
                await asyncio.sleep(self._retry)

    async def _list(self) -> str:
        body = await self._kube.request("GET", f"/api/v1/pods?fieldSelector={self._selector}")
        self._deleting = {}
        for pod in body.get("items") or []:
            self._apply("ADDED", pod)
        self.synced = True
        return str((body.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch(self, version: str) -> str:
        path = (f"/api/v1/pods?watch=true&allowWatchBookmarks=true&fieldSelector={self._selector}"
                f"&resourceVersion={version}&timeoutSeconds={WATCH_SECONDS}")
        async for event in self._kube.stream(path, read_timeout=WATCH_SECONDS + 30):
            if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                raise ApiError(0, "WATCH", path, f"not a watch event: {str(event)[:100]}")
            kind, obj = event.get("type"), event["object"]
            if kind == "ERROR":
                code = obj.get("code")
                raise ApiError(code if isinstance(code, int) else 0, "WATCH", path, str(obj.get("message", "")))
            version = str((obj.get("metadata") or {}).get("resourceVersion", version))
            if kind != "BOOKMARK":
                self._apply(str(kind), obj)
        return version

    def _apply(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        stamp = meta.get("deletionTimestamp")
        if kind == "DELETED" or not stamp:
            self._deleting.pop(uid, None)
            return
        try:
            at = dt.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        except ValueError:
            return
        if at.tzinfo is None:
            return  # not a time the API server writes; the stuck-pods check subtracts it from an aware `now`
        self._deleting[uid] = (f"{meta.get('namespace')}/{meta.get('name')}", at)
