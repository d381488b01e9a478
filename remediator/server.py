"""`--listen`: /metrics (Prometheus), /healthz (caches synced and the loop alive), /plan (the current plan), /status
(who this replica is, whether it leads, its policy) and /why/NODE (remediator/why.py): what `kubectl nodemedic` reads
through the API server's pod proxy.

Bounded against slow and many clients, which aiohttp alone is not (a half-sent request head is waited for for ever,
an idle keep-alive connection for an hour): a request head must arrive within `header_timeout` seconds of the
connection or of its first byte, a request body the handlers do not read is drained for at most `body_timeout`
seconds after the answer (aiohttp's lingering time) before the connection is closed, an idle keep-alive connection
is closed after `keepalive_timeout`, and at most `max_connections` are open at once: one past the bound is closed
as soon as it is accepted.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from nodemedic_common.listen import split_listen
from remediator.model import Plan
from remediator.read_side.plan_json import plan_json
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import WhyAnswer


def app(*, registry: CollectorRegistry, healthy: Callable[[], tuple[bool, str]], plan: Callable[[], Plan],
        status: Callable[[], StatusAnswer], why: Callable[[str], WhyAnswer]) -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        ok, why = healthy()
        return web.Response(status=200 if ok else 503, text=why + "\n")

    async def current_plan(_: web.Request) -> web.Response:
        return web.Response(text=json.dumps(plan_json(plan()), indent=1), content_type="application/json")

    async def current_status(_: web.Request) -> web.Response:
        return web.json_response(status().to_json(), dumps=lambda d: json.dumps(d, indent=1))

    async def node_why(request: web.Request) -> web.Response:
        return web.json_response(why(request.match_info["node"]).to_json(), dumps=lambda d: json.dumps(d, indent=1))

    a = web.Application()
    a.router.add_get("/metrics", metrics)
    a.router.add_get("/healthz", healthz)
    a.router.add_get("/plan", current_plan)
    a.router.add_get("/status", current_status)
    a.router.add_get("/why/{node}", node_why)
    return a


HEADER_TIMEOUT = 10.0  # a scrape's head is one packet; ten seconds covers any network a scraper works over
BODY_TIMEOUT = 10.0
KEEPALIVE_TIMEOUT = 60.0  # longer than a 30 s scrape interval, so a scraper keeps its connection
MAX_CONNECTIONS = 64  # Prometheus, probes and a person reading /plan use a handful


class _Guard(asyncio.Protocol):
    """aiohttp's protocol for one connection, wrapped: closes it when a request head does not arrive in time."""

    def __init__(self, limits: _Limits, inner: asyncio.Protocol) -> None:
        self.limits, self.inner = limits, inner
        self.transport: asyncio.Transport | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.in_request = False
        self.pending = False  # bytes arrived while a request was being handled: the next head has begun

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if len(self.limits.open) >= self.limits.max_connections:
            transport.abort()  # at once, unread: holding it until its request came is what the bound prevents
            return
        self.limits.open[transport] = self
        self.inner.connection_made(transport)
        self._arm()  # a connection that never sends a byte is dropped too

    def data_received(self, data: bytes) -> None:
        if self.in_request:
            self.pending = True
        elif self.timer is None:
            self._arm()
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.transport is not None and self.limits.open.pop(self.transport, None) is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def request_started(self) -> None:
        self.in_request, self.pending = True, False
        self._disarm()

    def request_done(self) -> None:
        self.in_request = False
        if self.pending:  # the next request's head is on its way: it gets the same time
            self._arm()

    def _arm(self) -> None:
        self._disarm()
        self.timer = asyncio.get_running_loop().call_later(self.limits.header_timeout, self._expired)

    def _disarm(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expired(self) -> None:
        self.timer = None
        if self.transport is not None and not self.in_request:
            self.transport.abort()


class _Limits:
    def __init__(self, *, header_timeout: float, max_connections: int) -> None:
        self.header_timeout, self.max_connections = header_timeout, max_connections
        self.open: dict[asyncio.BaseTransport, _Guard] = {}

    @web.middleware
    async def middleware(self, request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        """The head has arrived: the handler's time is not the client's."""
        guard = self.open.get(request.transport) if request.transport is not None else None
        if guard is not None:
            guard.request_started()
        try:
            return await handler(request)
        finally:
            if guard is not None:
                guard.request_done()


class _Site(web.BaseSite):
    """TCPSite with each connection's protocol wrapped in a _Guard."""

    def __init__(self, runner: web.AppRunner, host: str | None, port: int, limits: _Limits) -> None:
        super().__init__(runner)
        self.host, self.port, self.limits = host, port, limits

    @property
    def name(self) -> str:
        return f"http://{self.host or '0.0.0.0'}:{self.port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: _Guard(self.limits, server()), self.host, self.port)


async def serve(application: web.Application, listen: str, *, header_timeout: float = HEADER_TIMEOUT,
                body_timeout: float = BODY_TIMEOUT, keepalive_timeout: float = KEEPALIVE_TIMEOUT,
                max_connections: int = MAX_CONNECTIONS) -> web.AppRunner:
    host, port = split_listen(listen)
    limits = _Limits(header_timeout=header_timeout, max_connections=max_connections)
    application.middlewares.append(limits.middleware)
    runner = web.AppRunner(application, access_log=None, keepalive_timeout=keepalive_timeout,
                           lingering_time=body_timeout)
    await runner.setup()
    try:
        await _Site(runner, host, port, limits).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def loop_health(last_cycle: Callable[[], float], synced: Callable[[], bool], max_age: float) -> tuple[bool, str]:
    if not synced():
        return False, "caches not synced"
    age = time.monotonic() - last_cycle()
    if age > max_age:
        return False, f"no planning cycle for {age:.0f}s"
    return True, "ok"
