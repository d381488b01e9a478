"""The one list+watch loop of the agent's reads: LIST one resource with a field selector, then WATCH it from the
LIST's resourceVersion with bookmarks, resuming after each watch ends; a 410 Gone, or an event over the stream's line
bound, starts over with a LIST (resuming there would read the same event again); any other API error waits `retry`.
The pod watch (pod_watch.py) and the node watch (node_watch.py) each keep only what they need of what it delivers."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from agent.reporting.kube import Kube, StreamLineTooLong
from nodemedic_common.kube_transport import ApiError

WATCH_SECONDS = 300  # the API server ends a watch after this; we resume from the last resourceVersion


async def list_and_watch(kube: Kube, resource: str, selector: str, *, listed: Callable[[list[dict[str, Any]]], None],
                         changed: Callable[[str, dict[str, Any]], None], log: logging.Logger, what: str,
                         retry: float = 5.0) -> None:
    """Runs until cancelled. `resource` is the collection's path (`/api/v1/pods`), `selector` the field selector
    already quoted; `listed` gets every LIST's objects, `changed` each watch event's type and object (not bookmarks)."""
    version = ""
    while True:
        try:
            if not version:
                version = await _list(kube, f"{resource}?fieldSelector={selector}", listed)
            version = await _watch(kube, f"{resource}?watch=true&allowWatchBookmarks=true&fieldSelector={selector}",
                                   version, changed)
        except ApiError as e:
            if e.status == 410:
                version = ""  # too old: start over from a fresh LIST
                continue
            if isinstance(e, StreamLineTooLong):
                log.error(f"{what} watch event over the line bound, relisting", extra={"error": str(e)})
                version = ""
            else:
                log.warning(f"{what} watch failed", extra={"error": str(e)})
            await asyncio.sleep(retry)


async def _list(kube: Kube, path: str, listed: Callable[[list[dict[str, Any]]], None]) -> str:
    body = await kube.request("GET", path)
    if not isinstance(body, dict):
        raise ApiError(0, "GET", path, f"not a list: {str(body)[:100]}")
    listed([o for o in body.get("items") or [] if isinstance(o, dict)])
    return str((body.get("metadata") or {}).get("resourceVersion", ""))


async def _watch(kube: Kube, path: str, version: str, changed: Callable[[str, dict[str, Any]], None]) -> str:
    path = f"{path}&resourceVersion={version}&timeoutSeconds={WATCH_SECONDS}"
    async for event in kube.stream(path, read_timeout=WATCH_SECONDS + 30):
        if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
            raise ApiError(0, "WATCH", path, f"not a watch event: {str(event)[:100]}")
        kind, obj = event.get("type"), event["object"]
        if kind == "ERROR":
            code = obj.get("code")
            raise ApiError(code if isinstance(code, int) else 0, "WATCH", path, str(obj.get("message", "")))
        version = str((obj.get("metadata") or {}).get("resourceVersion", version))
        if kind != "BOOKMARK":
            changed(str(kind), obj)
    return version
