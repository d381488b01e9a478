"""PlannerMemory: what an eviction records (leaving, the owner's last eviction, a balance move off the node), what
forgetting an eviction, a pod that left, and old balance moves removes, and what each keeps."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import SchedulerLoop
from remediator.model.records import OwnerRef, PodRecord
from remediator.planning.leaving import Leaving
from remediator.planning.memory import LOOP_GUARD, PlannerMemory
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2026, 1, 2, 12, 0, 0, tzinfo=dt.UTC)
RS = OwnerRef("ReplicaSet", "web", "rs-web", controller=True)


def _pod(name: str, node: str = "n1", owners: tuple[OwnerRef, ...] = (RS,)) -> PodRecord:
    return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=node, phase="Running", owners=owners)


def _snapshot(*pods: PodRecord) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return Snapshot(now=NOW, nodes={}, pods_by_node=by_node, pods_by_owner={})


def test_a_balance_eviction_records_the_pod_leaving_the_owners_last_eviction_and_the_move_off_its_node() -> None:
    memory, pod = PlannerMemory(), _pod("w1")
    memory.record_eviction(pod, balance=True, now=NOW, destination="n2")
    assert memory.leaving == {"uid-w1": Leaving(pod, "n2", NOW)}
    assert memory.owner_last_eviction == {"rs-web": NOW}
    assert memory.moved_off == {("rs-web", "n1"): NOW}


def test_an_eviction_that_is_no_balance_move_records_no_move_off() -> None:
    memory = PlannerMemory()
    memory.record_eviction(_pod("w1"), balance=False, now=NOW)
    assert memory.leaving["uid-w1"].destination is None
    assert (memory.owner_last_eviction, memory.moved_off) == ({"rs-web": NOW}, {})


def test_a_landed_move_is_no_move_off_until_its_landing_misses() -> None:
    """A pinned replacement cannot come back to the node it left (control/landings.py): the loop detector would only
    count the workload's other new pods there, a rollout's, as returns."""
    memory = PlannerMemory()
    memory.record_eviction(_pod("w1"), balance=True, now=NOW, destination="n2", pinned=True)
    assert (memory.owner_last_eviction, memory.moved_off) == ({"rs-web": NOW}, {})
    memory.moved_back_possible("rs-web", "n1", NOW)
    assert memory.moved_off == {("rs-web", "n1"): NOW}
    memory.moved_back_possible("rs-web", "n1", NOW - dt.timedelta(minutes=1))
    assert memory.moved_off == {("rs-web", "n1"): NOW}, "a later move of the same node is kept"


def test_an_ownerless_pod_is_recorded_as_leaving_only() -> None:
    memory = PlannerMemory()
    memory.record_eviction(_pod("bare", owners=()), balance=True, now=NOW)
    assert list(memory.leaving) == ["uid-bare"]
    assert (memory.owner_last_eviction, memory.moved_off) == ({}, {})


def test_forget_eviction_drops_the_pod_from_leaving_and_tolerates_an_unknown_uid() -> None:
    memory = PlannerMemory()
    memory.record_eviction(_pod("w1"), balance=True, now=NOW)
    memory.forget_eviction("uid-w1")
    memory.forget_eviction("uid-never")
    assert memory.leaving == {}
    assert memory.moved_off == {("rs-web", "n1"): NOW}  # the move was made: the loop guard keeps it


def test_forget_left_keeps_the_pods_the_snapshot_still_holds_and_returns_them_to_book() -> None:
    memory = PlannerMemory()
    still, gone = _pod("still"), _pod("gone")
    memory.record_eviction(still, balance=True, now=NOW, destination="n2")
    memory.record_eviction(gone, balance=True, now=NOW, destination="n3")
    now_terminating = PodRecord(namespace="ns", name="still", uid="uid-still", node_name="n1", terminating=True)
    assert memory.forget_left(_snapshot(now_terminating)) == [(now_terminating, "n2")]
    assert list(memory.leaving) == ["uid-still"]


def test_forget_before_drops_old_moves_and_the_sizes_of_owners_with_no_move_or_loop_left() -> None:
    memory = PlannerMemory()
    horizon = NOW - LOOP_GUARD
    memory.moved_off = {("old", "n1"): horizon - dt.timedelta(seconds=1), ("new", "n1"): horizon,
                        ("looping", "n1"): horizon - dt.timedelta(hours=1)}
    memory.owner_size = {"old": 3, "new": 4, "looping": 5, "never-moved": 6}
    memory.loops = {"looping": SchedulerLoop("ns", "ReplicaSet/l", "looping", "n1", horizon, horizon,
                                             NOW + dt.timedelta(hours=1))}
    memory.forget_before(horizon)
    assert memory.moved_off == {("new", "n1"): horizon}
    assert memory.owner_size == {"new": 4, "looping": 5}
