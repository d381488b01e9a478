"""The API client as the list+watch loop (nodemedic_common/informer.py) uses it, scripted: what the agent's pod and
node watches and the remediator's caches are tested against without a server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any, NamedTuple


class Call(NamedTuple):
    kind: str  # "LIST" or "WATCH"
    path: str
    query: dict[str, str]  # a WATCH's carries its resourceVersion
    accept: str = "application/json"  # the Accept header asked for


class ScriptedKube:
    """Each LIST answers the next of `lists`; each WATCH yields the next of `watches` (a list of events, or an exception
    to raise) and, with none left, stays open like a quiet watch. `calls` records every call in order."""

    def __init__(self, lists: list[Any], watches: list[list[dict[str, Any]] | Exception]) -> None:
        self.lists, self.watches = lists, watches
        self.calls: list[Call] = []

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                      accept: str = "application/json", **_: Any) -> Any:
        self.calls.append(Call("LIST", path, dict(params or {}), accept))
        return self.lists.pop(0)

    async def list_pages(self, path: str, params: Mapping[str, str] | None = None, *, page_size: int,
                         accept: str = "application/json") -> AsyncIterator[Any]:
        """Each page a LIST answers, following its continue token as the real client's pages do."""
        asked = {**(params or {}), "limit": str(page_size)}
        while True:
            page = await self.request("GET", path, params=asked, accept=accept)
            yield page
            meta = page.get("metadata") if isinstance(page, dict) else None
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not token:
                return
            asked = asked | {"continue": str(token)}

    async def watch(self, path: str, resource_version: str, *, params: Mapping[str, str] | None = None,
                    accept: str = "application/json", **_: Any) -> AsyncIterator[dict[str, Any]]:
        self.calls.append(Call("WATCH", path, {**(params or {}), "resourceVersion": resource_version}, accept))
        if not self.watches:
            await asyncio.Event().wait()
        script = self.watches.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event

    def versions(self) -> list[tuple[str, str]]:
        """(kind, resourceVersion asked for: "" for a LIST) of each call so far."""
        return [(c.kind, c.query.get("resourceVersion", "")) for c in self.calls]
