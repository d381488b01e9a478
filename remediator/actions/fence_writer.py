"""The one place that frees a dark node's pods: the out-of-service taint on or off, with nodemedic's record
(`nodemedic.io/fence`) in the same write, and a dark node's Karpenter NodeClaim deleted (docs/dark-nodes.md).

Each write is one merge patch of the Node guarded by the resourceVersion the plan was made from: a node that came
back between the plan and the write (its kubelet posting Ready changes the Node) is answered 409 and is not fenced;
the next plan sees it Ready.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from nodemedic_common.fence_contract import (
    CONFIRM_ANNOTATION,
    FENCE_ANNOTATION,
    OUT_OF_SERVICE_EFFECT,
    OUT_OF_SERVICE_KEY,
    OUT_OF_SERVICE_VALUE,
    Evidence,
    FenceAction,
    FenceRecord,
)
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import format_time
from remediator.actions.node_patch import patch_node
from remediator.actions.repair_writer import NODECLAIMS
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.dark_metrics import DarkMetrics
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, Unfence


class FenceWriter:
    def __init__(self, kube: Kube, alerts: Alerts, metrics: DarkMetrics, log: logging.Logger) -> None:
        self.kube, self.alerts, self.metrics, self.log = kube, alerts, metrics, log

    async def apply(self, d: DarkPlan, as_planned: Callable[[str], dict[str, Any] | None], now: dt.datetime) -> None:
        """A plan's dark-node writes, each from the node as the plan saw it (`as_planned`: its taints and
        resourceVersion, None when it changed since or this replica may not act)."""
        for u in d.unfences:
            if (base := as_planned(u.node)) is not None:
                await self.unfence(u, base=base)
        for f in d.fences:
            if (base := as_planned(f.node)) is not None:
                await self.fence(f, base=base, now=now)
        for c in d.claim_deletes:
            if (base := as_planned(c.node)) is not None:
                await self.delete_claim(c, base=base, now=now)

    async def fence(self, f: Fence, *, base: dict[str, Any], now: dt.datetime) -> bool:
        record = FenceRecord(now, FenceAction.TAINT, f.evidence, f.detail)
        taints = [t for t in base["taints"] if isinstance(t, dict) and t.get("key") != OUT_OF_SERVICE_KEY]
        taints.append({"key": OUT_OF_SERVICE_KEY, "value": OUT_OF_SERVICE_VALUE, "effect": OUT_OF_SERVICE_EFFECT,
                       "timeAdded": format_time(now)})
        if not await self._patch(f.node, base["resourceVersion"], {FENCE_ANNOTATION: record.to_annotation()}, taints):
            return False
        self.metrics.fences.labels(str(f.evidence)).inc()
        await self.alerts.node(f.node, kind=AlertKind.FENCED, type_="Warning", reason="NodemedicFenced",
                               message=f"the node is dark; fenced on {f.evidence} evidence ({f.detail}): "
                                       f"{OUT_OF_SERVICE_KEY}={OUT_OF_SERVICE_VALUE}:{OUT_OF_SERVICE_EFFECT} is on, "
                                       "its pods are freed to run elsewhere",
                               details={"evidence": str(f.evidence)})
        return True

    async def delete_claim(self, c: ClaimDelete, *, base: dict[str, Any], now: dt.datetime) -> bool:
        """Record the deletion on the node first (so it counts once and is shown), then delete the NodeClaim."""
        record = FenceRecord(now, FenceAction.REPLACE, Evidence.NODECLAIM, f"NodeClaim {c.claim}: {c.detail}")
        if not await self._patch(c.node, base["resourceVersion"], {FENCE_ANNOTATION: record.to_annotation()}, None):
            return False
        try:
            await self.kube.request("DELETE", f"{NODECLAIMS}/{c.claim}")
        except ApiError as e:
            if e.status != 404:
                self.log.error("NodeClaim delete failed", extra={"node": c.node, "nodeclaim": c.claim,
                                                                 "error": str(e)})
                return False
        self.metrics.fences.labels(str(Evidence.NODECLAIM)).inc()
        await self.alerts.node(c.node, kind=AlertKind.FENCED, type_="Warning", reason="NodemedicDarkNodeReplaced",
                               message=f"the node is dark ({c.detail}): its NodeClaim {c.claim} is deleted; the node "
                                       "autoscaler ends the instance and the node, and its pods are freed",
                               details={"evidence": str(Evidence.NODECLAIM), "nodeclaim": c.claim})
        return True

    async def unfence(self, u: Unfence, *, base: dict[str, Any]) -> bool:
        taints = None
        if u.taint:
            taints = [t for t in base["taints"] if not (isinstance(t, dict) and t.get("key") == OUT_OF_SERVICE_KEY)]
        if not await self._patch(u.node, base["resourceVersion"], {FENCE_ANNOTATION: None, CONFIRM_ANNOTATION: None},
                                 taints):
            return False
        self.metrics.unfences.inc()
        await self.alerts.node(u.node, kind=AlertKind.UNFENCED, type_="Normal", reason="NodemedicUnfenced",
                               message=u.why + (f"; {OUT_OF_SERVICE_KEY} taken off" if u.taint else ""), details={})
        return True

    async def _patch(self, node: str, resource_version: str, annotations: dict[str, str | None],
                     taints: list[Any] | None) -> bool:
        body: dict[str, Any] = {"metadata": {"resourceVersion": resource_version, "annotations": annotations}}
        if taints is not None:
            body["spec"] = {"taints": taints}
        return await patch_node(self.kube, self.log, node, body, what="fence")
