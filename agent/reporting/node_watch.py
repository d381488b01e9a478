"""One annotation of this agent's own Node (the remediator's repair ask), kept current by one watch.

LIST then WATCH `nodes?fieldSelector=metadata.name=<node>` (one object, served from the API server's watch cache),
resuming from the last resourceVersion, with bookmarks; a 410 Gone, or an event over the line bound, starts over
with a LIST. API cost: one LIST of one Node per (re)connect and one long-running watch connection that receives this
Node's changes (the kubelet's and this agent's own status writes, a few every five minutes); no polling. Memory:
only the annotation's text, cut past the contract's size bound (a longer one is refused as too long anyway).

RBAC cannot grant "the node this pod runs on" for list/watch: the agent may list and watch every Node, and asks
for its own only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import quote

from agent.reporting.kube import Kube, StreamLineTooLong
from nodemedic_common.kube_transport import ApiError
from nodemedic_common.repair_contract import MAX_ANNOTATION_BYTES

WATCH_SECONDS = 300  # the API server ends a watch after this; we resume from the last resourceVersion


class NodeWatch:
    def __init__(self, kube: Kube, node: str, *, annotation: str, log: logging.Logger, retry: float = 5.0) -> None:
        self._kube = kube
        self._node = node
        self._selector = quote(f"metadata.name={node}", safe="")
        self._annotation = annotation
        self._log = log
        self._retry = retry
        self.text: str | None = None  # the annotation's text; None while the Node has none
        self.generation = 0  # bumped at the first LIST and at every change of `text`
        self._changed = asyncio.Event()  # replaced at each change: every waiter of the old one wakes

    async def wait_change(self, after: int) -> tuple[int, str | None]:
        """Once `generation` is past `after` (the first LIST done, or the text changed since): it and the text."""
        while self.generation <= after:
            await self._changed.wait()
        return self.generation, self.text

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
                    self._log.error("node watch event over the line bound, relisting", extra={"error": str(e)})
                    version = ""
                else:
                    self._log.warning("node watch failed", extra={"error": str(e)})
                await asyncio.sleep(self._retry)

    async def _list(self) -> str:
        body = await self._kube.request("GET", f"/api/v1/nodes?fieldSelector={self._selector}")
        if not isinstance(body, dict):
            raise ApiError(0, "GET", "/api/v1/nodes", f"not a list: {str(body)[:100]}")
        items = [n for n in body.get("items") or [] if isinstance(n, dict)]
        self._take(items[0] if items else None, first=self.generation == 0)
        return str((body.get("metadata") or {}).get("resourceVersion", ""))

    async def _watch(self, version: str) -> str:
        path = (f"/api/v1/nodes?watch=true&allowWatchBookmarks=true&fieldSelector={self._selector}"
                f"&resourceVersion={version}&timeoutSeconds={WATCH_SECONDS}")
        async for event in self._kube.stream(path, read_timeout=WATCH_SECONDS + 30):
            if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                raise ApiError(0, "WATCH", path, f"not a watch event: {str(event)[:100]}")
            kind, obj = event.get("type"), event["object"]
            if kind == "ERROR":
                code = obj.get("code")
                raise ApiError(code if isinstance(code, int) else 0, "WATCH", path, str(obj.get("message", "")))
            version = str((obj.get("metadata") or {}).get("resourceVersion", version))
            if kind == "DELETED":
                self._take(None)
            elif kind != "BOOKMARK":
                self._take(obj)
        return version

    def _take(self, node: dict[str, Any] | None, *, first: bool = False) -> None:
        meta = (node or {}).get("metadata")
        annotations = meta.get("annotations") if isinstance(meta, dict) else None
        value = annotations.get(self._annotation) if isinstance(annotations, dict) else None
        text = value[:MAX_ANNOTATION_BYTES + 1] if isinstance(value, str) else None
        if text == self.text and not first:
            return
        self.text = text
        self.generation += 1
        self._changed.set()
        self._changed = asyncio.Event()
