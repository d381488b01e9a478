"""The policy's nodeSelector applied to a snapshot: nodes outside it and their pods drop out of every index (pending
pods and the rest of the cluster's records kept), and a selector that keeps everything returns the snapshot itself."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.model.records import LabelSelector, NodeRecord, PdbRecord, PodRecord, SelectorRequirement
from remediator.planning.node_selection import in_scope
from remediator.state.snapshot import NodeAutoscaler, Snapshot

NOW = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
GPU = LabelSelector(match_labels=(("pool", "gpu"),))


def _pod(name: str, node: str) -> PodRecord:
    return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=node)


def _snapshot() -> Snapshot:
    a, b, c = _pod("a", "gpu-1"), _pod("b", "cpu-1"), _pod("pending", "")
    return Snapshot(
        now=NOW,
        nodes={"gpu-1": NodeRecord("gpu-1", labels={"pool": "gpu"}),
               "cpu-1": NodeRecord("cpu-1", labels={"pool": "cpu"})},
        pods_by_node={"gpu-1": [a], "cpu-1": [b]},
        pods_by_owner={"rs-1": [a, b, c], "rs-2": [b]},
        pdbs=[PdbRecord("ns", "pdb", None)], priority_classes={"high": 1000}, claim_classes={"ns/data": "ssd"},
        pending=[c])


def test_no_selector_returns_the_snapshot_itself() -> None:
    snap = _snapshot()
    assert in_scope(snap, None) is snap


def test_a_selector_that_keeps_every_node_returns_the_snapshot_itself() -> None:
    snap = _snapshot()
    assert in_scope(snap, LabelSelector(match_expressions=(SelectorRequirement("pool", "Exists"),))) is snap


def test_nodes_outside_the_selector_and_their_pods_drop_out() -> None:
    scoped = in_scope(_snapshot(), GPU)
    assert list(scoped.nodes) == ["gpu-1"]
    assert {n: [p.name for p in pods] for n, pods in scoped.pods_by_node.items()} == {"gpu-1": ["a"]}


def test_an_owner_keeps_its_pods_in_scope_and_unbound_and_loses_an_owner_with_none_left() -> None:
    scoped = in_scope(_snapshot(), GPU)
    assert {o: [p.name for p in pods] for o, pods in scoped.pods_by_owner.items()} == {"rs-1": ["a", "pending"]}


def test_the_cluster_wide_records_are_carried_over() -> None:
    snap = _snapshot()
    scoped = in_scope(snap, GPU)
    assert (scoped.now, scoped.pdbs, scoped.priority_classes, scoped.claim_classes, scoped.pending,
            scoped.measured) == (snap.now, snap.pdbs, snap.priority_classes, snap.claim_classes, snap.pending,
                                 snap.measured)


def test_a_selector_matching_no_node_leaves_an_empty_cluster() -> None:
    scoped = in_scope(_snapshot(), LabelSelector(match_labels=(("pool", "tpu"),)))
    assert (scoped.nodes, scoped.pods_by_node) == ({}, {})
    assert [p.name for p in scoped.pods_by_owner["rs-1"]] == ["pending"]


def test_the_detected_autoscalers_are_carried_over() -> None:
    """Once lost here: with a nodeSelector that left a node out, `addsNodes: auto` saw no autoscaler."""
    snap = dataclasses.replace(_snapshot(), autoscalers=frozenset({NodeAutoscaler.KARPENTER}))
    assert in_scope(snap, GPU).autoscalers == snap.autoscalers
