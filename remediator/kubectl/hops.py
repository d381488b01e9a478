"""Which hop of a read through the API server failed, in words: the API server itself, its pod proxy, or the
leading remediator behind the proxy (a silent leader is not the API server's fault, and says so)."""

from __future__ import annotations

from nodemedic_common import bounded_json
from nodemedic_common.kube_errors import ApiError


class HopFailed(Exception):
    """A read failed; the message names the hop and what it said."""


def api_server(e: ApiError) -> HopFailed:
    if e.status == 0:
        return HopFailed(f"the API server did not answer: {e}")
    return HopFailed(f"the API server said: {e}")


def proxied(e: ApiError, pod: str, port: str, path: str, timeout: float) -> HopFailed:
    """`e` from a GET of `path` on the leader `pod` through the API server's pod proxy (which answered just before)."""
    if e.status == 0 and e.body.split(":", 1)[0].endswith("TimeoutError"):
        return HopFailed(f"the leader {pod} did not answer {path} within {timeout:g}s through the API server's pod "
                         f"proxy (the API server itself answered the Lease read): the leader is stuck or overloaded")
    if e.status == 0:
        return HopFailed(f"no answer to {path} through the API server's pod proxy to the leader {pod}: {e.message}")
    if not _from_api_server(e.body):
        return HopFailed(f"the leader {pod} answered {path} with HTTP {e.status}: {e.message[:200]}")
    if e.status in (502, 503):
        return HopFailed(f"the API server's pod proxy could not reach the leader {pod}:{port}: {e.message}")
    if e.status == 404:
        return HopFailed(f"the API server has no pod {pod} (the Lease's holder): it may have just gone: {e.message}")
    return HopFailed(f"the API server's pod proxy said: HTTP {e.status}: {e.message}")


def _from_api_server(body: str) -> bool:
    """A Kubernetes Status object: the API server (or its proxy) speaking, not the remediator."""
    try:
        doc = bounded_json.loads(body)
    except ValueError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "Status"
