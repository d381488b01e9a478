"""A fake API server for one resource's list and watch, over real HTTP (aiohttp): what the watch readers of both
programs parse, at any object size. The watch response is written in 64 KiB pieces, as a real server's would be."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

PIECE = 64 << 10


class WatchServer:
    """GET `path` answers `lists[0]` (then the next one at each LIST; the last one stays); GET `path?watch=...` streams
    the next of `watches` (a list of events; each written as one JSON line), then closes; with none left it stays
    open. `requests` records ("LIST" | "WATCH", query) in order."""

    def __init__(self, path: str, *, lists: list[dict[str, Any]], watches: list[list[dict[str, Any]]]) -> None:
        self.path, self.lists, self.watches = path, lists, watches
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._arrived = asyncio.Condition()
        self.closing = asyncio.Event()  # set when the server stops: a watch left open ends

    async def wait_for(self, kinds: list[str]) -> None:
        """Until the requests made so far, by kind, are `kinds` (or begin with them)."""
        async with self._arrived:
            await self._arrived.wait_for(lambda: [k for k, _ in self.requests][:len(kinds)] == kinds)

    async def _record(self, kind: str, query: dict[str, str]) -> None:
        async with self._arrived:
            self.requests.append((kind, query))
            self._arrived.notify_all()

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.StreamResponse:
            query = dict(request.query)
            if query.get("watch") not in ("1", "true"):
                await self._record("LIST", query)
                body = self.lists[0] if len(self.lists) == 1 else self.lists.pop(0)
                return web.json_response(body)
            await self._record("WATCH", query)
            resp = web.StreamResponse()
            resp.content_type = "application/json"
            await resp.prepare(request)
            if not self.watches:
                await self.closing.wait()  # the last watch stays open until the server stops
                return resp
            data = b"".join(json.dumps(e, separators=(",", ":")).encode() + b"\n" for e in self.watches.pop(0))
            for start in range(0, len(data), PIECE):
                await resp.write(data[start:start + PIECE])
            await resp.write_eof()
            return resp

        a = web.Application()
        a.router.add_get(self.path, handle)
        return a


async def serving(server: WatchServer, body: Callable[[str], Awaitable[None]], *, timeout: float = 20) -> None:
    """Run `body(base_url)` against the server; fail after `timeout` seconds."""
    runner = web.AppRunner(server.app())
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        await asyncio.wait_for(body(f"http://127.0.0.1:{runner.addresses[0][1]}"), timeout)
    finally:
        server.closing.set()
        await runner.cleanup()


def big_object(name: str, rv: str, size: int, *, namespace: str | None = None) -> dict[str, Any]:
    """An object whose annotation alone is `size` bytes."""
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": rv,
                            "annotations": {"example.com/blob": "x" * size}}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"metadata": meta}
