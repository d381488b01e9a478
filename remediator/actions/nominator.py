"""The one place that nominates: `status.nominatedNodeName` of a pending pod the plan made room for.

kube-scheduler counts a nominated pod's requests on its node when it filters any pod of equal or lower priority
(the room a preemption frees is held this way), and tries the nominated node first when the pod's turn comes.
Written before the evictions, it keeps the room they free for the pending pod: the evicted pods' replacements,
created as soon as their pods are terminating and queued ahead of it, see that node as full. A status-only change
does not move the pod out of the scheduler's unschedulable queue; the evictions' pod deletions do. The scheduler
clears the nomination itself when it binds the pod or fails to place it.
"""

from __future__ import annotations

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.model.records import PodRecord


async def nominate(kube: Kube, pod: PodRecord, node: str) -> str | None:
    """Nominate `node` for `pod` (guarded by its UID); None when done, else why not."""
    path = f"/api/v1/namespaces/{pod.namespace}/pods/{pod.name}/status"
    body = {"metadata": {"uid": pod.uid}, "status": {"nominatedNodeName": node}}
    try:
        await kube.request("PATCH", path, body=body, content_type="application/strategic-merge-patch+json")
    except ApiError as e:
        return str(e)
    return None
