"""The gate: every entry point walks the same checks in the same order (checks.ORDER), a candidate (what a rule
demands) and a move (optional) differ only where the checks say so, and a refusal is recorded where it says."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import Plan, PlannedEviction
from remediator.model.records import LabelSelector, PdbRecord, PodRecord
from remediator.planning.books import Books
from remediator.planning.checks import ORDER
from remediator.planning.gate import CYCLE, NODE, Gate
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy
from remediator.policy.safety import EXCLUDE_LABEL
from remediator.state.snapshot import Snapshot
from tests.unit.remediator.strategies.cluster import node, pod, snapshot

NO_COOLDOWN = Limits(owner_cooldown=dt.timedelta(0))


def gate_for(s: Snapshot, *, limits: Limits = NO_COOLDOWN) -> tuple[Gate, Plan]:
    plan = Plan()
    books = Books(s, Policy(limits=limits), plan, PlannerMemory(), exclude=set(), planned_taints={}, carrying={})
    return Gate(books, strategy="Test", terminal_pods=False, evict_taints={}, breaker_open=False), plan


def wants(p: PodRecord) -> PlannedEviction:
    return PlannedEviction(p, "Test", "test")


def daemon(name: str, node_name: str) -> PodRecord:
    return pod(name, node_name, owner="DaemonSet")


def test_the_checks_in_their_one_order() -> None:
    assert ORDER == ("already decided", "eviction limits used up", "safety rails", "DefaultEvictor", "loop guard",
                     "PodDisruptionBudget budget", "eviction limits and owner cool-down", "node fit")


def test_a_candidate_that_a_rail_protects_is_protected_even_when_the_limits_are_used_up() -> None:
    s = snapshot([node("n1"), node("n2")], [pod("a", "n1"), daemon("ds", "n1")])
    gate, plan = gate_for(s, limits=Limits(max_pods_to_evict_total=1, owner_cooldown=dt.timedelta(0)))
    gate.admit(wants(pod("a", "n1")))
    gate.admit(wants(daemon("ds", "n1")))
    assert [e.pod.name for e in plan.evictions] == ["a"]
    assert [p.pod.name for p in plan.protected] == ["ds"] and plan.deferred == []


def test_a_candidate_over_the_limit_is_deferred_but_a_move_over_it_stops_the_walk_and_records_nothing() -> None:
    s = snapshot([node("n1"), node("n2")], [pod("a", "n1"), pod("b", "n1"), daemon("ds", "n1")])
    gate, plan = gate_for(s, limits=Limits(max_pods_to_evict_total=1, owner_cooldown=dt.timedelta(0)))
    assert gate.move(wants(pod("a", "n1")), ["n2"]).evicted
    outcome = gate.move(wants(daemon("ds", "n1")), ["n2"])
    assert (outcome.evicted, outcome.stop) == (False, CYCLE)
    assert plan.protected == [] and plan.deferred == [], "a stop decides nothing"
    gate.admit(wants(pod("b", "n1")))
    assert [(p.pod.name, p.why) for p in plan.deferred] == [("b", "limit: maximum 1 evictions per cycle reached")]


def test_a_move_stops_at_the_node_limit_and_goes_on_elsewhere() -> None:
    s = snapshot([node("n1"), node("n2"), node("n3")], [pod("a", "n1"), pod("b", "n1"), pod("c", "n2")])
    gate, plan = gate_for(s, limits=Limits(max_pods_to_evict_per_node=1, owner_cooldown=dt.timedelta(0)))
    assert gate.move(wants(pod("a", "n1")), ["n3"]).evicted
    assert gate.move(wants(pod("b", "n1")), ["n3"]).stop == NODE
    assert gate.move(wants(pod("c", "n2")), ["n3"]).evicted
    assert [e.pod.name for e in plan.evictions] == ["a", "c"]


def test_a_pdb_budget_defers_a_move_but_not_a_candidate() -> None:
    a, b = pod("a", "n1", labels={"app": "x"}), pod("b", "n1", labels={"app": "x"})
    s = snapshot([node("n1"), node("n2")], [a, b])
    s.pdbs.append(PdbRecord("default", "x", LabelSelector(match_labels=(("app", "x"),)), disruptions_allowed=0))
    gate, plan = gate_for(s)
    assert not gate.move(wants(a), ["n2"]).evicted
    assert [(p.pod.name, p.why) for p in plan.deferred] == [
        ("a", "PodDisruptionBudget default/x allows 0 disruption(s) now")]
    gate.admit(wants(b))  # a rule's eviction: the evictor retries it through the PDB's refusals
    assert [e.pod.name for e in plan.evictions] == ["b"]


def test_a_refusal_decides_nothing_and_the_rails_come_before_the_evictor() -> None:
    held = node("n1", labels={EXCLUDE_LABEL: "true"})
    s = snapshot([held, node("n2")], [daemon("ds", "n1")])
    gate, plan = gate_for(s)
    why = gate.refusal(wants(daemon("ds", "n1")))
    assert why is not None and "opted out" in why
    assert plan.protected == [] and "default/ds" not in gate.view.decided
    gate.admit(wants(daemon("ds", "n1")))
    assert len(plan.protected) == 1 and "opted out" in plan.protected[0].why


def test_a_pod_decided_once_is_never_decided_again() -> None:
    s = snapshot([node("n1"), node("n2")], [pod("a", "n1")])
    gate, plan = gate_for(s)
    gate.admit(wants(pod("a", "n1")))
    gate.admit(wants(pod("a", "n1")))
    assert not gate.move(wants(pod("a", "n1")), ["n2"]).evicted
    assert len(plan.evictions) == 1 and plan.protected == plan.deferred == []


def test_an_exchange_needs_a_shared_pdb_to_allow_both_and_otherwise_decides_nothing() -> None:
    a = pod("a", "n1", labels={"app": "x"}, owner_name="x")
    b = pod("b", "n2", labels={"app": "x"}, owner_name="x")
    s = snapshot([node("n1"), node("n2")], [a, b])
    s.pdbs.append(PdbRecord("default", "x", LabelSelector(match_labels=(("app", "x"),)), disruptions_allowed=1))
    gate, plan = gate_for(s)
    assert not gate.exchange(wants(a), wants(b))
    assert plan.evictions == [] and not gate.view.decided
    s.pdbs[0] = PdbRecord("default", "x", LabelSelector(match_labels=(("app", "x"),)), disruptions_allowed=2)
    gate, plan = gate_for(s)
    assert gate.exchange(wants(a), wants(b))
    assert [(e.pod.name, e.destination) for e in plan.evictions] == [("a", "n2"), ("b", "n1")]
