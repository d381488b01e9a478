"""The fence contract: how a dark node's pods are freed, and who may say the node is off.

A node is *dark* when its kubelet is silent (the node lifecycle controller set `Ready=Unknown`) and its agent, the
second witness on the machine, has written nothing for `darkNodes.agentSilence`. Its pods are freed with Kubernetes'
own non-graceful shutdown: the taint `node.kubernetes.io/out-of-service=nodeshutdown:NoExecute` makes the pod garbage
collector force-delete them and detach their volumes. That is safe only once the machine no longer runs them, so the
remediator puts it on only with evidence (docs/dark-nodes.md):
- `person`: `kubectl nodemedic fence NODE --confirm` wrote `nodemedic.io/fence-confirmed` (the time it was confirmed)
  after the kubelet went silent;
- `reboot`: the repair ladder asked for a reboot and the agent answered `Acting` before it went silent;
- a Karpenter NodeClaim: the remediator deletes it (the node autoscaler ends the instance and the node with it).
- `nodemedic.io/fence` (the remediator's alone, like `nodemedic.io/repair`) records what it did and why: it marks the
  taint as nodemedic's, so a taint a person put on is never taken off, and its time counts towards `repair.maxPerHour`.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from enum import StrEnum

from nodemedic_common.repair_contract import ContractError, format_time, json_object, parse_time

OUT_OF_SERVICE_KEY = "node.kubernetes.io/out-of-service"
OUT_OF_SERVICE_VALUE = "nodeshutdown"
OUT_OF_SERVICE_EFFECT = "NoExecute"
FENCE_ANNOTATION = "nodemedic.io/fence"
CONFIRM_ANNOTATION = "nodemedic.io/fence-confirmed"
# The kubelet's own conditions: every other condition on a node is written by a witness on the machine (the agent,
# or node-problem-detector), and its lastHeartbeatTime says when that witness last wrote.
KUBELET_CONDITIONS = frozenset({"Ready", "MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable"})


class Evidence(StrEnum):
    PERSON = "person"  # a person confirmed the machine is off
    REBOOT = "reboot"  # the agent confirmed the reboot the ladder asked for, then went silent
    NODECLAIM = "nodeclaim"  # the node's Karpenter NodeClaim deleted: the autoscaler ends the instance


class FenceAction(StrEnum):
    TAINT = "taint"  # the out-of-service taint is on
    REPLACE = "replace"  # the NodeClaim was deleted


@dataclass(frozen=True)
class FenceRecord:
    at: dt.datetime
    action: FenceAction
    evidence: Evidence
    detail: str

    def to_annotation(self) -> str:
        return json.dumps({"at": format_time(self.at), "action": str(self.action), "evidence": str(self.evidence),
                           "detail": self.detail[:500]}, separators=(",", ":"))


def parse_record(text: str) -> FenceRecord:
    """The record, or ContractError saying which field is wrong."""
    doc = json_object(text, FENCE_ANNOTATION)
    at = parse_time(doc.get("at"))
    if at is None:
        raise ContractError(f"{FENCE_ANNOTATION}: at: not an RFC 3339 time: {doc.get('at')!r:.60}")
    try:
        action, evidence = FenceAction(str(doc.get("action"))), Evidence(str(doc.get("evidence")))
    except ValueError as e:
        raise ContractError(f"{FENCE_ANNOTATION}: {e}") from None
    detail = doc.get("detail", "")
    return FenceRecord(at, action, evidence, detail if isinstance(detail, str) else "")
