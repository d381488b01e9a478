"""remove_pods_violating_inter_pod_anti_affinity/kept.py: a holder whose terms read only its own node, found clear, is
not looked at again while the node's pod list, the Ready nodes' placement and the scope stay; any other holder is
looked at every run."""

from __future__ import annotations

import dataclasses

import pytest

from remediator.model.records import NodeRecord, PodRecord
from remediator.policy.fields import Namespaces
from remediator.state.derived import Derived
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.kept import KeptAntiAffinity
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.plan import NAME
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot
from tests.unit.remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.test_plan import (
    ARGS,
    HOST,
    ZONE,
    web,
)

NODES = [node(f"n{i}", labels={HOST: f"n{i}", ZONE: z}) for i, z in ((1, "a"), (2, "a"), (3, "b"))]


def run(pods: list[PodRecord], derived: Derived, nodes: list[NodeRecord] = NODES, **args: object) -> list[str]:
    s = dataclasses.replace(snapshot(nodes, pods), derived=derived)
    return evicted(cycle(s, NAME, dataclasses.replace(ARGS, **args)))


def looks(derived: Derived, pods: list[PodRecord], name: str) -> list[str]:
    """The holders the kept table says `name` needs looked at, for the list a snapshot of `pods` hands that node (the
    same list object the last run saw when the caller passes the same list)."""
    def unexpected() -> tuple[PodRecord, ...]:
        pytest.fail(f"{name}'s holders were worked out again")
    return [p.name for p in derived.kept_by(NAME, KeptAntiAffinity).needing_a_look(name, pods, unexpected)]


def test_a_clear_hostname_holder_is_kept_and_a_zone_holder_is_looked_at_every_run() -> None:
    d = Derived()
    host, zone = web("host", "n1", avoid="db"), web("zone", "n2", avoid="db", key=ZONE)
    by_node = {"n1": [host], "n2": [zone]}
    s = dataclasses.replace(snapshot(NODES, []), pods_by_node=by_node, derived=d)
    assert evicted(cycle(s, NAME, ARGS)) == []
    assert looks(d, by_node["n1"], "n1") == [], "clear, reading n1's pods only: kept"
    assert looks(d, by_node["n2"], "n2") == ["zone"], "its zone holds other nodes' pods"


def test_a_new_pod_list_is_looked_at_again_and_a_violation_found() -> None:
    d = Derived()
    host = web("host", "n1", avoid="db")
    assert run([host], d) == []
    db = pod("db", "n1", labels={"app": "db"})
    assert run([host, db], d) == ["host"], "n1's list changed: looked at, violated"


def test_a_holder_clear_only_because_its_violator_goes_this_run_is_looked_at_next_run() -> None:
    d = Derived()
    a, b = web("a", "n1"), web("b", "n1")  # they repel each other: the first goes, the other is then clear
    pods = [a, b]
    s = dataclasses.replace(snapshot(NODES, pods), derived=d)
    assert evicted(cycle(s, NAME, ARGS)) == ["a"]
    assert looks(d, s.pods_by_node["n1"], "n1") == ["a", "b"], "b was violated but for a going: not kept clear"


def test_a_node_sharing_the_hostname_value_or_another_scope_forgets_what_was_kept() -> None:
    d = Derived()
    on_n1 = [web("host", "n1", avoid="db")]
    s = dataclasses.replace(snapshot(NODES, []), pods_by_node={"n1": on_n1}, derived=d)
    assert evicted(cycle(s, NAME, ARGS)) == [] and looks(d, on_n1, "n1") == []
    twin = node("n4", labels={HOST: "n1", ZONE: "b"})  # a second node in n1's hostname domain, n1's list the same
    s = dataclasses.replace(snapshot([*NODES, twin], []), derived=d,
                            pods_by_node={"n1": on_n1, "n4": [pod("db", "n4", labels={"app": "db"})]})
    assert evicted(cycle(s, NAME, ARGS)) == ["host"], "n1's domain now holds n4's db pod"
    d2 = Derived()
    s = dataclasses.replace(snapshot(NODES, []), pods_by_node={"n1": on_n1}, derived=d2)
    assert evicted(cycle(s, NAME, ARGS)) == [] and looks(d2, on_n1, "n1") == []
    kept = d2.kept_by(NAME, KeptAntiAffinity).run_on(NODES, PodScope(Namespaces(exclude=("kube-system",))))
    worked_out = (on_n1[0],)
    assert kept.needing_a_look("n1", on_n1, lambda: worked_out) is worked_out, "another scope: worked out again"
