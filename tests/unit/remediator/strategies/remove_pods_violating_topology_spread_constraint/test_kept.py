"""remove_pods_violating_topology_spread_constraint/kept.py: a constraint found within maxSkew answers so again only
for the same pods on the same nodes, what no run asks for is forgotten, and the declared constraints are found again
only when a node's declaring pods changed, each as the object found before."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from remediator.model.records import ContainerStatuses, LabelSelector, PodRecord, SpreadConstraint, Taint
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint
from remediator.strategies.remove_pods_violating_topology_spread_constraint.kept import Domains, Intern, KeptSpreads
from tests.unit.remediator.strategies.cluster import NOW, node, pod

NODES = {"n1": node("n1"), "n2": node("n2")}
PODS = [pod("a", "n1"), pod("b", "n2")]
SPREAD = SpreadConstraint(1, "zone", LabelSelector((("app", "web"),)))
WEB, API = Constraint(SPREAD, "DoNotSchedule", PODS[0]), Constraint(SPREAD, "DoNotSchedule", PODS[1])


def test_a_kept_constraint_is_balanced_again_for_the_same_pods_or_equal_records_only() -> None:
    kept = KeptSpreads().run_on(NODES)
    assert not kept.balanced(WEB, PODS)
    kept.remember_balanced(WEB, PODS)
    kept.run_on(dict(NODES))  # another cycle, the same nodes
    assert kept.balanced(WEB, PODS)
    assert kept.balanced(WEB, [pod("a", "n1"), pod("b", "n2")])  # records equal to the kept ones
    restarted = dataclasses.replace(PODS[1], containers=ContainerStatuses(restarts=3))
    assert kept.balanced(WEB, [PODS[0], restarted]), "a newer status of the same pod: nothing counted changed"
    assert kept.balanced(WEB, [restarted, PODS[0]]), "in another order"
    assert not kept.balanced(WEB, [pod("a", "n1"), pod("b", "n1")])  # a pod on another node
    assert not kept.balanced(WEB, [PODS[0], dataclasses.replace(PODS[1], labels={"app": "db"})])
    assert not kept.balanced(WEB, [PODS[0], pod("c", "n2")])  # another pod
    assert not kept.balanced(WEB, PODS[:1])
    assert not kept.balanced(API, PODS), "kept by the constraint object, not by an equal spread"
    assert not kept.balanced(dataclasses.replace(WEB), PODS)


def test_other_nodes_forget_every_kept_constraint() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced(WEB, PODS)
    kept.run_on({**NODES, "n2": dataclasses.replace(NODES["n2"], labels={"zone": "b"})})
    assert not kept.balanced(WEB, PODS)


def test_a_constraint_no_run_asks_about_is_forgotten_after_one_more_run() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced(WEB, PODS)
    kept.remember_balanced(API, PODS)
    kept.run_on(NODES)
    assert kept.balanced(WEB, PODS)  # asked: carried on
    kept.run_on(NODES)
    assert kept.balanced(WEB, PODS) and not kept.balanced(API, PODS)


def test_a_shape_s_domains_are_kept_on_the_same_nodes_only() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.domains["zone"] = Domains({"n1": "a"}, ["a"])
    assert kept.run_on(dict(NODES)).domains == {"zone": Domains({"n1": "a"}, ["a"])}
    assert kept.run_on({"n1": NODES["n1"]}).domains == {}


def test_a_node_s_status_report_keeps_what_was_found_and_a_taint_forgets_it() -> None:
    kept = KeptSpreads().run_on(NODES)
    kept.remember_balanced(WEB, PODS)
    kept.domains["zone"] = Domains({"n1": "a"}, ["a"])
    ready = dataclasses.replace(NODES["n1"].conditions[0], heartbeat=NOW)
    after_report = {**NODES, "n1": dataclasses.replace(NODES["n1"], conditions=(ready,), resource_version="2")}
    assert after_report != NODES
    kept.run_on(after_report)
    assert kept.balanced(WEB, PODS) and kept.domains == {"zone": Domains({"n1": "a"}, ["a"])}
    assert kept.nodes is after_report, "the run reads this cycle's records"
    kept.run_on({**after_report, "n2": dataclasses.replace(NODES["n2"], taints=(Taint("dedicated", "x"),))})
    assert not kept.balanced(WEB, PODS) and kept.domains == {}


def test_declared_constraints_are_found_again_only_when_a_node_s_declaring_pods_changed() -> None:
    kept, finds = KeptSpreads().run_on(NODES), []

    def find() -> dict[str, list[Constraint]]:
        finds.append(1)
        return {"default": [WEB]}
    spreading = {"n1": PODS[:1], "n2": PODS[1:]}
    assert kept.declared(spreading, "args", find) == {"default": [WEB]}
    kept.run_on(dict(NODES))
    assert kept.declared(dict(spreading), "args", find) == {"default": [WEB]} and len(finds) == 1
    kept.declared({**spreading, "n2": [pod("b", "n2")]}, "args", find)  # an equal record in a new list
    assert len(finds) == 2
    kept.declared({"n1": PODS[:1]}, "args", find)  # n2's pods declare none now
    kept.declared({"n1": PODS[:1]}, "other args", find)
    assert len(finds) == 4
    kept.run_on({"n1": NODES["n1"]})  # other nodes
    kept.declared({"n1": PODS[:1]}, "other args", find)
    assert len(finds) == 5


def _finder(found: list[Constraint], declaring: PodRecord) -> Callable[[Intern], list[Constraint]]:
    def find(intern: Intern) -> list[Constraint]:
        found.append(intern("web", SPREAD, "DoNotSchedule", declaring))
        return [found[-1]]
    return find


def test_a_namespace_s_constraints_are_found_again_only_for_pods_not_alike_each_as_the_object_found_before() -> None:
    kept, found = KeptSpreads().run_on(NODES), []

    def find_all(pods: list[PodRecord]) -> Callable[[], dict[str, list[Constraint]]]:
        return lambda: {"default": kept.declared_in("default", pods, _finder(found, pods[0]))}
    first = [PODS[0]]
    kept.declared({"n1": first}, "args", find_all(first))
    restarted = [dataclasses.replace(PODS[0], containers=ContainerStatuses(restarts=1))]
    assert kept.declared({"n1": restarted}, "args", find_all(restarted)) == {"default": [found[0]]}
    assert len(found) == 1, "alike in all constraints are found from: not found again"
    other_spread = [dataclasses.replace(PODS[0], hard_spread=(SPREAD,))]
    kept.declared({"n1": other_spread}, "args", find_all(other_spread))
    assert len(found) == 2 and found[1] is found[0], "found again, as the object found before"
    assert found[1].declared_by is PODS[0]
    kept.declared({"n1": other_spread}, "other args", find_all(other_spread))
    assert len(found) == 3 and found[2] is not found[0], "other arguments: a new object"
    kept.declared({"n1": []}, "other args", dict)  # a find without the namespace
    kept.declared({"n1": first}, "other args", find_all(first))
    assert len(found) == 4 and found[3] is not found[2], "a find without it forgot it"
