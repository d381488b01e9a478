"""`kubectl nodemedic fence NODE --confirm | --cancel`: a person's word that a dark node's machine is off.

The out-of-service taint frees a node's pods to run elsewhere (the pod garbage collector force-deletes them and their
volumes are detached); on a machine that still runs them, two copies of a StatefulSet's pod would write one volume.
So the confirmation is refused for a node whose kubelet reports (Ready True or False) or whose agent wrote within
`agent_silence` (the policy's darkNodes.agentSilence, 6m by default): that machine runs. The remediator fences on it
at its next cycle, behind its rails (planning/dark_nodes.py); writing it takes `patch` on nodes, which the chart's
viewer role does not have.
"""

from __future__ import annotations

import datetime as dt

from nodemedic_common.durations import format_duration
from nodemedic_common.fence_contract import CONFIRM_ANNOTATION, FENCE_ANNOTATION, OUT_OF_SERVICE_KEY
from nodemedic_common.kube_client import Kube
from nodemedic_common.repair_contract import format_time
from remediator.kubectl import reach
from remediator.kubectl.names import DNS_SUBDOMAIN
from remediator.kubectl.repair_control import Refused, patch_annotations, who
from remediator.planning.dark_nodes import agent_heard, kubelet_silent_since
from remediator.policy.dark import DarkSettings
from remediator.state import records

DEFAULT_AGENT_SILENCE = DarkSettings().agent_silence


async def control(kube: Kube, node: str, how: str, *, now: dt.datetime,
                  agent_silence: dt.timedelta = DEFAULT_AGENT_SILENCE) -> str:
    if not DNS_SUBDOMAIN.fullmatch(node):
        raise Refused(f"{node!r} is not a node name")
    doc = await reach.node(kube, node)
    record = records.node(doc)
    if how == "cancel":
        if CONFIRM_ANNOTATION not in record.annotations:
            raise Refused(f"{node} has no fence confirmation to cancel")
        if FENCE_ANNOTATION in record.annotations:
            raise Refused(f"{node} is fenced already ({record.annotations[FENCE_ANNOTATION][:200]}); the fence ends "
                          "when the node is Ready and its agent reports")
        await patch_annotations(kube, node, {CONFIRM_ANNOTATION: None}, resource_version=record.resource_version)
        return f"{node}: fence confirmation cancelled"
    since = kubelet_silent_since(record)
    ready = record.condition("Ready")
    if since is None:
        state = "has no Ready condition" if ready is None else f"is Ready={ready.status}: its kubelet reports"
        raise Refused(f"refused: {node} {state}, so the machine runs; fencing it would free pods that still run "
                      "there (two copies of a StatefulSet's pod on one volume)")
    heard = agent_heard(record)
    if heard is not None and now - heard < agent_silence:
        raise Refused(f"refused: {node}'s kubelet is silent since {format_time(since)}, but its agent wrote at "
                      f"{format_time(heard)}, within {format_duration(agent_silence)} (darkNodes.agentSilence): the "
                      "machine runs; the repair ladder restarts the kubelet instead")
    if how != "confirm":
        raise Refused(f"{node} is dark (its kubelet silent since {format_time(since)}); fencing frees its pods to "
                      "run elsewhere and is safe only once the machine is off: add --confirm once it is")
    by = await who(kube)
    await patch_annotations(kube, node, {CONFIRM_ANNOTATION: f"{format_time(now)} by {by}"},
                            resource_version=record.resource_version)
    return (f"{node}: confirmed off by {by}; the remediator puts {OUT_OF_SERVICE_KEY} on at its next cycle and the "
            f"node's pods are freed (`kubectl nodemedic why {node}` shows it)")
