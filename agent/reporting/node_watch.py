"""One annotation of this agent's own Node (the remediator's repair ask), kept current by one watch.

LIST then WATCH `nodes?fieldSelector=metadata.name=<node>` (one object, served from the API server's watch cache)
through the list+watch loop both programs share (nodemedic_common/informer.py): resumed from the last
resourceVersion, with bookmarks; a 410 Gone, or an event over the line bound, starts over with a LIST. API cost:
one LIST of one Node per (re)connect and one long-running watch connection that receives this Node's changes (the
kubelet's and this agent's own status writes, a few every five minutes); no polling. Each comes as the Node's
metadata alone (PartialObjectMetadata): its status (conditions, images, a 15 KB event on a node with a few dozen
conditions) is neither sent nor decoded. Memory: only the annotation's text, cut past the contract's size bound (a
longer one is refused as too long anyway).

RBAC cannot grant "the node this pod runs on" for list/watch: the agent may list and watch every Node, and asks
for its own only.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from nodemedic_common.informer import Backoff, Informer
from nodemedic_common.kube_client import Kube
from nodemedic_common.repair_contract import MAX_ANNOTATION_BYTES


class NodeWatch:
    def __init__(self, kube: Kube, node: str, *, annotation: str, log: logging.Logger, retry: float = 5.0) -> None:
        """`retry`: the seconds to wait (with jitter) after a failed watch."""
        self._informer = Informer(
            kube, "/api/v1/nodes", params={"fieldSelector": f"metadata.name={node}"}, log=log,
            backoff=Backoff(retry, retry), metadata_only=True,
            reset=lambda items: self._take(items[0] if items else None, first=self.generation == 0),
            apply=lambda kind, obj: self._take(None if kind == "DELETED" else obj))
        self._annotation = annotation
        self.text: str | None = None  # the annotation's text; None while the Node has none
        self.generation = 0  # bumped at the first LIST and at every change of `text`
        self._changed = asyncio.Event()  # replaced at each change: every waiter of the old one wakes

    async def wait_change(self, after: int) -> tuple[int, str | None]:
        """Once `generation` is past `after` (the first LIST done, or the text changed since): it and the text."""
        while self.generation <= after:
            await self._changed.wait()
        return self.generation, self.text

    async def run(self) -> None:
        await self._informer.run()

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
