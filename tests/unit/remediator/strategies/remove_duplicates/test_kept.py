"""remove_duplicates/kept.py: the nodes taking a replica shape, kept while the Ready nodes stay the same in what
placement reads of them."""

from __future__ import annotations

import dataclasses

from remediator.model.records import NodeRecord, Taint
from remediator.strategies.remove_duplicates.kept import KeptTargets
from tests.unit.remediator.strategies.cluster import NOW, node, pod

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


def test_the_owners_with_two_pods_on_one_node_are_kept_with_their_pod_lists_and_forgotten_when_gone() -> None:
    stacked_pods, spread_pods = [pod("a", "n1"), pod("b", "n1")], [pod("c", "n1"), pod("d", "n2")]
    owners = {"stacked": stacked_pods, "spread": spread_pods, "single": [pod("e", "n1")]}
    kept = KeptTargets()
    assert kept.stacked(owners) == [stacked_pods]
    moved = [pod("c", "n1"), pod("d", "n1")]  # a new list: the owner's pods changed, looked at again
    assert kept.stacked({**owners, "spread": moved}) == [stacked_pods, moved]
    stacked_pods[1] = pod("b", "n2")  # the same list (the cache never changes one it handed out): the kept answer
    assert kept.stacked({"stacked": stacked_pods}) == [stacked_pods]
    assert len(kept._stacked) == 1  # the owners gone are forgotten
