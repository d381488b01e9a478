"""remove_duplicates/kept.py: the nodes taking a replica shape, kept while the Ready nodes stay the same in what
placement reads of them."""

from __future__ import annotations

import dataclasses

from remediator.model.records import NodeRecord, Taint
from remediator.strategies.remove_duplicates.kept import KeptTargets
from tests.unit.remediator.strategies.cluster import NOW, node

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


def reported(n: NodeRecord) -> NodeRecord:
    """The node after its kubelet reported its status again: a new record, newer heartbeat and version."""
    ready = dataclasses.replace(n.conditions[0], heartbeat=NOW)
    return dataclasses.replace(n, conditions=(ready,), resource_version="2")


def test_a_node_s_status_report_keeps_the_answers_and_a_cordon_or_a_taint_forgets_them() -> None:
    asked: list[str] = []

    def takes(n: NodeRecord) -> bool:
        asked.append(n.name)
        return ssd(n) and not n.unschedulable and not n.taints
    kept = KeptTargets().run_on(NODES)
    assert kept.taking("ssd", takes) == ["n1", "n2"] and len(asked) == 3
    after_report = {**NODES, "n1": reported(NODES["n1"])}
    assert after_report != NODES
    assert kept.run_on(after_report).taking("ssd", takes) == ["n1", "n2"] and len(asked) == 3, "kept"
    assert kept.nodes is after_report, "the run reads this cycle's records"
    cordoned = {**NODES, "n1": dataclasses.replace(NODES["n1"], unschedulable=True)}
    assert kept.run_on(cordoned).taking("ssd", takes) == ["n2"] and len(asked) == 6
    tainted = {**NODES, "n2": dataclasses.replace(NODES["n2"], taints=(Taint("dedicated", "x"),))}
    assert kept.run_on(tainted).taking("ssd", takes) == ["n1"] and len(asked) == 9
