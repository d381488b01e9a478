"""A small Prometheus HTTP API (`GET /api/v1/query`) answering every query with the per-node values the test sets,
in the API's vector format, and only to the bearer token it was given."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Scores:
    token: str
    nodes: dict[str, float] = field(default_factory=dict)  # node -> value in [0, 1]
    queries: list[str] = field(default_factory=list)


def _app(scores: Scores) -> web.Application:
    async def query(request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {scores.token}":
            return web.json_response({"status": "error", "errorType": "unauthorized", "error": "bad token"},
                                     status=401)
        scores.queries.append(request.query.get("query", ""))
        now = time.time()
        result = [{"metric": {"instance": n}, "value": [now, str(v)]} for n, v in sorted(scores.nodes.items())]
        return web.json_response({"status": "success", "data": {"resultType": "vector", "result": result}})

    app = web.Application()
    app.router.add_get("/api/v1/query", query)
    return app


@contextlib.contextmanager
def serving(scores: Scores) -> Iterator[str]:
    """Run it on 127.0.0.1 in a thread of its own; yields its URL."""
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(_app(scores), access_log=None)
    loop.run_until_complete(runner.setup())
    loop.run_until_complete(web.TCPSite(runner, "127.0.0.1", 0).start())
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    thread = threading.Thread(target=loop.run_forever, name="prometheus-api", daemon=True)
    thread.start()
    try:
        yield url
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
