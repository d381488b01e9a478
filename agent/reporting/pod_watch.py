"""The pods on this agent's Node that are being deleted, kept current by one watch (the reporting side's only read
besides its Node).

LIST then WATCH `pods?fieldSelector=spec.nodeName=<node>` (the same selector the kubelet uses, indexed in the API
server's watch cache) through the list+watch loop both programs share (nodemedic_common/informer.py): resumed from
the last resourceVersion, with bookmarks; a 410 Gone starts over with a LIST.
API cost: one LIST of the node's own pods (at most its pod capacity, 110 by default) per (re)connect, one
long-running watch connection, and one watch event per change of a pod on this node; no polling. Memory: only the
pods that carry a deletionTimestamp are kept, as plain (namespace/name -> deletion time) data for the
`stuck_pods` check, which knows nothing of Kubernetes.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from nodemedic_common.informer import Backoff, Informer
from nodemedic_common.kube_client import Kube


class PodWatch:
    def __init__(self, kube: Kube, node: str, *, log: logging.Logger, retry: float = 5.0) -> None:
        """`retry`: the seconds to wait (with jitter) after a failed watch."""
        self._informer = Informer(kube, "/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node}"},
                                  reset=self._listed, apply=self._apply, log=log, backoff=Backoff(retry, retry))
        self._deleting: dict[str, tuple[str, dt.datetime]] = {}  # uid -> (namespace/name, deletionTimestamp)
        self.synced = False

    def terminating(self) -> dict[str, dt.datetime] | None:
        """namespace/name -> deletionTimestamp of this node's pods being deleted; None before the first LIST."""
        return dict(self._deleting.values()) if self.synced else None

    async def run(self) -> None:
        await self._informer.run()

    def _listed(self, pods: list[dict[str, Any]]) -> None:
        self._deleting = {}
        for pod in pods:
            self._apply("ADDED", pod)
        self.synced = True

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
