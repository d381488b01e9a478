"""The agent's own HTTP endpoint: `GET /metrics` and `GET /healthz`, nothing else.

A few lines of asyncio instead of aiohttp.web: the agent runs on every node with a 40 MiB budget, and the web
framework alone costs about 2 MiB of RSS for two fixed routes. Each request head is read with a size and a time
limit, the answer carries Content-Length and the connection is closed (Prometheus and probes open a connection per
scrape anyway), so a slow or hostile client costs one small task for at most `read_timeout` seconds. At most
`max_connections` are served at once: the agent runs in the host network, where anything on the node can reach
it, and 5,000 held connections took it to 157 MB, past its memory limit; a connection past the bound is closed as
soon as it is accepted (a scraper retries at its next interval).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus

from nodemedic_common.listen import split_listen


@dataclass(frozen=True)
class Answer:
    status: int
    content_type: str
    body: bytes


Route = Callable[[], Answer]
MAX_HEAD = 8192  # request line + headers; a scrape sends a few hundred bytes
# Prometheus, a second scraper and the kubelet's probes use a handful at a time; each costs a task and buffers
# (~30 KiB), so this bounds the endpoint to a few MiB whatever is sent to it.
MAX_CONNECTIONS = 64


class StatusServer:
    def __init__(self, routes: Mapping[str, Route], *, read_timeout: float = 5.0,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.routes, self.read_timeout, self.max_connections = dict(routes), read_timeout, max_connections
        self._server: asyncio.Server | None = None
        self._clients: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets, "start() first"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def connections(self) -> int:
        """Connections being served now."""
        return len(self._clients)

    async def start(self, listen: str) -> None:
        host, port = split_listen(listen)
        self._server = await asyncio.start_server(self._accept, host, port, limit=MAX_HEAD)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._clients):
                task.cancel()
            await asyncio.gather(*self._clients, return_exceptions=True)
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if len(self._clients) >= self.max_connections:
            writer.transport.abort()  # at once, unread: waiting for its request is what the bound prevents
            return
        self._clients.add(task)
        try:
            answer, head_only = await self._answer(reader)
            if answer is not None:
                reason = HTTPStatus(answer.status).phrase
                writer.write(f"HTTP/1.1 {answer.status} {reason}\r\nContent-Type: {answer.content_type}\r\n"
                             f"Content-Length: {len(answer.body)}\r\nConnection: close\r\n\r\n".encode("latin-1"))
                if not head_only:
                    writer.write(answer.body)
                await asyncio.wait_for(writer.drain(), self.read_timeout)
        except (OSError, TimeoutError):
            pass  # the client went away or stopped reading: nothing to tell it
        finally:
            self._clients.discard(task)
            writer.close()
            with contextlib.suppress(OSError, TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _answer(self, reader: asyncio.StreamReader) -> tuple[Answer | None, bool]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.read_timeout)
        except (asyncio.LimitOverrunError, ValueError):
            return _plain(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE), False
        except (asyncio.IncompleteReadError, TimeoutError):
            return None, False  # closed or silent before a whole head arrived
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return _plain(HTTPStatus.BAD_REQUEST), False
        method, target = parts[0], parts[1].split("?", 1)[0]
        route = self.routes.get(target)
        if route is None:
            return _plain(HTTPStatus.NOT_FOUND), method == "HEAD"
        if method not in ("GET", "HEAD"):
            return _plain(HTTPStatus.METHOD_NOT_ALLOWED), False
        return route(), method == "HEAD"


def _plain(status: HTTPStatus) -> Answer:
    return Answer(status.value, "text/plain; charset=utf-8", f"{status.value} {status.phrase}\n".encode())
