"""remove_pods_violating_topology_spread_constraint/constraint.py: which nodes a constraint counts as domains, and
which constraints share them."""

from __future__ import annotations

import dataclasses

from remediator.model.records import Effect, LabelSelector, SpreadConstraint, Taint, Toleration
from remediator.strategies.remove_pods_violating_topology_spread_constraint.constraint import Constraint
from tests.unit.remediator.strategies.cluster import node, pod

ZONE = "topology.kubernetes.io/zone"
WEB = LabelSelector(match_labels=(("app", "web"),))
GPU = Taint("gpu", "true", Effect.NO_SCHEDULE)


def test_a_node_the_declaring_pod_could_not_select_is_no_domain_unless_node_affinity_is_ignored() -> None:
    picky = pod("web-0", node_selector={"pool": "a"})
    other = node("n-b", labels={ZONE: "b", "pool": "b"})
    honoring = Constraint(SpreadConstraint(1, ZONE, WEB), "DoNotSchedule", picky)
    ignoring = Constraint(SpreadConstraint(1, ZONE, WEB, honor_node_affinity=False), "DoNotSchedule", picky)
    assert not honoring.includes(other) and ignoring.includes(other)
    assert honoring.includes(node("n-a", labels={ZONE: "a", "pool": "a"}))


def test_a_tainted_node_counts_unless_node_taints_are_honoured_and_not_tolerated() -> None:
    tainted = dataclasses.replace(node("n-g", labels={ZONE: "a"}), taints=(GPU,))
    honoring = SpreadConstraint(1, ZONE, WEB, honor_node_taints=True)
    assert Constraint(SpreadConstraint(1, ZONE, WEB), "DoNotSchedule", pod("p")).includes(tainted)
    assert not Constraint(honoring, "DoNotSchedule", pod("p")).includes(tainted)
    tolerant = pod("q", tolerations=(Toleration(key="gpu", operator="Exists", effect=Effect.NO_SCHEDULE),))
    assert Constraint(honoring, "DoNotSchedule", tolerant).includes(tainted)


def test_constraints_share_a_shape_when_what_decides_their_domains_is_the_same() -> None:
    plain, picky = pod("a"), pod("b", node_selector={"pool": "a"})
    spread = SpreadConstraint(1, ZONE, WEB)
    assert Constraint(spread, "DoNotSchedule", plain).shape() == Constraint(spread, "ScheduleAnyway", pod("c")).shape()
    assert Constraint(spread, "DoNotSchedule", plain).shape() != Constraint(spread, "DoNotSchedule", picky).shape()
    ignoring = SpreadConstraint(1, ZONE, WEB, honor_node_affinity=False)  # the pod's selection no longer matters
    assert Constraint(ignoring, "DoNotSchedule", plain).shape() == Constraint(ignoring, "DoNotSchedule", picky).shape()
