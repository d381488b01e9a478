"""The rows of /plan: each made from its plan item, written as its JSON and read back into the same row; a field of
the wrong shape is refused naming its place."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.model.migration import Gain
from remediator.model.plan import (
    Held,
    HoldReason,
    PlannedEviction,
    Proposal,
    Protected,
    SchedulerLoop,
    TaintChange,
    ZoneExposure,
    ZoneMove,
)
from remediator.model.records import Effect, PodRecord, Taint
from remediator.read_side.fields import Fields, Unreadable
from remediator.read_side.plan_rows import (
    Breaker,
    EvictionRow,
    ExposureRow,
    HeldRow,
    LoopRow,
    PodRow,
    ProposalRow,
    TaintRow,
)

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
POD = PodRecord("shop", "web-1", "uid-1", "n1", "Running")


def round_trip(row: object) -> object:
    return type(row).read(Fields.of(row.to_json(), "/plan: row"))  # type: ignore[attr-defined]


def test_a_taint_row_carries_every_field_of_its_change() -> None:
    row = TaintRow.of(TaintChange("n1", Taint("nodemedic.io/kernel", "deadlock", Effect.NO_EXECUTE), ("a", "b"),
                                  "KernelDeadlock=True for 31s"))
    assert row.to_json() == {"node": "n1", "key": "nodemedic.io/kernel", "value": "deadlock", "effect": "NoExecute",
                             "rule": "a,b", "cause": "KernelDeadlock=True for 31s"}
    assert round_trip(row) == row


def test_an_eviction_row_keeps_strategy_and_reason_apart() -> None:
    row = EvictionRow.of(PlannedEviction(POD, "LowNodeUtilization", "node n1 is overutilized"))
    assert (row.namespace, row.name, row.node, row.strategy, row.reason) == (
        "shop", "web-1", "n1", "LowNodeUtilization", "node n1 is overutilized")
    assert round_trip(row) == row


def test_protected_and_held_rows_say_why() -> None:
    pod = PodRow.of(Protected(POD, "the PodDisruptionBudget web allows no disruption now"))
    assert pod.to_json()["why"] == "the PodDisruptionBudget web allows no disruption now"
    assert round_trip(pod) == pod
    taint = Taint("k", "", Effect.NO_SCHEDULE)
    held = HeldRow.of(Held("n2", taint, ("r",), HoldReason.CIRCUIT_BREAKER, "breaker open"))
    assert held.to_json() == {"node": "n2", "key": "k", "effect": "NoSchedule", "rule": "r", "why": "breaker open"}
    assert round_trip(held) == held


def test_a_breaker_without_a_limit_reads_none_and_an_absent_one_is_closed() -> None:
    assert Breaker.read(Fields.of({"open": True, "taintedLimit": None}, "/plan: breaker")) == Breaker(True, None)
    assert Breaker.read(None) == Breaker(False, None)
    assert Breaker.read(Fields.of(Breaker(True, 3).to_json(), "/plan: breaker")) == Breaker(True, 3)


def test_an_exposure_row_rounds_its_shares_and_keeps_its_moves() -> None:
    row = ExposureRow.of(ZoneExposure("shop", "Deployment/web", (("a", 3), ("b", 1)), 0.24999, 0.5,
                                      (ZoneMove("a", "b", 1),)))
    assert row.to_json()["surviving"] == 0.25
    assert row.to_json()["moves"] == [{"from": "a", "to": "b", "pods": 1}]
    assert round_trip(row) == row


def test_a_loop_row_writes_its_times_in_utc_and_its_note() -> None:
    loop = SchedulerLoop("shop", "ReplicaSet/web-7d9f", "uid", "n1", moved_at=NOW, since=NOW,
                         until=NOW + dt.timedelta(minutes=30))
    row = LoopRow.of(loop)
    assert (row.since, row.until) == ("2026-06-01T12:00:00Z", "2026-06-01T12:30:00Z")
    assert row.note == loop.describe()
    assert round_trip(row) == row


def test_a_proposal_row_names_each_move_and_what_the_moves_buy() -> None:
    move = PlannedEviction(POD, "BalanceResourceMix", "mix", destination="n2")
    gain = Gain("resource-mix deviation (points)", 161.684, 142.3)
    row = ProposalRow.of(Proposal("BalanceResourceMix", (move,), gain))
    assert row == ProposalRow("BalanceResourceMix", ("shop/web-1 n1 -> n2",),
                              "resource-mix deviation (points) 161.68 -> 142.3")
    assert ProposalRow.of(Proposal("X", (move,), None)).gain == ""
    assert round_trip(row) == row


@pytest.mark.parametrize(("doc", "problem"), [
    ({"node": "n1", "key": 7, "value": "", "effect": "NoSchedule", "rule": "r", "cause": "c"}, "key"),
    ({"node": "n1", "key": "k", "value": "", "effect": "NoSchedule", "rule": "r"}, "no cause"),
])
def test_a_taint_row_of_the_wrong_shape_is_refused_naming_the_field(doc: dict[str, object], problem: str) -> None:
    with pytest.raises(Unreadable, match=problem):
        TaintRow.read(Fields.of(doc, "/plan: taints: add[0]"))
