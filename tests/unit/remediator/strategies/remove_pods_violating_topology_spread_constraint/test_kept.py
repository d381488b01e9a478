"""remove_pods_violating_topology_spread_constraint/kept.py: a constraint found within maxSkew answers so again only
for the same pods on the same nodes, and what no run asks for is forgotten."""

from __future__ import annotations

import dataclasses

from remediator.model.records import Taint
from remediator.strategies.remove_pods_violating_topology_spread_constraint.kept import Domains, KeptSpreads
from tests.unit.remediator.strategies.cluster import NOW, node, pod

NODES = {"n1": node("n1"), "n2": node("n2")}
PODS = (pod("a", "n1"), pod("b", "n2"))


def test_a_kept_constraint_is_balanced_again_for_the_same_pods_or_equal_records_only() -> None:
    kept = KeptSpreads().run_on(NODES)
    assert not kept.balanced("web", PODS)
    kept.remember_balanced("web", PODS)
    kept.run_on(dict(NODES))  # another cycle, the same nodes
    assert kept.balanced("web", PODS)
    assert kept.balanced("web", (pod("a", "n1"), pod("b", "n2")))  # records equal to the kept ones
    assert not kept.balanced("web", (pod("a", "n1"), pod("b", "n1")))  # a pod on another node
    assert not kept.balanced("web", PODS[:1])
    assert not kept.balanced("api", PODS)


def test_other_nodes_forget_every_kept_constraint() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced("web", PODS)
    kept.run_on({**NODES, "n2": dataclasses.replace(NODES["n2"], labels={"zone": "b"})})
    assert not kept.balanced("web", PODS)


def test_a_constraint_no_run_asks_about_is_forgotten_after_one_more_run() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced("web", PODS)
    kept.remember_balanced("api", PODS)
    kept.run_on(NODES)
    assert kept.balanced("web", PODS)  # asked: carried on
    kept.run_on(NODES)
    assert kept.balanced("web", PODS) and not kept.balanced("api", PODS)


def test_a_shape_s_domains_are_kept_on_the_same_nodes_only() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.domains["zone"] = Domains({"n1": "a"}, ["a"])
    assert kept.run_on(dict(NODES)).domains == {"zone": Domains({"n1": "a"}, ["a"])}
    assert kept.run_on({"n1": NODES["n1"]}).domains == {}


def test_a_node_s_status_report_keeps_what_was_found_and_a_taint_forgets_it() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced("web", PODS)
    kept.domains["zone"] = Domains({"n1": "a"}, ["a"])
    ready = dataclasses.replace(NODES["n1"].conditions[0], heartbeat=NOW)
    after_report = {**NODES, "n1": dataclasses.replace(NODES["n1"], conditions=(ready,), resource_version="2")}
    assert after_report != NODES
    kept.run_on(after_report)
    assert kept.balanced("web", PODS) and kept.domains == {"zone": Domains({"n1": "a"}, ["a"])}
    assert kept.nodes is after_report, "the run reads this cycle's records"
    kept.run_on({**after_report, "n2": dataclasses.replace(NODES["n2"], taints=(Taint("dedicated", "x"),))})
    assert not kept.balanced("web", PODS) and kept.domains == {}
