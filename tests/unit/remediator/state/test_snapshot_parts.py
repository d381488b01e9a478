"""SnapshotParts: objects added one at a time (as `plan --kubeconfig` reads its pages) make the snapshot a `kind: List`
file makes (`plan --snapshot`), pods indexed by node, by owner and as pending; what is no object of a known kind is
passed over."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from remediator.state.caches import snapshot_from_list
from remediator.state.snapshot_parts import SnapshotParts

NOW = dt.datetime(2026, 3, 1, 12, tzinfo=dt.UTC)
SNAPSHOTS = Path(__file__).resolve().parents[3] / "testdata" / "snapshots"


def test_objects_added_one_at_a_time_make_the_snapshot_their_list_makes() -> None:
    for path in sorted(SNAPSHOTS.glob("*.json")):
        doc = json.loads(path.read_text())
        parts = SnapshotParts()
        for obj in doc.get("items") or []:
            parts.add(obj)
        assert parts.snapshot(NOW) == snapshot_from_list(doc, NOW), path.name


def test_pods_are_indexed_by_node_by_owner_and_as_pending_and_odd_objects_are_passed_over() -> None:
    owner = [{"kind": "ReplicaSet", "name": "web-1", "uid": "rs-1", "controller": True}]
    parts = SnapshotParts()
    for obj in [{"kind": "Pod", "metadata": {"name": "a", "namespace": "s", "ownerReferences": owner},
                 "spec": {"nodeName": "n1"}},
                {"kind": "Pod", "metadata": {"name": "b", "namespace": "s", "ownerReferences": owner}},
                {"kind": "ConfigMap", "metadata": {"name": "c"}}, "not an object", None]:
        parts.add(obj)
    snapshot = parts.snapshot(NOW)
    assert [p.key for p in snapshot.pods_by_node["n1"]] == ["s/a"]
    assert [p.key for p in snapshot.pending] == ["s/b"]
    assert [p.key for p in snapshot.pods_by_owner["rs-1"]] == ["s/a", "s/b"]
    assert (snapshot.nodes, snapshot.pdbs) == ({}, [])
