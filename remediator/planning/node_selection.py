"""The policy's `nodeSelector` applied to a snapshot: the cluster as this policy sees it.

descheduler hands its plugins only the nodes its nodeSelector selects (and the pods on them); so does nodemedic,
before any planning: a node outside is neither tainted nor drained nor a destination, its pods count nowhere
(topology spread, duplicates, utilization), and the breaker's percent is of the selected nodes. A taint nodemedic
put on a node that later left the selection stays until the node is selected again (or a human removes it):
nodemedic does not act where the policy says it must not."""

from __future__ import annotations

from remediator.model.records import LabelSelector
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot


def in_scope(snapshot: Snapshot, selector: LabelSelector | None) -> Snapshot:
    if selector is None:
        return snapshot
    nodes = {n: rec for n, rec in snapshot.nodes.items() if matches_labels(selector, rec.labels)}
    if len(nodes) == len(snapshot.nodes):
        return snapshot
    by_node = {n: pods for n, pods in snapshot.pods_by_node.items() if n in nodes}
    by_owner = {}
    for owner, pods in snapshot.pods_by_owner.items():
        kept = [p for p in pods if not p.node_name or p.node_name in nodes]
        if kept:
            by_owner[owner] = kept
    return Snapshot(now=snapshot.now, nodes=nodes, pods_by_node=by_node, pods_by_owner=by_owner, pdbs=snapshot.pdbs,
                    priority_classes=snapshot.priority_classes, claim_classes=snapshot.claim_classes,
                    pending=snapshot.pending, measured=snapshot.measured, autoscalers=snapshot.autoscalers,
                    derived=snapshot.derived)
