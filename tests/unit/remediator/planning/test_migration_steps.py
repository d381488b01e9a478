"""A migration's transitions (planning/migration_steps.py): decided, re-checked, run step by step, reverted."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from remediator.model.migration import Decision, Gain, Migration, Phase, Step, StepState, StepStatus
from remediator.model.records import Condition, Effect, LabelSelector, NodeRecord, OwnerRef, PdbRecord, PodRecord, Taint
from remediator.planning.migration_steps import ClusterView, Moment, MoveOutcome, Transition, advance, recheck

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
DEADLINE = dt.timedelta(minutes=2)
WEB = OwnerRef("ReplicaSet", "web", "rs-web", controller=True)


def node(name: str, **kw: object) -> NodeRecord:
    return NodeRecord(name=name, labels={"kubernetes.io/hostname": name}, conditions=(Condition("Ready", "True"),),
                      **kw)  # type: ignore[arg-type]


def pod(name: str, on: str, phase: str = "Running", uid: str = "") -> PodRecord:
    return PodRecord(namespace="shop", name=name, uid=uid or f"uid-{name}", node_name=on, phase=phase,
                     labels={"app": "web"}, owners=(WEB,))


def view(*pods: PodRecord, nodes: tuple[NodeRecord, ...] = (), pdb_allows: int | None = None) -> ClusterView:
    nodes = nodes or (node("n1"), node("n2"), node("n3"))
    pdbs = [] if pdb_allows is None else [PdbRecord("shop", "web", LabelSelector((("app", "web"),)),
                                                    disruptions_allowed=pdb_allows)]
    return ClusterView({p.key: p for p in pods}, {n.name: n for n in nodes}, pdbs)


def step(name: str, source: str, target: str) -> Step:
    return Step(pod=f"shop/{name}", pod_uid=f"uid-{name}", owner="ReplicaSet/web", owner_uid="rs-web",
                source=source, target=target, hostname=target)


MIGRATION = Migration(name="migration-0011aabb", namespace="ops", engine="BalanceResourceMix", proposed=NOW,
                      expires=NOW + dt.timedelta(hours=1), steps=(step("a", "n1", "n2"), step("b", "n1", "n3")),
                      gain=Gain("resource-mix deviation (points)", 160.0, 120.0), phase=Phase.PROPOSED)
START = view(pod("a", "n1"), pod("b", "n1"), pdb_allows=1)


def at(v: ClusterView, *, now: dt.datetime = NOW, in_flight: bool = False, outcome: MoveOutcome | None = None,
       keep: bool = False) -> Moment:
    return Moment(view=v, now=now, in_flight=in_flight, outcome=outcome, step_deadline=DEADLINE, keep_completed=keep)


def applied(m: Migration, t: Transition | None) -> Migration:
    assert t is not None
    return dataclasses.replace(m, phase=t.phase, step_status=t.steps, message=t.message)


def test_an_object_whose_status_the_remediator_never_wrote_is_refused_whatever_it_asks() -> None:
    made_by_hand = dataclasses.replace(MIGRATION, phase=None, decision=Decision.APPROVED)
    t = advance(made_by_hand, at(START))
    assert t is not None and t.phase == Phase.REFUSED and t.move is None and "not proposed by nodemedic" in t.message


def test_a_proposal_waits_for_its_decision_until_it_expires_and_a_rejected_one_moves_nothing() -> None:
    assert advance(MIGRATION, at(START)) is None
    t = advance(MIGRATION, at(START, now=MIGRATION.expires))
    assert t is not None and (t.phase, t.move) == (Phase.EXPIRED, None)
    t = advance(dataclasses.replace(MIGRATION, decision=Decision.REJECTED), at(START))
    assert t is not None and (t.phase, t.move) == (Phase.REJECTED, None)


@pytest.mark.parametrize(("changed", "why"), [
    (view(pod("a", "n3"), pod("b", "n1"), pdb_allows=1), "step 1: pod shop/a runs on n3 now, not n1"),
    (view(pod("b", "n1"), pdb_allows=1), "step 1: pod shop/a is gone"),
    (view(pod("a", "n1", uid="other"), pod("b", "n1"), pdb_allows=1), "step 1: pod shop/a is gone"),
    (view(pod("a", "n1"), pod("b", "n1"), nodes=(node("n1"), node("n2"), node("n3", unschedulable=True)),
          pdb_allows=1), "step 2: node n3 is cordoned"),
    (view(pod("a", "n1"), pod("b", "n1"), nodes=(node("n1"), node("n3"))), "step 1: node n2 is gone"),
    (view(pod("a", "n1"), pod("b", "n1"), nodes=(node("n1"), node("n2", taints=(Taint("bad", "", Effect.NO_EXECUTE),)),
                                                 node("n3"))), "step 1: node n2 is tainted bad:NoExecute"),
    (view(pod("a", "n1"), pod("b", "n1"), pdb_allows=0), "PodDisruptionBudget shop/web allows no disruption now"),
], ids=["pod-moved", "pod-gone", "pod-replaced", "target-cordoned", "target-gone", "target-tainted", "pdb-at-limit"])
def test_an_approved_plan_the_cluster_no_longer_fits_is_refused_and_nothing_moves(changed: ClusterView,
                                                                                   why: str) -> None:
    assert recheck(MIGRATION, changed) == why
    t = advance(dataclasses.replace(MIGRATION, decision=Decision.APPROVED), at(changed))
    assert t is not None and (t.phase, t.move) == (Phase.REFUSED, None) and why in t.message


def test_an_approved_plan_runs_one_step_at_a_time_each_done_when_its_replacement_runs_on_the_planned_node() -> None:
    m = dataclasses.replace(MIGRATION, decision=Decision.APPROVED)
    t = advance(m, at(START))
    assert t is not None and t.phase == Phase.RUNNING and t.move is not None
    assert (t.move.pod.key, t.move.target, t.move.hostname, t.move.undo) == ("shop/a", "n2", "n2", False)
    m = applied(m, t)
    assert [s.state for s in m.step_status] == [StepState.MOVING, StepState.PENDING]
    assert advance(m, at(START, in_flight=True)) is None, "its eviction and landing under way"
    m = applied(m, advance(m, at(START, outcome=MoveOutcome(True, "shop/a2", "landed"))))
    assert m.state(0) == StepStatus(0, StepState.MOVING, "shop/a2", NOW, "shop/a2 bound to n2")
    bound = view(pod("a2", "n2", phase="Pending"), pod("b", "n1"), pdb_allows=1)
    assert advance(m, at(bound)) is None, "bound, not running yet, within the deadline"
    running = view(pod("a2", "n2"), pod("b", "n1"), pdb_allows=1)
    m = applied(m, advance(m, at(running)))
    assert (m.phase, m.state(0).state) == (Phase.RUNNING, StepState.DONE)
    t = advance(m, at(running))
    assert t is not None and t.move is not None and (t.move.pod.key, t.move.target) == ("shop/b", "n3")
    m = applied(m, t)
    m = applied(m, advance(m, at(running, outcome=MoveOutcome(True, "shop/b2", "landed"))))
    m = applied(m, advance(m, at(view(pod("a2", "n2"), pod("b2", "n3")))))
    assert m.phase == Phase.SUCCEEDED and [s.state for s in m.step_status] == [StepState.DONE, StepState.DONE]
    assert advance(m, at(START)) is None, "finished"


def two_done_one_moving() -> tuple[Migration, ClusterView]:
    """Step 1 done (a -> a2 on n2), step 2 under way."""
    m = dataclasses.replace(MIGRATION, decision=Decision.APPROVED, phase=Phase.RUNNING, step_status=(
        StepStatus(0, StepState.DONE, "shop/a2", NOW, ""), StepStatus(1, StepState.MOVING, "", NOW, "")))
    return m, view(pod("a2", "n2"), pod("b", "n1"))


def test_a_failed_step_stops_the_plan_and_the_completed_steps_are_undone_the_same_way() -> None:
    m, v = two_done_one_moving()
    m = applied(m, advance(m, at(v, outcome=MoveOutcome(False, "shop/b2", "unguided: bound to n1"))))
    assert m.phase == Phase.REVERTING and m.state(1).state == StepState.FAILED
    assert "step 2 failed (unguided: bound to n1): undoing 1 completed step" in m.message
    t = advance(m, at(v))
    assert t is not None and t.move is not None
    assert (t.move.undo, t.move.pod.key, t.move.target, t.move.hostname) == (True, "shop/a2", "n1", "n1")
    m = applied(m, t)
    assert m.state(0).state == StepState.UNDOING
    m = applied(m, advance(m, at(v, outcome=MoveOutcome(True, "shop/a3", "landed"))))
    m = applied(m, advance(m, at(view(pod("a3", "n1"), pod("b", "n1")))))
    assert m.state(0) == StepStatus(0, StepState.UNDONE, "shop/a3", NOW, "shop/a3 runs on n1 again")
    m = applied(m, advance(m, at(view(pod("a3", "n1"), pod("b", "n1")))))
    assert (m.phase, m.message) == (Phase.REVERTED, "every completed step undone")


def test_with_completed_steps_kept_a_failed_step_ends_the_plan_as_failed() -> None:
    m, v = two_done_one_moving()
    t = advance(m, at(v, outcome=MoveOutcome(False, "", "no replacement"), keep=True))
    assert t is not None and t.phase == Phase.FAILED and t.move is None
    assert t.message == "step 2 failed: no replacement; 1 completed step kept (migrations.onFailure: keep)"


def test_a_move_whose_outcome_was_lost_fails_and_a_replacement_not_running_by_the_deadline_fails() -> None:
    m, v = two_done_one_moving()
    t = advance(m, at(v))
    assert t is not None and t.phase == Phase.REVERTING and "outcome was lost" in t.message
    bound = dataclasses.replace(m, step_status=(m.state(0), StepStatus(1, StepState.MOVING, "shop/b2", NOW, "")))
    pending = view(pod("a2", "n2"), pod("b2", "n3", phase="Pending"))
    assert advance(bound, at(pending, now=NOW + DEADLINE - dt.timedelta(seconds=1))) is None
    t = advance(bound, at(pending, now=NOW + DEADLINE))
    assert t is not None and t.phase == Phase.REVERTING and "shop/b2 is Pending on n3" in t.message


def test_a_step_whose_target_was_tainted_meanwhile_fails_before_anything_moves() -> None:
    m, _ = two_done_one_moving()
    m = dataclasses.replace(m, step_status=(m.state(0),))
    tainted = view(pod("a2", "n2"), pod("b", "n1"), nodes=(node("n1"), node("n2"), node(
        "n3", taints=(Taint("nodemedic.io/KernelDeadlock", "", Effect.NO_SCHEDULE),))))
    t = advance(m, at(tainted))
    assert t is not None and t.move is None and t.phase == Phase.REVERTING
    assert t.steps[1].state == StepState.FAILED and "node n3 is tainted nodemedic.io/KernelDeadlock" in t.message


def test_an_undo_that_cannot_start_is_recorded_and_the_plan_ends_failed_naming_it() -> None:
    m, _ = two_done_one_moving()
    m = dataclasses.replace(m, phase=Phase.REVERTING, step_status=(
        m.state(0), StepStatus(1, StepState.FAILED, "", NOW, "x")))
    gone = view(pod("b", "n1"))
    m = applied(m, advance(m, at(gone)))
    assert m.state(0).state == StepState.UNDO_FAILED and "pod shop/a2 is gone" in m.state(0).message
    m = applied(m, advance(m, at(gone)))
    assert m.phase == Phase.FAILED and m.message == "reverted, except step 1, whose undo failed"
