"""One guarded write of a Node for the repair and fence writers: a merge patch carrying the resourceVersion the plan
was made from, so a Node that changed meanwhile (a person's write, the agent's answer, its kubelet back) is answered
409 and waits for the next plan, which sees the change."""

from __future__ import annotations

import logging
from typing import Any

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError


async def patch_node(kube: Kube, log: logging.Logger, node: str, body: dict[str, Any], *, what: str) -> bool:
    """True once the patch landed; False (logged) when the node changed since the plan or the write failed."""
    try:
        await kube.request("PATCH", f"/api/v1/nodes/{node}", body=body, content_type="application/merge-patch+json")
    except ApiError as e:
        if e.status == 409:
            log.info(f"{what} write deferred: the node changed since the plan", extra={"node": node})
        else:
            log.error(f"{what} write failed", extra={"node": node, "error": str(e)})
        return False
    return True
