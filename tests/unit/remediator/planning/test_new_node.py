"""Who adds a new node like a drained one: the policy's true or false as said; `auto` per node from the autoscalers
found (Karpenter only for its NodePools' nodes, cluster-autoscaler for any), and why nobody does when none counts."""

from __future__ import annotations

import pytest

from remediator.model.records import NodeRecord
from remediator.planning.new_node import who_adds
from remediator.policy.autoscaler import AUTO, AddsNodes
from remediator.state.snapshot import KARPENTER_NODEPOOL_LABEL, NodeAutoscaler

KARPENTER, CA = NodeAutoscaler.KARPENTER, NodeAutoscaler.CLUSTER_AUTOSCALER
POOL_NODE = NodeRecord("pool-node", labels={KARPENTER_NODEPOOL_LABEL: "default"})
OTHER_NODE = NodeRecord("other-node", labels={"kubernetes.io/hostname": "other-node"})


@pytest.mark.parametrize(("source", "adds_nodes", "detected", "expected"), [
    (OTHER_NODE, True, set(), ("the node autoscaler", "")),
    (POOL_NODE, False, {KARPENTER, CA}, (None, "")),
    (POOL_NODE, AUTO, {KARPENTER}, ("Karpenter (detected)", "")),
    (OTHER_NODE, AUTO, {KARPENTER}, (None, "Karpenter (detected) replaces only NodePool nodes and other-node has no "
                                           "karpenter.sh/nodepool label")),
    (OTHER_NODE, AUTO, {CA}, ("cluster-autoscaler (detected)", "")),
    (POOL_NODE, AUTO, {KARPENTER, CA}, ("Karpenter (detected)", "")),
    (OTHER_NODE, AUTO, {KARPENTER, CA}, ("cluster-autoscaler (detected)", "")),
    (POOL_NODE, AUTO, set(), (None, "no node autoscaler detected (autoscaler.addsNodes: auto)")),
], ids=["true-whatever-is-found", "false-whatever-is-found", "karpenter-pool-node", "karpenter-other-node",
        "cluster-autoscaler-any-node", "both-pool-node-karpenter", "both-other-node-cluster-autoscaler", "none-found"])
def test_who_adds_a_node_like_the_source(source: NodeRecord, adds_nodes: AddsNodes, detected: set[NodeAutoscaler],
                                         expected: tuple[str | None, str]) -> None:
    assert who_adds(source, adds_nodes, detected) == expected
