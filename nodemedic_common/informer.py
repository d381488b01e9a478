"""The one list+watch loop of both programs: LIST a collection (in pages, each asked for while the one before is
decoded: Kube.list_pages), then WATCH it from the LIST's
resourceVersion with bookmarks, resuming from the last resourceVersion each time the server ends the watch. A 410 Gone
relists at once; an event over the line bound relists after a back-off (resuming would read the same event again, and
the object may change again soon); any other failure re-watches from the last resourceVersion (or relists, if the
LIST failed) after a back-off that doubles up to its ceiling, with jitter, so a fleet of agents does not come back in
step. In steady state it makes no LIST requests.

What each user keeps of what it delivers is its own: the remediator's caches (remediator/state/caches.py) keep slim
records, the agent's pod and node watches (agent/reporting/pod_watch.py, node_watch.py) one fact each. A user that
keeps little of each object gives `slim`: a LIST's objects are slimmed page by page, so the whole collection is
never held as decoded JSON at once (30,000 pods took the remediator to 727 MiB that way, and it never gave the
memory back); `reset` still gets the whole list at once, so a cache is never seen half relisted.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodemedic_common.kube_client import PARTIAL_METADATA, PARTIAL_METADATA_LIST, Kube
from nodemedic_common.kube_errors import ApiError, WatchExpired, WatchLineTooLong


@dataclass(frozen=True)
class Backoff:
    """Seconds to wait after a failure: `first`, doubled after each failure in a row up to `most`; each wait is drawn
    between half and one and a half times that."""
    first: float = 0.2
    most: float = 10.0


class Informer:
    """One collection, listed then watched for as long as `run` runs: `reset(objects)` gets every LIST's objects,
    `apply(type, object)` each watch event but bookmarks; `synced` is set once the first LIST is in."""

    def __init__(self, kube: Kube, path: str, *, reset: Callable[[list[Any]], None],
                 apply: Callable[[str, dict[str, Any]], None], log: logging.Logger,
                 params: Mapping[str, str] | None = None, page_size: int = 5000, backoff: Backoff = Backoff(),
                 slim: Callable[[dict[str, Any]], Any] | None = None, metadata_only: bool = False,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`path`: the collection (`/api/v1/pods`); `params`: what narrows it, for the LIST and the WATCH alike
        (`{"fieldSelector": "spec.nodeName=node-a"}`); `slim`: what `reset` gets of each listed object (the object
        itself without it); `metadata_only`: the objects come as their metadata alone (PartialObjectMetadata), for a
        user that reads nothing else: the API server sends, and this process decodes, a fraction of each."""
        self.kube, self.path, self._reset, self._apply, self.log = kube, path, reset, apply, log
        self._slim = slim
        self._watch_accept = PARTIAL_METADATA if metadata_only else "application/json"
        self._list_accept = PARTIAL_METADATA_LIST if metadata_only else "application/json"
        self.params = dict(params or {})
        self.page_size, self.backoff, self._sleep = page_size, backoff, sleep
        self.resource_version = ""
        self.synced = asyncio.Event()

    async def run(self) -> None:
        """Runs until cancelled."""
        delay = self.backoff.first
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    need_list = False
                async for event in self.kube.watch(self.path, self.resource_version, params=self.params,
                                                   accept=self._watch_accept):
                    obj = event["object"]
                    meta = obj.get("metadata")
                    version = meta.get("resourceVersion") if isinstance(meta, dict) else None
                    if version:
                        self.resource_version = str(version)
                    if event.get("type") != "BOOKMARK":
                        self._apply(str(event.get("type")), obj)
                delay = self.backoff.first
                continue
            except WatchExpired:
                self.log.info("watch expired, relisting", extra={"path": self.path})
                need_list = True
                continue
            except WatchLineTooLong as e:  # counted by the client (<prefix>_watch_lines_too_long_total{path})
                self.log.error("watch event over the line bound, relisting", extra={"path": self.path,
                                                                                    "error": str(e)})
                need_list = True
            except (ApiError, ValueError, KeyError) as e:
                # ValueError, KeyError: an object the callbacks cannot read, logged and skipped (the watch resumes
                # after it: its resourceVersion was taken first).
                self.log.warning("watch failed, retrying", extra={"path": self.path, "error": str(e)})
            await self._sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, self.backoff.most)

    async def _list(self) -> None:
        items: list[Any] = []
        async for page in self.kube.list_pages(self.path, self.params, page_size=self.page_size,
                                               accept=self._list_accept):
            meta = page.get("metadata") if isinstance(page, dict) else None
            found = page.get("items") if isinstance(page, dict) else None
            if not isinstance(meta, dict) or not isinstance(found, list | None):
                raise ApiError(0, "LIST", self.path, f"not a list: {str(page)[:100]!r}")
            objects = [o for o in found or [] if isinstance(o, dict)]
            items.extend(objects if self._slim is None else map(self._slim, objects))
            del page, found, objects  # the page's decoded JSON goes before the next one comes
            if not meta.get("continue"):
                self.resource_version = str(meta.get("resourceVersion") or "")
        self._reset(items)
        self.synced.set()
