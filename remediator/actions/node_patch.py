"""One guarded write of a Node for the repair and fence writers: a merge patch carrying the resourceVersion the plan
was made from, so a Node that changed meanwhile (a person's write, the agent's answer, its kubelet back) is answered
409 and waits for the next plan, which sees the change. A write whose answer was lost is read back: when the node
shows it, it landed (and is announced like any other), since the next plan would take it as done and never tell."""

from __future__ import annotations

import logging
from typing import Any

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import UNKNOWN_FATE, ApiError


async def patch_node(kube: Kube, log: logging.Logger, node: str, body: dict[str, Any], *, what: str) -> bool:
    """True once the patch landed; False (logged) when the node changed since the plan or the write failed."""
    path = f"/api/v1/nodes/{node}"
    try:
        await kube.request("PATCH", path, body=body, content_type="application/merge-patch+json")
    except ApiError as e:
        if e.status in UNKNOWN_FATE and await _shows(kube, path, body):
            log.info(f"{what} write landed, its answer lost", extra={"node": node, "error": str(e)})
            return True
        if e.status == 409:
            log.info(f"{what} write deferred: the node changed since the plan", extra={"node": node})
        else:
            log.error(f"{what} write failed", extra={"node": node, "error": str(e)})
        return False
    return True


async def _shows(kube: Kube, path: str, body: dict[str, Any]) -> bool:
    """The node as it is now carries every annotation (a null: none) and the taint list `body` wrote."""
    try:
        fresh = await kube.get(path)
    except ApiError:
        return False
    annotations = (fresh.get("metadata") or {}).get("annotations") or {}
    if any(annotations.get(key) != value for key, value in body["metadata"].get("annotations", {}).items()):
        return False
    return "spec" not in body or ((fresh.get("spec") or {}).get("taints") or []) == body["spec"]["taints"]
