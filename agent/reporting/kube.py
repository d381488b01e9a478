"""The few REST calls the agent makes (aiohttp): read its Node, patch nodes/status, create/patch Events, and one
watch of the pods bound to its Node (agent/reporting/pod_watch.py).

Credentials come from a kubeconfig or the pod's service account (`agent.reporting.credentials`); the requests are plain
aiohttp so the agent stays small. Every call is counted by verb and code.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from agent.reporting import credentials
from agent.reporting.aiohttp_lean import aiohttp
from nodemedic_common.lines import MAX_WATCH_LINE, LineTooLong, bounded_lines


class ApiError(Exception):
    def __init__(self, status: int, what: str, body: str) -> None:
        super().__init__(f"{what}: HTTP {status}: {body[:300]}")
        self.status = status


class StreamLineTooLong(ApiError):
    """A line of a stream over MAX_WATCH_LINE (nodemedic_common/lines.py): the rest of that stream is not read."""


class Kube:
    def __init__(self, kubeconfig: str | None, *, registry: CollectorRegistry, timeout: float = 10.0) -> None:
        self._creds = credentials.from_kubeconfig(kubeconfig) if kubeconfig else credentials.in_cluster()
        self.server = self._creds.server
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self.requests = Counter("nodemedic_agent_api_requests_total", "API requests by verb and HTTP code",
                                ["verb", "code"], registry=registry)
        self.lines_too_long = Counter("nodemedic_agent_watch_lines_too_long_total",
                                      "Watch events over the line bound (each restarts the watch with a LIST)",
                                      registry=registry)

    def _headers(self, content_type: str | None) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "nodemedic-agent"}
        token = self._creds.token()  # re-read from its file: in-cluster tokens rotate
        if token:
            h["Authorization"] = f"Bearer {token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json") -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._creds.ssl_context, limit=4))
        data = None if body is None else json.dumps(body)
        try:
            async with self._session.request(method, self.server + path, data=data,
                                             headers=self._headers(content_type if data else None),
                                             timeout=aiohttp.ClientTimeout(total=self._timeout)) as resp:
                text = await resp.text()
                self.requests.labels(method, str(resp.status)).inc()
                if resp.status >= 400:
                    raise ApiError(resp.status, f"{method} {path}", text)
                return json.loads(text) if text else None
        except (aiohttp.ClientError, TimeoutError) as e:
            self.requests.labels(method, "error").inc()
            raise ApiError(0, f"{method} {path}", f"{type(e).__name__}: {e}") from e

    async def stream(self, path: str, *, read_timeout: float) -> AsyncIterator[Any]:
        """GET `path` and yield each JSON line of the response as it arrives (a watch); ApiError as `request`."""
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._creds.ssl_context, limit=4))
        try:
            async with self._session.get(self.server + path, headers=self._headers(None),
                                         timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._timeout,
                                                                       sock_read=read_timeout)) as resp:
                self.requests.labels("WATCH", str(resp.status)).inc()
                if resp.status >= 400:
                    raise ApiError(resp.status, f"GET {path}", await resp.text())
                async for line in bounded_lines(resp.content.iter_any(), MAX_WATCH_LINE):
                    if line.strip():
                        yield json.loads(line)
        except LineTooLong as e:
            self.lines_too_long.inc()
            raise StreamLineTooLong(0, f"GET {path}", str(e)) from e
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            raise ApiError(0, f"GET {path}", f"{type(e).__name__}: {e}") from e

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
