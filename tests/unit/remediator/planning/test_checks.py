"""The gate's checks, each over the books it reads: what each refuses and with which verdict, which apply to a
balance strategy's moves only, and the one order `walk` takes them in."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import Plan, PlannedEviction, SchedulerLoop
from remediator.model.records import LabelSelector, PdbRecord, PodRecord
from remediator.planning.books import Books
from remediator.planning.checks import Verdict, rail_hold, walk
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy
from remediator.policy.safety import EXCLUDE_LABEL
from remediator.state.snapshot import Snapshot
from tests.unit.remediator.strategies.cluster import NOW, node, pod, snapshot

NO_COOLDOWN = Limits(owner_cooldown=dt.timedelta(0))


def books_for(s: Snapshot, *, limits: Limits = NO_COOLDOWN, memory: PlannerMemory | None = None) -> Books:
    return Books(s, Policy(limits=limits), Plan(), memory or PlannerMemory(), exclude=set(), planned_taints={},
                 carrying={})


def verdict(books: Books, p: PodRecord, *, move: bool) -> tuple[Verdict, str] | None:
    refusal = walk(books, p, move=move)
    return None if refusal is None else (refusal.verdict, refusal.why)


def test_a_pod_already_decided_is_refused_without_a_record() -> None:
    a = pod("a", "n1")
    books = books_for(snapshot([node("n1")], [a]))
    assert walk(books, a, move=False) is None
    books.commit(PlannedEviction(a, "Test", "test"), None)
    assert verdict(books, a, move=False) == (Verdict.ALREADY, "already decided")


def test_a_node_a_rail_holds_protects_its_pods_and_says_why() -> None:
    opted_out = node("n1", labels={EXCLUDE_LABEL: "true"})
    a = pod("a", "n1")
    books = books_for(snapshot([opted_out, node("n2")], [a]))
    why = rail_hold(books, "n1")
    assert why is not None and EXCLUDE_LABEL in why
    assert rail_hold(books, "n2") is None and rail_hold(books, "gone") is None
    assert verdict(books, a, move=False) == (Verdict.PROTECTED, why)


def test_the_default_evictor_protects_a_daemonset_pod_for_candidates_and_moves() -> None:
    ds = pod("ds", "n1", owner="DaemonSet")
    books = books_for(snapshot([node("n1")], [ds]))
    for move in (False, True):
        found = verdict(books, ds, move=move)
        assert found is not None and found[0] is Verdict.PROTECTED and "DaemonSet" in found[1]


def test_the_limits_stop_a_moves_walk_but_defer_a_candidate() -> None:
    a, b = pod("a", "n1"), pod("b", "n1")
    books = books_for(snapshot([node("n1"), node("n2")], [a, b]),
                      limits=Limits(max_pods_to_evict_per_node=1, owner_cooldown=dt.timedelta(0)))
    books.commit(PlannedEviction(a, "Test", "test"), "n2")
    move = verdict(books, b, move=True)
    assert move is not None and move[0] is Verdict.STOP_NODE
    candidate = verdict(books, b, move=False)
    assert candidate is not None and candidate[0] is Verdict.DEFERRED


def test_the_total_limit_used_up_stops_the_whole_plan_for_moves() -> None:
    a, b = pod("a", "n1"), pod("b", "n2")
    books = books_for(snapshot([node("n1"), node("n2")], [a, b]),
                      limits=Limits(max_pods_to_evict_total=1, owner_cooldown=dt.timedelta(0)))
    books.commit(PlannedEviction(a, "Test", "test"), None)
    found = verdict(books, b, move=True)
    assert found is not None and found[0] is Verdict.STOP_PLAN


def test_a_pdb_budget_used_up_defers_a_move_only() -> None:
    a, b = pod("a", "n1", labels={"app": "web"}), pod("b", "n1", labels={"app": "web"})
    s = snapshot([node("n1"), node("n2")], [a, b])
    s.pdbs = [PdbRecord("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=1)]
    books = books_for(s)
    books.commit(PlannedEviction(a, "Test", "test"), "n2")
    assert verdict(books, b, move=True) == (
        Verdict.DEFERRED, "PodDisruptionBudget default/web allows 1 disruption(s) now")
    assert walk(books, b, move=False) is None  # a rule's eviction: the evictor retries through the PDB's refusals


def test_the_loop_guard_defers_the_replacement_that_came_back_but_not_the_owners_older_pods() -> None:
    moved_at = NOW - dt.timedelta(minutes=5)
    old = pod("old", "n1", owner_name="web", age=dt.timedelta(days=1))
    back = pod("back", "n1", owner_name="web", age=dt.timedelta(minutes=1))
    memory = PlannerMemory()
    memory.moved_off[("uid-web", "n1")] = moved_at
    books = books_for(snapshot([node("n1"), node("n2")], [old, back]), memory=memory)
    assert walk(books, old, move=True) is None
    found = verdict(books, back, move=True)
    assert found is not None and found[0] is Verdict.DEFERRED
    assert found[1] == "loop guard: a pod of ReplicaSet/web was moved off n1 5m0s ago and its replacement came back"
    assert walk(books, back, move=False) is None  # a candidate is what a rule demands: no loop guard


def test_a_workload_held_for_a_scheduler_loop_is_deferred_from_moves() -> None:
    a = pod("a", "n1", owner_name="web")
    loop = SchedulerLoop("default", "ReplicaSet/web", "uid-web", "n1", moved_at=NOW - dt.timedelta(minutes=9),
                         since=NOW - dt.timedelta(minutes=8), until=NOW + dt.timedelta(hours=1))
    memory = PlannerMemory()
    memory.loops["uid-web"] = loop
    books = books_for(snapshot([node("n1")], [a]), memory=memory)
    assert verdict(books, a, move=True) == (Verdict.DEFERRED, f"loop guard: {loop.describe()}")


def test_the_owner_cooldown_defers_the_owners_next_pod() -> None:
    a, b = pod("a", "n1", owner_name="web"), pod("b", "n1", owner_name="web")
    books = books_for(snapshot([node("n1"), node("n2")], [a, b]),
                      limits=Limits(owner_cooldown=dt.timedelta(minutes=1)))
    books.commit(PlannedEviction(a, "Test", "test"), None)
    found = verdict(books, b, move=False)
    assert found is not None and found[0] is Verdict.DEFERRED and "cool-down" in found[1]


def test_the_first_check_that_refuses_decides() -> None:
    """A DaemonSet pod on an opted-out node: the rail comes before the DefaultEvictor."""
    ds = pod("ds", "n1", owner="DaemonSet")
    books = books_for(snapshot([node("n1", labels={EXCLUDE_LABEL: "true"})], [ds]))
    assert verdict(books, ds, move=False) == (Verdict.PROTECTED, rail_hold(books, "n1"))
