"""A Prometheus instant query over HTTP (`GET <url>/api/v1/query?query=...`), for `metricsUtilization.source:
Prometheus`: a vector of samples, each naming a node in its `instance` label with a value in [0, 1].

The bearer token, when there is one, goes only into the Authorization header: never into a log line, an error
message or a metric label.
"""

from __future__ import annotations

import math
from typing import Any

import aiohttp


class QueryError(Exception):
    """The query could not be answered, or its answer is not a vector of per-node values in [0, 1]."""


async def query(session: aiohttp.ClientSession, url: str, promql: str, *, token: str | None,
                timeout: float = 10.0) -> dict[str, float]:
    """node (the `instance` label) -> value."""
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        async with session.get(url.rstrip("/") + "/api/v1/query", params={"query": promql}, headers=headers,
                               timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            if resp.status >= 400:
                raise QueryError(f"HTTP {resp.status} from {_where(url)}: {(await resp.text())[:200]}")
            doc = await resp.json(content_type=None)
    except (aiohttp.ClientError, TimeoutError, ValueError) as e:
        raise QueryError(f"{_where(url)}: {type(e).__name__}: {e}") from None
    return samples(doc)


def samples(doc: Any) -> dict[str, float]:
    """node -> value from the API's answer; QueryError for anything descheduler would also refuse."""
    if not isinstance(doc, dict) or doc.get("status") != "success":
        error = doc.get("error") if isinstance(doc, dict) else None
        raise QueryError(f"the query failed: {error or 'no success status'}")
    data = doc.get("data") or {}
    if data.get("resultType") != "vector":
        raise QueryError(f"expected a vector, got {data.get('resultType')!r}")
    out: dict[str, float] = {}
    for sample in data.get("result") or []:
        labels = sample.get("metric") or {}
        node = labels.get("instance")
        if not isinstance(node, str):
            raise QueryError(f"a sample has no instance label: {labels}")
        try:
            value = float(sample["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            raise QueryError(f"the sample for {node} has no readable value") from None
        if math.isnan(value) or not 0 <= value <= 1:
            raise QueryError(f"the sample for {node} is {value}, outside [0, 1]")
        out[node] = value
    return out


def _where(url: str) -> str:
    """The URL without credentials a user may have put into it."""
    parts = url.split("://", 1)
    if len(parts) == 2 and "@" in parts[1].split("/", 1)[0]:
        return f"{parts[0]}://{parts[1].split('@', 1)[1]}"
    return url
