"""The one client both programs (and `kubectl nodemedic`) talk to the API server with: a JSON request, and a watch read
as a stream of JSON lines, each bounded; every call counted by verb and code, every failure an ApiError
(nodemedic_common/kube_errors.py).

HTTP/1.1 of its own (nodemedic_common/http1_client.py), not the `kubernetes` package nor aiohttp: watches stay
cheap, the JSON stays raw (the remediator's records.py slims it) and the agent stays small. LIST pages and watch
events arrive without their objects' managedFields, which neither program reads and which cost most of decoding a
pod (nodemedic_common/managed_fields.py). Credentials are plugged in
by each program (nodemedic_common/kube_credentials.py).

Metrics, one set under each program's prefix (`nodemedic` for the remediator and the plugin, `nodemedic_agent` for
the agent, the prefix every metric of that program carries): `<prefix>_api_requests_total{verb,code}` and
`<prefix>_watch_lines_too_long_total{path}`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlencode

from prometheus_client import CollectorRegistry, Counter

from nodemedic_common import bounded_json
from nodemedic_common.http1_client import FAILURES, BodyTooLong, Http1Pool
from nodemedic_common.kube_credentials import Credentials
from nodemedic_common.kube_errors import ApiError, TooLarge, WatchExpired, WatchLineTooLong
from nodemedic_common.lines import MAX_WATCH_LINE, LineTooLong, bounded_lines
from nodemedic_common.managed_fields import without_managed_fields

# The Accept headers for objects' metadata without their data (meta.k8s.io/v1 PartialObjectMetadata, Kubernetes
# 1.15+): of one object or a watch's events, and of a LIST; a server that cannot answer so sends the whole objects.
PARTIAL_METADATA = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"
PARTIAL_METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"

WATCH_SECONDS = 300  # asked of the API server (timeoutSeconds): it ends each watch after this, and the caller resumes
CONNECT_SECONDS = 10.0
_DECODER = json.JSONDecoder()
ERROR_BODY = 1 << 20  # of a refused watch: the Status object the API server sends, with room to spare

# A GET of a collection is a LIST: "no LIST in steady state" is checked on this label.
_COLLECTIONS = {"nodes", "pods", "poddisruptionbudgets", "priorityclasses", "persistentvolumeclaims", "events",
                "leases", "namespaces"}


class Kube:
    def __init__(self, creds: Credentials, *, registry: CollectorRegistry, metrics_prefix: str = "nodemedic",
                 user_agent: str = "nodemedic-remediator", connections: int = 64, timeout: float = 30.0) -> None:
        """`connections`: the most open at once (each watch holds one); `timeout`: a request's, unless it says."""
        self.server = creds.server
        self._creds, self._user_agent, self._timeout = creds, user_agent, timeout
        self._http = Http1Pool(creds.server, creds.ssl, connections)
        self.requests = Counter(f"{metrics_prefix}_api_requests_total", "API requests by verb and HTTP code",
                                ["verb", "code"], registry=registry)
        self.watch_lines_too_long = Counter(
            f"{metrics_prefix}_watch_lines_too_long_total", "Watch events over the line bound (each restarts that "
            "watch with a relist)", ["path"], registry=registry)

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._http.close()

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None,
                      content_type: str = "application/json", accept: str = "application/json",
                      timeout: float | None = None, limit: int | None = None) -> Any:
        """The answer's JSON (None for an empty body); ApiError for a status >= 400 (WatchExpired for 410 Gone), no
        answer, or one not JSON; TooLarge for one over `limit` bytes (None: any size; the API server's own answers
        are bounded by etcd). `accept`: e.g. PARTIAL_METADATA, for an object's metadata only."""
        data = None if body is None else json.dumps(body).encode()
        status, raw = await self._exchange(method, path, params=params, data=data, content_type=content_type,
                                           accept=accept, timeout=timeout, limit=limit)
        return _decoded(status, method, path, raw)

    async def list_pages(self, path: str, params: Mapping[str, str] | None = None, *, page_size: int,
                         accept: str = "application/json") -> AsyncIterator[Any]:
        """The pages of LIST `path` (each a decoded list answer of at most `page_size` objects, without the objects'
        managedFields: nodemedic_common/managed_fields.py), in order; `accept`: PARTIAL_METADATA_LIST for the
        objects' metadata only. The next
        page is asked for before this one is decoded: its continue token is read from the first bytes of the answer
        (the API server writes a list's metadata before its items), so the server encodes the next page while this
        one is decoded (a third less time for 15,000 pods). The decoded page has the last word: when its token is
        not the one read ahead, the page asked for is dropped and the right one asked for."""
        asked = {**(params or {}), "limit": str(page_size)}
        ahead: asyncio.Task[tuple[int, bytes]] | None = asyncio.ensure_future(self._exchange("GET", path,
                                                                                            params=asked,
                                                                                            accept=accept))
        try:
            while ahead is not None:
                status, raw = await ahead
                token = continue_token(raw)
                ahead = self._next_page(path, asked, token, accept)
                await asyncio.sleep(0)  # the next page's request goes out (on the connection just freed) first
                page = _decoded_listed(status, "GET", path, raw)
                del raw
                meta = page.get("metadata") if isinstance(page, dict) else None
                said = str(meta.get("continue") or "") if isinstance(meta, dict) else ""
                if said != token:
                    if ahead is not None:
                        ahead.cancel()
                    ahead = self._next_page(path, asked, said, accept)
                yield page
        finally:
            if ahead is not None:
                ahead.cancel()

    def _next_page(self, path: str, asked: dict[str, str], token: str,
                   accept: str) -> asyncio.Task[tuple[int, bytes]] | None:
        if not token:
            return None
        return asyncio.ensure_future(self._exchange("GET", path, params=asked | {"continue": token}, accept=accept))

    async def _exchange(self, method: str, path: str, *, params: Mapping[str, str] | None, data: bytes | None = None,
                        content_type: str = "", accept: str = "application/json", timeout: float | None = None,
                        limit: int | None = None) -> tuple[int, bytes]:
        """The status and body of a call, counted; ApiError for a status >= 400 or no answer."""
        label = verb(method, path)
        try:
            async with asyncio.timeout(self._timeout if timeout is None else timeout), self._http.open(
                method, _target(path, params), self._headers(content_type if data is not None else None, accept),
                data, connect_seconds=CONNECT_SECONDS,
            ) as resp:
                try:
                    raw = await resp.read(limit)
                except BodyTooLong as e:
                    raise TooLarge(resp.status, method, path, str(e)) from None
                self.requests.labels(label, str(resp.status)).inc()
                if resp.status >= 400:
                    raise _failed(resp.status, method, path, raw.decode("utf-8", errors="replace"))
                return resp.status, raw
        except FAILURES as e:
            self.requests.labels(label, "error").inc()
            raise ApiError(0, method, path, f"{type(e).__name__}: {e}") from e

    async def get(self, path: str, **params: str) -> Any:
        return await self.request("GET", path, params=params or None)

    async def watch(self, path: str, resource_version: str, *, params: Mapping[str, str] | None = None,
                    timeout_seconds: int = WATCH_SECONDS,
                    accept: str = "application/json") -> AsyncIterator[dict[str, Any]]:
        """The watch events ({"type", "object"}) of collection `path` from `resource_version`, bookmarks included, as
        they arrive; `params` narrow it (fieldSelector, labelSelector); `accept`: PARTIAL_METADATA for the objects'
        metadata only. Returns when the server ends the watch
        (timeoutSeconds), so the caller resumes. WatchExpired on 410 Gone (an HTTP status or an ERROR event),
        WatchLineTooLong for an event over the line bound (counted by `path`), ApiError for any other failure."""
        query = {**(params or {}), "watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
                 "timeoutSeconds": str(timeout_seconds)}
        try:
            async with self._http.open(
                "GET", _target(path, query), self._headers(None, accept), None,
                connect_seconds=CONNECT_SECONDS, read_seconds=timeout_seconds + 30,
            ) as resp:
                self.requests.labels("WATCH", str(resp.status)).inc()
                if resp.status >= 400:
                    raise _failed(resp.status, "WATCH", path,
                                  (await resp.read(ERROR_BODY)).decode("utf-8", errors="replace"))
                async for line in bounded_lines(resp.pieces(), MAX_WATCH_LINE):
                    if line.strip():
                        yield _event(line, path)
        except LineTooLong as e:
            self.watch_lines_too_long.labels(path).inc()
            raise WatchLineTooLong(0, "WATCH", path, str(e)) from e
        except (*FAILURES, BodyTooLong) as e:
            self.requests.labels("WATCH", "error").inc()
            raise ApiError(0, "WATCH", path, f"{type(e).__name__}: {e}") from e

    def _headers(self, content_type: str | None, accept: str) -> dict[str, str]:
        h = {"Accept": accept, "User-Agent": self._user_agent}
        token = self._creds.token()
        if token:
            h["Authorization"] = token if token.lower().startswith("bearer ") else f"Bearer {token}"
        if content_type:
            h["Content-Type"] = content_type
        return h


