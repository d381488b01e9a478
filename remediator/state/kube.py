"""The remediator's only door to the API server: a small asyncio REST client (aiohttp) with watch support.

Credentials come from a kubeconfig or the in-cluster service account, resolved by the `kubernetes`
package's loaders (so exec plugins, token files and embedded certificates all work); the requests
go through the transport both programs share (`nodemedic_common/kube_transport.py`: plain aiohttp, which keeps
watches cheap and the JSON raw, records.py slims it; one ApiError).
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from kubernetes import client, config  # credential resolution only; requests never go through it
from prometheus_client import CollectorRegistry, Counter

from nodemedic_common.inputs import quoted
from nodemedic_common.kube_transport import ApiError, Transport
from nodemedic_common.lines import LineTooLong

# The Accept header for an object's metadata without its data (meta.k8s.io/v1 PartialObjectMetadata, Kubernetes
# 1.15+); a server that cannot answer so sends the whole object.
PARTIAL_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone): the caller must relist."""


class WatchLineTooLong(WatchExpired):
    """A watch event over MAX_WATCH_LINE: the caller relists (a LIST body has no line bound, and the watch resumes
    after the event) instead of re-watching into the same event forever."""


@dataclass(frozen=True)
class Credentials:
    server: str
    ssl: ssl.SSLContext | bool
    token: str | None  # bearer token, re-read from its source before each request when it can rotate
    refresh: Any = None  # kubernetes Configuration whose token hook refreshes bound tokens


class CredentialsError(Exception):
    """No usable credentials: the message names the kubeconfig file (or says why in-cluster ones are missing)."""


def load_credentials(kubeconfig: str | None) -> Credentials:
    """From a kubeconfig file, or the pod's service account when `kubeconfig` is None."""
    cfg = client.Configuration()
    try:
        if kubeconfig:
            if not os.path.isfile(kubeconfig):  # the library's own message would not name the file
                raise CredentialsError(f"{kubeconfig}: kubeconfig file not found")
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        else:
            config.load_incluster_config(client_configuration=cfg)
    except (config.ConfigException, OSError, ValueError, TypeError) as e:  # ValueError: also not UTF-8
        where = kubeconfig or "in-cluster credentials (pass --kubeconfig outside a pod)"
        raise CredentialsError(f"{where}: {e}") from None
    except (AttributeError, KeyError) as e:  # the library walks the file unchecked: a list or number out of place
        raise CredentialsError(f"{kubeconfig}: not a usable kubeconfig (a value of the wrong type): {e}") from None
    where = kubeconfig or "in-cluster credentials"
    # The library copies a kubeconfig's values through unchecked: a number or a list for the server or the token,
    # and CA data that is not a certificate, surface only here (or at the first request) unless checked now.
    if not isinstance(cfg.host, str) or not cfg.host.startswith(("https://", "http://")):
        raise CredentialsError(f"{where}: server: must be an http(s) URL, got {quoted(cfg.host)}")
    ctx: ssl.SSLContext | bool = False
    if cfg.verify_ssl:
        try:
            ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
            if cfg.cert_file:
                ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
        except (ssl.SSLError, OSError) as e:
            raise CredentialsError(f"{where}: certificate-authority or client certificate does not load: {e}") from None
    token = cfg.api_key.get("authorization") or cfg.api_key.get("BearerToken")
    if token is not None and not isinstance(token, str):
        raise CredentialsError(f"{where}: token: must be a string")
    refresh = cfg if cfg.refresh_api_key_hook else None
    return Credentials(server=cfg.host.rstrip("/"), ssl=ctx, token=token, refresh=refresh)


class Kube:
    def __init__(self, creds: Credentials, *, registry: CollectorRegistry, user_agent: str = "nodemedic-remediator"):
        self._creds = creds
        self._session: aiohttp.ClientSession | None = None
        self._user_agent = user_agent
        self.requests = Counter("nodemedic_api_requests_total", "API requests by verb and HTTP code",
                                ["verb", "code"], registry=registry)
        self.watch_lines_too_long = Counter(
            "nodemedic_watch_lines_too_long_total", "Watch events over the line bound (each restarts that watch "
            "with a relist)", ["path"], registry=registry)
        self._transport = Transport(creds.server, session=self._sess, headers=self._headers, requests=self.requests)

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        h = {"Accept": accept, "User-Agent": self._user_agent}
        token = self._creds.token
        if self._creds.refresh is not None:
            token = self._creds.refresh.get_api_key_with_prefix("authorization") or token
        if token:
            h["Authorization"] = token if token.lower().startswith("bearer ") else f"Bearer {token}"
        if content_type:
            h["Content-Type"] = content_type
        return h

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=self._creds.ssl, limit=64))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, *, params: dict[str, str] | None = None, body: Any = None,
                      content_type: str = "application/json", accept: str = "application/json",
                      timeout: float = 30.0, limit: int | None = None) -> Any:
        """`accept`: e.g. PARTIAL_METADATA, for an object's metadata only; `limit`: the most bytes to read."""
        return await self._transport.request(method, path, params=params, body=body, content_type=content_type,
                                             accept=accept, timeout=timeout, limit=limit)

    async def get(self, path: str, **params: str) -> Any:
        return await self.request("GET", path, params=params or None)

    async def watch(self, path: str, resource_version: str, *,
                    timeout_seconds: int = 300) -> AsyncIterator[dict[str, Any]]:
        """Yields watch events ({"type", "object"}) from `resource_version`, bookmarks included.

        Raises WatchExpired on 410 Gone (as an HTTP status or an ERROR event), ApiError on other failures.
        Returns normally when the server closes the watch (timeoutSeconds), so the caller re-watches.
        """
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout_seconds)}
        try:
            async for event in self._transport.stream(path, params=params, read_timeout=timeout_seconds + 30):
                if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                    raise ApiError(0, "WATCH", path, f"not a watch event: {str(event)[:100]!r}")
                if event.get("type") == "ERROR":
                    status = event.get("object", {})
                    if status.get("code") == 410:
                        raise WatchExpired(path)
                    raise ApiError(int(status.get("code", 500)), "WATCH", path, json.dumps(status))
                yield event
        except LineTooLong as e:
            self.watch_lines_too_long.labels(path).inc()
            raise WatchLineTooLong(f"{path}: {e}") from e
        except ApiError as e:
            if e.status == 410:
                raise WatchExpired(path) from e
            raise
