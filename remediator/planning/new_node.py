"""Who adds a new node like a drained one, for the gate's node fit (`autoscaler.addsNodes`, docs/autoscalers.md).

With `auto` the answer depends on the node: Karpenter replaces only the nodes of its NodePools (they carry the
`karpenter.sh/nodepool` label), so a pod drained off another node counts on no new node from it. cluster-autoscaler
scales node groups, and which nodes belong to one is the cloud provider's business, invisible in the API: any node
counts as one whose like it adds (a node outside every group is not replaced: the pod then waits Pending).
"""

from __future__ import annotations

from collections.abc import Collection

from remediator.model.records import NodeRecord
from remediator.policy.autoscaler import AUTO, AddsNodes
from remediator.state.snapshot import KARPENTER_NODEPOOL_LABEL, NodeAutoscaler


def who_adds(source: NodeRecord, adds_nodes: AddsNodes, detected: Collection[NodeAutoscaler]) -> tuple[str | None, str]:
    """(who adds a new node like `source`, as the plan's reasons name it; or None and why nobody does, "" when the
    policy says so plainly with `addsNodes: false`)."""
    if isinstance(adds_nodes, bool):
        return ("the node autoscaler", "") if adds_nodes else (None, "")
    karpenter = NodeAutoscaler.KARPENTER in detected
    if karpenter and KARPENTER_NODEPOOL_LABEL in source.labels:
        return "Karpenter (detected)", ""
    if NodeAutoscaler.CLUSTER_AUTOSCALER in detected:
        return "cluster-autoscaler (detected)", ""
    if karpenter:
        return None, (f"Karpenter (detected) replaces only NodePool nodes and {source.name} has no "
                      f"{KARPENTER_NODEPOOL_LABEL} label")
    return None, f"no node autoscaler detected (autoscaler.addsNodes: {AUTO})"
