"""remove_duplicates/kept.py: the nodes taking a replica shape, kept while the Ready nodes stay the same."""

from __future__ import annotations

import dataclasses

from remediator.model.records import NodeRecord
from remediator.strategies.remove_duplicates.kept import KeptTargets
from tests.unit.remediator.strategies.cluster import node

NODES = {n.name: n for n in (node("n2", labels={"disk": "ssd"}), node("n1", labels={"disk": "ssd"}), node("n3"))}


def ssd(n: NodeRecord) -> bool:
    return n.labels.get("disk") == "ssd"


def test_a_shape_s_nodes_are_found_once_in_name_order_and_kept_on_the_same_nodes() -> None:
    asked: list[str] = []

    def takes(n: NodeRecord) -> bool:
        asked.append(n.name)
        return ssd(n)
    kept = KeptTargets().run_on(NODES)
    assert kept.taking("ssd", takes) == ["n1", "n2"] and len(asked) == 3
    assert kept.run_on(dict(NODES)).taking("ssd", takes) == ["n1", "n2"] and len(asked) == 3  # kept
    relabelled = {**NODES, "n3": dataclasses.replace(NODES["n3"], labels={"disk": "ssd"})}
    assert kept.run_on(relabelled).taking("ssd", takes) == ["n1", "n2", "n3"] and len(asked) == 6
