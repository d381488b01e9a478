"""The `--listen` HTTP server of both programs: a few GET routes (/metrics, /healthz, and the remediator's /plan,
/status, /why/NODE), bounded against many, idle, slow and malformed clients.

A small asyncio server rather than aiohttp.web: aiohttp has no per-client bound, no deadline for a request head or
for a client to take its answer, and no way to keep a slot for the liveness probe; adding them meant wrapping its
protocol and reaching into its private attributes (what remediator/server.py did). The agent also avoids
importing aiohttp.web (about 2 MiB on every node). Both programs answer a handful of fixed GETs, so a server that
owns each connection's whole life is shorter than one wrapped from outside, and every bound below is its own code.

The bounds (`Limits`):
- at most `max_connections` connections at once, at most `per_client` of them from one address. When the pool is
  full, the oldest idle keep-alive connection is closed to make room (HTTP lets a server close one between
  requests; clients retry), else the new one goes to the reserved pool.
- `reserved` more connections, one per address, serve only the probe paths (`/healthz`): the kubelet's liveness
  probe is answered while every other slot is taken, instead of the program being restarted for it. A reserved
  connection gets one answer (503 for any other path) and is closed.
- a request head must arrive whole within `head_timeout` of the connection, an idle keep-alive connection is closed
  after `keepalive_timeout` (well under the liveness probe's 60 s window, deploy/helm), and a client must take its
  whole answer within `write_timeout`: the answer is written in chunks and waited for, so one that does not read
  holds one chunk, and it is cut off (its buffers freed) when the time is up.
- a malformed or over-long head gets its 400/431 and the connection is closed; nothing is logged (a client's
  mistake is not the program's event, and logging it would let anyone fill the logs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import unquote

from nodemedic_common.listen import split_listen


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


# A route's handler gets what follows its prefix ("node-7" for "/why/node-7" on the route "/why/"), percent-decoded;
# "" for an exact route.
Handler = Callable[[str], Awaitable[Answer]]


@dataclass(frozen=True)
class Limits:
    # Prometheus, a second scraper, the probes and a few people reading /plan through the API server use a handful.
    max_connections: int = 64
    per_client: int = 16  # every `kubectl nodemedic` user arrives from the API server's address
    reserved: int = 4
    head_timeout: float = 5.0  # a request head is one packet
    keepalive_timeout: float = 5.0
    write_timeout: float = 30.0  # the largest plan over a slow link; a client that takes longer asks again
    max_head: int = 8192  # request line and headers; a scrape sends a few hundred bytes


CHUNK = 64 * 1024  # what a client that stops reading holds of its answer, beyond the socket's own buffers
PROBE_PATHS = frozenset({"/healthz"})
log = logging.getLogger(__name__)


@dataclass
class _Connection:
    client: str
    writer: asyncio.StreamWriter
    reserved: bool
    idle: bool = False  # answered, waiting for its next request: may be closed to make room
    evicted: bool = False


@dataclass(frozen=True)
class _Request:
    method: str
    path: str  # without the query
    keep_alive: bool


@dataclass(eq=False)
class BoundedServer:
    routes: Mapping[str, Handler]  # "/metrics": exact; "/why/": every path under it
    limits: Limits = field(default_factory=Limits)
    probe_paths: frozenset[str] = PROBE_PATHS
    _server: asyncio.Server | None = field(default=None, init=False)
    _open: dict[asyncio.Task[None], _Connection] = field(default_factory=dict, init=False)

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets, "start() first"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def connections(self) -> int:
        """Connections being served now, reserved ones included."""
        return len(self._open)

    async def start(self, listen: str) -> None:
        host, port = split_listen(listen)
        self._server = await asyncio.start_server(self._accept, host, port, limit=self.limits.max_head)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._open):
                task.cancel()
            await asyncio.gather(*self._open, return_exceptions=True)
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        connection = self._admit(str(peer[0]) if peer else "", writer)
        if connection is None:
            writer.transport.abort()  # at once, unread: waiting for its request is what the bounds prevent
            return
        self._open[task] = connection
        try:
            first = True
            while await self._exchange(reader, writer, connection, first=first):
                first = False
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            writer.transport.abort()  # gone, silent or not reading: its buffers go with it
        finally:
            self._open.pop(task, None)
            writer.close()
            with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    def _admit(self, client: str, writer: asyncio.StreamWriter) -> _Connection | None:
        general = [c for c in self._open.values() if not c.reserved]
        if sum(c.client == client for c in general) < self.limits.per_client:
            if len(general) >= self.limits.max_connections:
                idle = next((c for c in general if c.idle), None)  # dicts keep order: the oldest first
                if idle is not None:
                    self._evict(idle)
                    general.remove(idle)
            if len(general) < self.limits.max_connections:
                return _Connection(client, writer, reserved=False)
        reserved = [c for c in self._open.values() if c.reserved]
        if len(reserved) < self.limits.reserved and all(c.client != client for c in reserved):
            return _Connection(client, writer, reserved=True)
        return None

    def _evict(self, connection: _Connection) -> None:
        connection.evicted = True
        for task, c in list(self._open.items()):
            if c is connection:
                del self._open[task]  # its slot is free now, not when its task has noticed
        connection.writer.transport.abort()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, connection: _Connection,
                        *, first: bool) -> bool:
        """Read one request, answer it; whether to wait for another on this connection."""
        connection.idle = not first
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"),
                                          self.limits.head_timeout if first else self.limits.keepalive_timeout)
        except (asyncio.LimitOverrunError, ValueError):
            await self._send(writer, _plain(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE), head_only=False, keep=False)
            return False
        except (asyncio.IncompleteReadError, TimeoutError):
            return False  # closed, silent, or idle for too long: nothing to answer
        connection.idle = False
        request = _parse(head)
        if request is None:
            await self._send(writer, _plain(HTTPStatus.BAD_REQUEST), head_only=False, keep=False)
            return False
        keep = request.keep_alive and not connection.reserved
        head_only = request.method == "HEAD"
        await self._send(writer, await self._answer(request, connection), head_only=head_only, keep=keep)
        return keep and not connection.evicted

    async def _answer(self, request: _Request, connection: _Connection) -> Answer:
        if connection.reserved and request.path not in self.probe_paths:
            return _plain(HTTPStatus.SERVICE_UNAVAILABLE)  # busy: only the probes get the reserved slots
        found = self._route(request.path)
        if found is None:
            return _plain(HTTPStatus.NOT_FOUND)
        if request.method not in ("GET", "HEAD"):
            return _plain(HTTPStatus.METHOD_NOT_ALLOWED)
        handler, rest = found
        try:
            return await handler(rest)
        except Exception:  # a bug in a handler: the client gets a 500, the log the traceback, the server goes on
            log.exception("answering a request failed", extra={"path": request.path})
            return _plain(HTTPStatus.INTERNAL_SERVER_ERROR)

    def _route(self, path: str) -> tuple[Handler, str] | None:
        if path in self.routes and not path.endswith("/"):
            return self.routes[path], ""
        for prefix, handler in self.routes.items():
            if prefix.endswith("/") and path.startswith(prefix):
                rest = path.removeprefix(prefix)
                if rest and "/" not in rest:  # one path segment, as "/why/{node}" matched it
                    return handler, unquote(rest)
        return None

    async def _send(self, writer: asyncio.StreamWriter, answer: Answer, *, head_only: bool, keep: bool) -> None:
        reason = HTTPStatus(answer.status).phrase
        writer.write(f"HTTP/1.1 {answer.status} {reason}\r\nContent-Type: {answer.content_type}\r\n"
                     f"Content-Length: {len(answer.body)}\r\nConnection: {'keep-alive' if keep else 'close'}\r\n"
                     f"\r\n".encode("latin-1"))
        body = b"" if head_only else memoryview(answer.body)
        async with asyncio.timeout(self.limits.write_timeout):
            for start in range(0, len(body), CHUNK):
                writer.write(body[start:start + CHUNK])
                await writer.drain()
            await writer.drain()


def _parse(head: bytes) -> _Request | None:
    """The request line and the headers that decide keep-alive; None when it is not an HTTP/1.x request."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[2] not in ("HTTP/1.0", "HTTP/1.1") or not parts[1].startswith("/"):
        return None
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip().lower()
    # A request with a body is answered and the connection closed: no route reads one, and skipping it is not ours.
    has_body = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers
    keep = parts[2] == "HTTP/1.1" and "close" not in headers.get("connection", "") and not has_body
    return _Request(parts[0], parts[1].split("?", 1)[0], keep)


def _plain(status: HTTPStatus) -> Answer:
    return Answer(status.value, "text/plain; charset=utf-8", f"{status.value} {status.phrase}\n".encode())
