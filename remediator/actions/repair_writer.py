"""The one place that writes repair ladders: the `nodemedic.io/repair` annotation (the agent's ask and the ladder's
state), a replaced node's Karpenter NodeClaim deleted, and an Event and a notification for every step.

Each write is a merge patch of the Node's annotations guarded by the resourceVersion the plan was made from: if the
Node changed meanwhile (a person's hold, the agent's answer, kwok), the API server answers 409 and the step waits for
the next plan, which sees the change. A person's `repair-next` is consumed in the same patch as the step it started.
"""

from __future__ import annotations

import datetime as dt
import logging

from nodemedic_common.durations import format_duration, whole_seconds
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import NEXT_ANNOTATION, REPAIR_ANNOTATION, RepairAction
from remediator.actions.node_patch import patch_node
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.repair_metrics import RepairMetrics
from remediator.repair.decisions import RepairEnd, RepairStart
from remediator.repair.state import Tried

NODECLAIMS = "/apis/karpenter.sh/v1/nodeclaims"


class RepairWriter:
    def __init__(self, kube: Kube, alerts: Alerts, metrics: RepairMetrics, log: logging.Logger) -> None:
        self.kube, self.alerts, self.metrics, self.log = kube, alerts, metrics, log

    async def start(self, s: RepairStart, *, resource_version: str, prior: tuple[Tried, ...]) -> bool:
        """Write the step; True once it is asked for (for replace: the NodeClaim deleted as well)."""
        annotations: dict[str, str | None] = {REPAIR_ANNOTATION: s.state.to_annotation()}
        if s.consumes_next:
            annotations[NEXT_ANNOTATION] = None
        if not await self._patch(s.node, annotations, resource_version):
            return False
        for t in s.state.history[len(prior):]:  # the steps this one follows, ended in this write
            self.metrics.finished.labels(str(t.action), _result(t.result)).inc()
        self.metrics.started.labels(str(s.state.action)).inc()
        if s.state.action == RepairAction.REPLACE:
            try:
                await self.kube.request("DELETE", f"{NODECLAIMS}/{s.claim}")
            except ApiError as e:
                if e.status != 404:  # gone already: Karpenter is replacing it
                    self.log.error("NodeClaim delete failed", extra={"node": s.node, "nodeclaim": s.claim,
                                                                     "error": str(e)})
                    await self.alerts.node(s.node, kind=AlertKind.REPAIR_STEP, type_="Warning",
                                           reason="NodemedicRepairFailed",
                                           message=f"could not delete NodeClaim {s.claim} to replace the node: {e}",
                                           details={"rule": s.state.rule, "action": "replace"})
                    return True  # asked for: the step's wait runs, then the ladder goes on
        if s.state.action == RepairAction.PERSON:
            tried = "; ".join(t.describe() for t in s.state.history) or "nothing"
            await self.alerts.node(
                s.node, kind=AlertKind.NEEDS_A_PERSON, type_="Warning", reason="NodemedicNeedsAPerson",
                message=f"{s.state.rule}: repair handed to a person ({s.cause}); tried: {tried}. Find the cause "
                        f"on the node, then `kubectl nodemedic repair {s.node} --resume` to try the ladder again, or "
                        f"leave it: the ladder ends by itself once the condition clears",
                details={"rule": s.state.rule, "action": "person"})
        else:
            await self.alerts.node(s.node, kind=AlertKind.REPAIR_STEP, type_="Normal", reason="NodemedicRepairStep",
                                   message=s.describe(),
                                   details={"rule": s.state.rule, "action": str(s.state.action), "id": s.state.id})
        return True

    async def end(self, e: RepairEnd, *, resource_version: str, now: dt.datetime) -> bool:
        if not await self._patch(e.node, {REPAIR_ANNOTATION: None, NEXT_ANNOTATION: None}, resource_version):
            return False
        took = now - e.state.started
        if e.repaired:
            self.metrics.finished.labels(str(e.state.action), "repaired").inc()
            self.metrics.seconds.labels(str(e.state.action)).observe(took.total_seconds())
            await self.alerts.node(e.node, kind=AlertKind.REPAIRED, type_="Normal", reason="NodemedicRepaired",
                                   message=f"{e.state.rule}: repaired in {format_duration(whole_seconds(took))}: "
                                           f"{e.result}", details={"rule": e.state.rule, "action": str(e.state.action)})
        else:
            self.metrics.finished.labels(str(e.state.action), "ended").inc()
            await self.alerts.node(e.node, kind=AlertKind.REPAIR_ENDED, type_="Warning", reason="NodemedicRepairEnded",
                                   message=f"{e.state.rule}: repair ladder ended: {e.result}",
                                   details={"rule": e.state.rule})
        return True

    async def forget(self, node: str, why: str, *, resource_version: str) -> None:
        """An annotation that is not a ladder this remediator wrote (someone else's, or damaged): removed."""
        if await self._patch(node, {REPAIR_ANNOTATION: None}, resource_version):
            await self.alerts.node(node, kind=AlertKind.REPAIR_ENDED, type_="Warning", reason="NodemedicRepairEnded",
                                   message=f"removed an unreadable repair annotation: {why}", details={})

    async def _patch(self, node: str, annotations: dict[str, str | None], resource_version: str) -> bool:
        body = {"metadata": {"resourceVersion": resource_version, "annotations": annotations}}
        return await patch_node(self.kube, self.log, node, body, what="repair")

def _result(text: str) -> str:
    """A tried step's result as a metric label."""
    if text.startswith("skipped"):
        return "skipped"
    if text.startswith("the agent answered"):
        return "failed"
    if text.startswith("ended by a person"):
        return "person"
    return "persisted"