def _decoded(status: int, method: str, path: str, raw: bytes) -> Any:
    try:
        return bounded_json.loads(raw) if raw else None
    except ValueError as e:  # a proxy's HTML page, a truncated or binary body: an answer, not the API's
        text = raw[:200].decode("utf-8", errors="replace")
        raise ApiError(status, method, path, f"the answer is not JSON ({e}): {text!r}") from None


def _decoded_listed(status: int, method: str, path: str, raw: bytes) -> Any:
    """`_decoded` of a LIST page or a watch event without its objects' managedFields. Where the cut leaves no JSON,
    the answer was none to begin with (the cut of valid JSON is valid): the whole answer is decoded, for its own
    error."""
    cut = without_managed_fields(raw)
    if cut is not raw:
        try:
            return bounded_json.loads(cut)
        except ValueError:
            pass
    return _decoded(status, method, path, raw)


def continue_token(raw: bytes) -> str:
    """A list answer's `metadata.continue`, read from its first bytes without decoding the rest; "" when it is not
    found there (the caller then waits for the decoded page)."""
    start = raw.find(b'"metadata":{', 0, 1024)
    if start < 0:
        return ""
    try:
        meta, _ = _DECODER.raw_decode(raw[start + 11:start + 11 + 16384].decode("utf-8", errors="replace"))
    except ValueError:
        return ""
    token = meta.get("continue") if isinstance(meta, dict) else None
    return token if isinstance(token, str) else ""


def _target(path: str, params: Mapping[str, str] | None) -> str:
    return f"{path}?{urlencode(params)}" if params else path


def verb(method: str, path: str) -> str:
    """The verb a call is counted under: the method, with a GET of a collection counted as LIST."""
    if method != "GET":
        return method
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return "LIST" if last in _COLLECTIONS else "GET"


def _failed(status: int, method: str, path: str, text: str) -> ApiError:
    return (WatchExpired if status == 410 else ApiError)(status, method, path, text)


def _event(line: bytes, path: str) -> dict[str, Any]:
    """One watch line as an event with an object; an ERROR event raised as the failure its Status says."""
    try:
        event = _decoded_listed(0, "WATCH", path, line)
    except ApiError:
        raise ApiError(0, "WATCH", path, f"not JSON: {line[:100]!r}") from None
    if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
        raise ApiError(0, "WATCH", path, f"not a watch event: {str(event)[:100]!r}")
    if event.get("type") == "ERROR":
        code = event["object"].get("code")
        raise _failed(code if isinstance(code, int) else 0, "WATCH", path, json.dumps(event["object"]))
    return event
