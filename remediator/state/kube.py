"""The remediator's only door to the API server: a small asyncio REST client (aiohttp) with watch support.

Credentials come from a kubeconfig or the in-cluster service account, resolved by the `kubernetes`
package's loaders (so exec plugins, token files and embedded certificates all work); the requests
themselves are plain aiohttp, which keeps watches cheap and the JSON raw (records.py slims it).
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
from nodemedic_common.lines import MAX_WATCH_LINE, LineTooLong, bounded_lines

# The Accept header for an object's metadata without its data (meta.k8s.io/v1 PartialObjectMetadata, Kubernetes
# 1.15+); a server that cannot answer so sends the whole object.
PARTIAL_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"


class ApiError(Exception):
    """A non-2xx answer. Callers decide on `status`, `reason` and `causes` (the API's Status object), never on the
    message text, which is for people and changes between versions."""

    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        self.status = status
        self.body = body
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            doc = {}
        self.message = str(doc.get("message", body)) if doc else body[:300]
        self.reason = str(doc.get("reason") or "")  # e.g. Conflict, TooManyRequests, NotFound
        details = doc.get("details")
        causes = details.get("causes") if isinstance(details, dict) else None
        # A StatusCause's type is serialised as "reason" (e.g. DisruptionBudget on a PDB-refused eviction).
        self.causes = tuple(str(c.get("reason") or "") for c in causes or () if isinstance(c, dict))
        super().__init__(f"{method} {path}: HTTP {status}: {self.message}")


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

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _headers(self, content_type: str | None, accept: str = "application/json") -> dict[str, str]:
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
                      timeout: float = 30.0) -> Any:
        """`accept`: e.g. PARTIAL_METADATA, for an object's metadata only."""
        verb = _verb(method, path, params)
        data = None if body is None else json.dumps(body)
        try:
            async with self._sess().request(
                method, self._creds.server + path, params=params, data=data,
                headers=self._headers(content_type if data is not None else None, accept),
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                raw = await resp.read()
                self.requests.labels(verb, str(resp.status)).inc()
                text = raw.decode("utf-8", errors="replace")
                if resp.status >= 400:
                    raise ApiError(resp.status, method, path, text)
                try:
                    return json.loads(raw) if raw else None
                except ValueError as e:  # a proxy's HTML page, a truncated or binary body: an answer, not the API's
                    raise ApiError(resp.status, method, path, f"the answer is not JSON ({e}): {text[:200]!r}") from None
        except (aiohttp.ClientError, TimeoutError) as e:
            self.requests.labels(verb, "error").inc()
            raise ApiError(0, method, path, f"{type(e).__name__}: {e}") from e

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
            async with self._sess().get(
                self._creds.server + path, params=params, headers=self._headers(None),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_seconds + 30),
            ) as resp:
                self.requests.labels("WATCH", str(resp.status)).inc()
                if resp.status == 410:
                    raise WatchExpired(path)
                if resp.status >= 400:
                    raise ApiError(resp.status, "WATCH", path, await resp.text())
                async for line in bounded_lines(resp.content.iter_any(), MAX_WATCH_LINE):
                    if not line.strip():
                        continue
                    event = json.loads(line)
                    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                        raise ApiError(0, "WATCH", path, f"not a watch event: {line[:100]!r}")
                    if event.get("type") == "ERROR":
                        status = event.get("object", {})
                        if status.get("code") == 410:
                            raise WatchExpired(path)
                        raise ApiError(int(status.get("code", 500)), "WATCH", path, json.dumps(status))
                    yield event
        except LineTooLong as e:
            self.watch_lines_too_long.labels(path).inc()
            raise WatchLineTooLong(f"{path}: {e}") from e
        except (aiohttp.ClientError, TimeoutError) as e:
            self.requests.labels("WATCH", "error").inc()
            raise ApiError(0, "WATCH", path, f"{type(e).__name__}: {e}") from e


def _verb(method: str, path: str, params: dict[str, str] | None) -> str:
    if method != "GET":
        return method
    # A GET of a collection is a LIST: "no LIST in steady state" is checked on this label.
    last = path.rstrip("/").rsplit("/", 1)[-1]
    collections = {"nodes", "pods", "poddisruptionbudgets", "priorityclasses", "persistentvolumeclaims", "events",
                   "leases", "namespaces"}
    return "LIST" if last in collections else "GET"
