"""`kubectl nodemedic repair NODE --hold | --resume | --next`: a person's say in a node's repair ladder.

The remediator reads two annotations a person writes (nodemedic_common/repair_contract.py): `repair-hold` stops the
ladder where it is, `repair-next` ends the step under way (named by its id, so a late `--next` never ends the step
after it). Writing them takes `patch` on nodes, which the chart's viewer role does not have; the ladder's own
annotation stays the remediator's (the API server refuses it from anyone else).
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from urllib.parse import quote

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import (
    HOLD_ANNOTATION,
    NEXT_ANNOTATION,
    REPAIR_ANNOTATION,
    ContractError,
    RepairAction,
    format_time,
    json_object,
)
from remediator.kubectl import reach
from remediator.kubectl.names import DNS_SUBDOMAIN


class Refused(Exception):
    """The request makes no sense for this node (the message says why); nothing was written."""


async def control(kube: Kube, node: str, how: str, *, now: dt.datetime) -> str:
    if not DNS_SUBDOMAIN.fullmatch(node):
        raise Refused(f"{node!r} is not a node name")
    doc = await reach.node(kube, node)
    annotations: dict[str, Any] = (doc.get("metadata") or {}).get("annotations") or {}
    ladder = _ladder(annotations.get(REPAIR_ANNOTATION))
    if how == "hold":
        by = await who(kube)
        await patch_annotations(kube, node, {HOLD_ANNOTATION: f"{by} at {format_time(now)}"})
        return f"{node}: repair held by {by}; nodemedic takes no further step until `--resume`"
    if how == "resume":
        change: dict[str, str | None] = {HOLD_ANNOTATION: None}
        if ladder is not None and ladder[1] == RepairAction.PERSON:
            change[NEXT_ANNOTATION] = ladder[0]  # handed to a person: round the ladder again
        if HOLD_ANNOTATION not in annotations and len(change) == 1:
            raise Refused(f"{node} is neither held nor handed to a person: nothing to resume")
        await patch_annotations(kube, node, change)
        return f"{node}: repair resumed" + (" from its first step" if NEXT_ANNOTATION in change else "")
    if ladder is None:
        raise Refused(f"{node} has no repair ladder under way: nothing to skip")
    if HOLD_ANNOTATION in annotations:
        raise Refused(f"{node}'s repair is held ({annotations[HOLD_ANNOTATION]}): `--resume` first")
    await patch_annotations(kube, node, {NEXT_ANNOTATION: ladder[0]})
    return f"{node}: step {ladder[2]} ({ladder[1]}) ends now; the ladder goes on at the remediator's next cycle"


def _ladder(text: object) -> tuple[str, str, int] | None:
    """(id, action, step number) of the step under way, or None."""
    if not isinstance(text, str):
        return None
    try:
        raw = json_object(text, REPAIR_ANNOTATION)
    except ContractError as e:
        raise Refused(f"the node's repair annotation is unreadable ({e}); the remediator removes it") from None
    step = raw.get("step")
    return str(raw.get("id", "")), str(raw.get("action", "")), (step + 1 if isinstance(step, int) else 0)


async def who(kube: Kube) -> str:
    """The caller's user name, as the API server sees it (a SelfSubjectReview), for the hold's record."""
    try:
        review = await kube.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                    body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    except ApiError:
        return "a person"
    name = str(((review.get("status") or {}).get("userInfo") or {}).get("username") or "a person")
    return name[:100]


async def patch_annotations(kube: Kube, node: str, annotations: dict[str, str | None], *,
                            resource_version: str | None = None) -> None:
    """A merge patch of the node's annotations; with `resource_version`, only if the node is still as it was read."""
    meta: dict[str, object] = {"annotations": annotations}
    if resource_version:
        meta["resourceVersion"] = resource_version
    await kube.request("PATCH", f"/api/v1/nodes/{quote(node, safe='')}", body={"metadata": meta},
                       content_type="application/merge-patch+json")
