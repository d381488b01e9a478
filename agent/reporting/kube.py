"""The few REST calls the agent makes (aiohttp): read its Node, patch nodes/status, create/patch Events, and one
watch of the pods bound to its Node (agent/reporting/pod_watch.py).

Credentials come from a kubeconfig or the pod's service account (`agent.reporting.credentials`); the calls go through
the transport both programs share (`nodemedic_common/kube_transport.py`: one ApiError, every call counted by verb and
code), over the agent's lean aiohttp.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from agent.reporting import credentials
from agent.reporting.aiohttp_lean import aiohttp
from nodemedic_common.kube_transport import ApiError, Transport
from nodemedic_common.lines import LineTooLong


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
        self._transport = Transport(self.server, session=self._sess, headers=self._headers, requests=self.requests)

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        h = {"Accept": accept, "User-Agent": "nodemedic-agent"}
        token = self._creds.token()  # re-read from its file: in-cluster tokens rotate
        if token:
            h["Authorization"] = f"Bearer {token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._creds.ssl_context, limit=4))
        return self._session

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json") -> Any:
        return await self._transport.request(method, path, body=body, content_type=content_type,
                                             timeout=self._timeout)

    async def stream(self, path: str, *, read_timeout: float) -> AsyncIterator[Any]:
        """GET `path` and yield each JSON line of the response as it arrives (a watch); ApiError as `request`."""
        try:
            async for item in self._transport.stream(path, read_timeout=read_timeout, connect_timeout=self._timeout):
                yield item
        except LineTooLong as e:
            self.lines_too_long.inc()
            raise StreamLineTooLong(0, "WATCH", path, str(e)) from e

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
