"""The few REST calls the agent makes (aiohttp): read its Node, patch nodes/status, create/patch Events.

Credentials come from a kubeconfig or the pod's service account via the `kubernetes` package's loaders;
the requests are plain aiohttp so the agent stays small. Every call is counted by verb and code.
"""

from __future__ import annotations

import json
import ssl
from typing import Any

import aiohttp
from kubernetes import client, config
from prometheus_client import CollectorRegistry, Counter


class ApiError(Exception):
    def __init__(self, status: int, what: str, body: str) -> None:
        super().__init__(f"{what}: HTTP {status}: {body[:300]}")
        self.status = status


class Kube:
    def __init__(self, kubeconfig: str | None, *, registry: CollectorRegistry, timeout: float = 10.0) -> None:
        cfg = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        else:
            config.load_incluster_config(client_configuration=cfg)
        self._cfg = cfg
        self.server = cfg.host.rstrip("/")
        if cfg.verify_ssl:
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
            self._ssl: ssl.SSLContext | bool = ctx
        else:
            self._ssl = False
        self._timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self.requests = Counter("nodemedic_agent_api_requests_total", "API requests by verb and HTTP code",
                                ["verb", "code"], registry=registry)

    def _headers(self, content_type: str | None) -> dict[str, str]:
        h = {"Accept": "application/json", "User-Agent": "nodemedic-agent"}
        # The in-cluster loader re-reads the (rotating, bound) token through this hook.
        token = self._cfg.get_api_key_with_prefix("authorization")
        if token:
            h["Authorization"] = token if token.lower().startswith("bearer ") else f"Bearer {token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    async def request(self, method: str, path: str, body: Any = None, *,
                      content_type: str = "application/json") -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._ssl, limit=4))
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

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
