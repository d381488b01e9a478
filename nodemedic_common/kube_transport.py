"""The one way both programs talk HTTP to the API server: a JSON request, a stream of JSON lines (a watch), every
call counted by verb and code, every failure one ApiError.

Credentials stay with each program (the agent reads its own, without the `kubernetes` package, to stay small; the
remediator resolves kubeconfigs with it): each hands the transport its server, a session factory built with its TLS
context, and a header function that puts the current token in. aiohttp is imported here as the caller already did:
the agent imports it first through `agent/reporting/aiohttp_lean.py`, which keeps the CA stores it never uses out of
memory, and this module must stay after that import.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
from prometheus_client import Counter

from nodemedic_common.lines import MAX_WATCH_LINE, bounded_lines

# A GET of a collection is a LIST: "no LIST in steady state" is checked on this label.
_COLLECTIONS = {"nodes", "pods", "poddisruptionbudgets", "priorityclasses", "persistentvolumeclaims", "events",
                "leases", "namespaces"}


class ApiError(Exception):
    """A failed call: `status` is the HTTP code (0: no answer, or not one the API gives). Callers decide on `status`,
    `reason` and `causes` (the API's Status object), never on the message text, which is for people and changes
    between versions."""

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


class TooLarge(ApiError):
    """An answer longer than the caller's `limit`: read no further than that."""


Headers = Callable[[str | None, str], dict[str, str]]  # (content type or None, accept) -> the request's headers


class Transport:
    def __init__(self, server: str, *, session: Callable[[], aiohttp.ClientSession], headers: Headers,
                 requests: Counter) -> None:
        self.server = server
        self._session, self._headers, self._requests = session, headers, requests

    async def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None,
                      content_type: str = "application/json", accept: str = "application/json",
                      timeout: float = 30.0, limit: int | None = None) -> Any:
        """The answer's JSON (None for an empty body); ApiError for a status >= 400, no answer, or one not JSON;
        TooLarge for one over `limit` bytes (None: any size; the API server's own answers are bounded by etcd)."""
        label = verb(method, path)
        data = None if body is None else json.dumps(body)
        try:
            async with self._session().request(
                method, self.server + path, params=params, data=data,
                headers=self._headers(content_type if data is not None else None, accept),
                timeout=aiohttp.ClientTimeout(total=timeout),
            ) as resp:
                raw = await resp.read() if limit is None else await _bounded(resp, limit, method, path)
                self._requests.labels(label, str(resp.status)).inc()
                text = raw.decode("utf-8", errors="replace")
                if resp.status >= 400:
                    raise ApiError(resp.status, method, path, text)
                try:
                    return json.loads(raw) if raw else None
                except ValueError as e:  # a proxy's HTML page, a truncated or binary body: an answer, not the API's
                    raise ApiError(resp.status, method, path, f"the answer is not JSON ({e}): {text[:200]!r}") from None
        except (aiohttp.ClientError, TimeoutError) as e:
            self._requests.labels(label, "error").inc()
            raise ApiError(0, method, path, f"{type(e).__name__}: {e}") from e

    async def stream(self, path: str, *, params: Mapping[str, str] | None = None, read_timeout: float,
                     connect_timeout: float = 10.0) -> AsyncIterator[Any]:
        """GET `path` and yield each JSON line of the answer as it arrives (a watch), counted as WATCH. ApiError as
        `request` (a line that is not JSON too); a line over MAX_WATCH_LINE raises lines.LineTooLong: the caller
        relists, since resuming would read the same line again."""
        try:
            async with self._session().get(
                self.server + path, params=params, headers=self._headers(None, "application/json"),
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect_timeout, sock_read=read_timeout),
            ) as resp:
                self._requests.labels("WATCH", str(resp.status)).inc()
                if resp.status >= 400:
                    raise ApiError(resp.status, "WATCH", path, await resp.text())
                async for line in bounded_lines(resp.content.iter_any(), MAX_WATCH_LINE):
                    if not line.strip():
                        continue
                    try:
                        yield json.loads(line)
                    except ValueError:
                        raise ApiError(0, "WATCH", path, f"not JSON: {line[:100]!r}") from None
        except (aiohttp.ClientError, TimeoutError) as e:
            self._requests.labels("WATCH", "error").inc()
            raise ApiError(0, "WATCH", path, f"{type(e).__name__}: {e}") from e


async def _bounded(resp: aiohttp.ClientResponse, limit: int, method: str, path: str) -> bytes:
    """The body, refused (unread) past `limit` bytes: memory stays within the bound whatever the other end sends."""
    if (resp.content_length or 0) > limit:
        raise TooLarge(resp.status, method, path, f"the answer is {resp.content_length} bytes, over {limit}")
    chunks, size = [], 0
    async for chunk in resp.content.iter_chunked(1 << 16):
        size += len(chunk)
        if size > limit:
            raise TooLarge(resp.status, method, path, f"the answer is over {limit} bytes: not read further")
        chunks.append(chunk)
    return b"".join(chunks)


def verb(method: str, path: str) -> str:
    """The verb a call is counted under: the method, with a GET of a collection counted as LIST."""
    if method != "GET":
        return method
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return "LIST" if last in _COLLECTIONS else "GET"
