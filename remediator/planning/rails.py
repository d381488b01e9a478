"""The safety rails: which nodes nodemedic keeps its hands off (pause, opt-out, the autoscaler at work), and how many
nodes may carry its taints at once (the circuit breaker's limit). Every taint and every eviction passes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from remediator.model.plan import HoldReason
from remediator.model.records import NodeRecord
from remediator.policy.safety import Safety

# Taints a node autoscaler puts on a node it is removing (or about to), or has not finished registering. Such a node
# is the autoscaler's: it drains it itself, so nodemedic neither taints it nor evicts from it (docs/autoscalers.md).
AUTOSCALER_TAINTS = {
    "ToBeDeletedByClusterAutoscaler": "cluster-autoscaler is removing the node",
    "DeletionCandidateOfClusterAutoscaler": "cluster-autoscaler may remove the node soon",
    "karpenter.sh/disrupted": "Karpenter is disrupting the node",
    "karpenter.sh/unregistered": "Karpenter has not registered the node yet",
}
# Annotations with which an operator tells an autoscaler to leave a node alone: nodemedic leaves it alone too.
LEAVE_ALONE_ANNOTATIONS = ("cluster-autoscaler.kubernetes.io/scale-down-disabled", "karpenter.sh/do-not-disrupt")


@dataclass(frozen=True)
class Hold:
    reason: HoldReason
    why: str


def safety_hold(node: NodeRecord, safety: Safety) -> Hold | None:
    """Why no new taint (and no eviction) may touch this node, or None."""
    if safety.paused:
        return Hold(HoldReason.PAUSED, "paused")
    if node.labels.get(safety.exclude_label) == "true":
        return Hold(HoldReason.OPTED_OUT, f"node opted out ({safety.exclude_label}=true)")
    for t in node.taints:
        if t.key in AUTOSCALER_TAINTS:
            return Hold(HoldReason.AUTOSCALER, f"{AUTOSCALER_TAINTS[t.key]} (taint {t.key})")
    for key in LEAVE_ALONE_ANNOTATIONS:
        if node.annotations.get(key) == "true":
            return Hold(HoldReason.AUTOSCALER, f"the node autoscaler is told to leave the node alone ({key}=true)")
    return None


def tainted_limit(safety: Safety, total_nodes: int) -> int:
    bounds = []
    if safety.max_tainted_nodes is not None:
        bounds.append(safety.max_tainted_nodes)
    if safety.max_tainted_nodes_percent is not None:
        bounds.append(math.floor(safety.max_tainted_nodes_percent * total_nodes / 100))
    return max(safety.min_tainted_nodes, min(bounds) if bounds else total_nodes)
