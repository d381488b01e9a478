"""The read-only view a strategy gets of the plan so far (Gate.view): live, so a move made after the view was taken
shows in it, and the same answers the gate's checks give."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import Plan, PlannedEviction
from remediator.planning.books import Books
from remediator.planning.gate import Gate
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy
from remediator.policy.safety import EXCLUDE_LABEL
from tests.unit.remediator.strategies.cluster import node, pod, snapshot


def test_the_view_shows_the_moves_made_after_it_was_taken() -> None:
    a = pod("a", "n1", cpu=300)
    s = snapshot([node("n1"), node("n2")], [a])
    books = Books(s, Policy(limits=Limits(owner_cooldown=dt.timedelta(0))), Plan(), PlannerMemory(),
                  exclude=set(), planned_taints={}, carrying={})
    first = Gate(books, strategy="First", terminal_pods=False, evict_taints={}, breaker_open=False)
    later = Gate(books, strategy="Later", terminal_pods=False, evict_taints={}, breaker_open=False)
    view = later.view
    assert not view.decided and not view.planned and view.usage("n2").get("cpu", 0) == 0
    assert first.move(PlannedEviction(a, "First", "test"), ["n2"]).evicted
    assert a.key in view.decided and a.key in view.evicting and view.moved_to == {a.uid: "n2"}
    assert [e.pod for e in view.planned] == [a]
    assert view.usage("n2")["cpu"] == 300 and view.receiving("n2")


def test_the_view_answers_what_the_checks_ask() -> None:
    ds, web = pod("ds", "n1", owner="DaemonSet"), pod("web", "n1")
    s = snapshot([node("n1"), node("held", labels={EXCLUDE_LABEL: "true"})], [ds, web])
    books = Books(s, Policy(limits=Limits(max_pods_to_evict_total=0)), Plan(), PlannerMemory(), exclude={"held"},
                  planned_taints={}, carrying={"Test": {"n1": 30.0}})
    memory_strategy = books.memory.strategies["Test"] = {"uid": s.now}
    view = Gate(books, strategy="Test", terminal_pods=False, evict_taints={}, breaker_open=True).view
    assert view.hold("held") is not None and view.hold("n1") is None
    protection = view.protection(ds)
    assert protection is not None and "DaemonSet" in protection and view.protection(web) is None
    assert view.exhausted() and view.breaker_open and view.excluded == {"held"}
    assert view.carrying == {"n1": 30.0} and view.remembered == memory_strategy
