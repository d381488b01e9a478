"""The condition state machine: ownership, restart safety, honest transition times, Unknown on failure."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.model import ConditionReport, Observation, Status
from agent.reporting.conditions import MAX_MESSAGE, TRUNCATED, ConditionBook

T0 = dt.datetime(2026, 11, 22, 12, 0, tzinfo=dt.UTC)


def at(seconds: int) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def obs(check: str, seconds: int, *reports: ConditionReport, error: str = "") -> Observation:
    return Observation(check=check, at=at(seconds), conditions=reports, error=error)


def book() -> ConditionBook:
    return ConditionBook({"kernel": ["KernelDeadlock"], "cpu": ["CPUPressure"]})


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    b = book()
    assert b.apply(obs("kernel", 0, ConditionReport("KernelDeadlock", Status.FALSE, "KernelHasNoDeadlock")))
    assert b.apply(obs("kernel", 5, ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "task x blocked")))
    assert b.apply(obs("kernel", 9, ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "task y blocked")))
    (c,) = b.conditions()
    assert (c.status, c.message, c.last_transition) == (Status.TRUE, "task y blocked", at(5))
    assert not b.apply(obs("kernel", 12, ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "task y blocked")))


def test_a_restart_keeps_what_the_node_shows_until_fresh_evidence_arrives() -> None:
    b = book()
    b.seed([{"type": "KernelDeadlock", "status": "True", "reason": "TaskHung", "message": "m",
             "lastTransitionTime": "2026-11-22T11:00:00Z"},
            {"type": "Ready", "status": "True"}])
    (c,) = b.conditions()
    assert c.status == Status.TRUE and c.last_transition == dt.datetime(2026, 11, 22, 11, 0, tzinfo=dt.UTC)
    assert not b.apply(obs("kernel", 0))  # a log monitor with no evidence yet reports nothing
    assert b.conditions()[0].status == Status.TRUE
    b.apply(obs("kernel", 1, ConditionReport("KernelDeadlock", Status.FALSE, "TaskHungRecovered")))
    assert b.conditions()[0].status == Status.FALSE


def test_a_failing_check_makes_its_conditions_unknown_and_leaves_others_alone() -> None:
    b = book()
    b.apply(obs("cpu", 0, ConditionReport("CPUPressure", Status.FALSE, "NoPressure")))
    b.apply(obs("kernel", 0, ConditionReport("KernelDeadlock", Status.FALSE, "KernelHasNoDeadlock")))
    assert b.apply(obs("cpu", 3, error="timed out after 10s"))
    by_type = {c.type: c for c in b.conditions()}
    assert by_type["CPUPressure"].status == Status.UNKNOWN and "timed out" in by_type["CPUPressure"].message
    assert by_type["KernelDeadlock"].status == Status.FALSE


def test_undeclared_types_are_ignored_and_kubelet_types_cannot_be_owned() -> None:
    b = book()
    assert not b.apply(obs("cpu", 0, ConditionReport("SomethingElse", Status.TRUE, "X")))
    with pytest.raises(ValueError, match="MemoryPressure"):
        ConditionBook({"memory": ["MemoryPressure"]})


def test_types_written_before_but_no_longer_configured_are_retired() -> None:
    assert book().retired(["KernelDeadlock", "NTPProblem", "Ready"]) == ["NTPProblem"]


def test_garbage_on_the_node_is_seeded_as_unknown_instead_of_crashing() -> None:
    b = book()
    b.seed([{"type": "KernelDeadlock", "status": "maybe", "lastTransitionTime": 7}])
    assert b.conditions()[0].status == Status.UNKNOWN
    assert b.conditions()[0].to_api(at(0))["lastHeartbeatTime"] == "2026-11-22T12:00:00Z"


@pytest.mark.parametrize("stamp", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "2026-11-22T11:00:00"],
                         ids=["year-9999", "year-1", "no-offset"])
def test_a_transition_time_on_the_node_that_cannot_be_written_back_is_seeded_as_now(stamp: str) -> None:
    # Issue 25: the book writes its times back in UTC at every status write; these overflowed there (or, naive, were
    # taken as the agent's local time).
    b = book()
    b.seed([{"type": "KernelDeadlock", "status": "True", "lastTransitionTime": stamp}])
    (c,) = b.conditions()
    assert c.status == Status.TRUE and c.last_transition.tzinfo is not None and c.last_transition.year >= 2026
    assert c.to_api(at(0))["lastTransitionTime"].endswith("Z")


def test_declared_defaults_fill_only_types_the_node_does_not_carry() -> None:
    b = book()
    b.seed([{"type": "KernelDeadlock", "status": "True", "reason": "TaskHung",
             "lastTransitionTime": "2026-11-22T11:00:00Z"}],
           [ConditionReport("KernelDeadlock", Status.FALSE, "KernelHasNoDeadlock"),
            ConditionReport("CPUPressure", Status.FALSE, "NoPressure")], now=T0)
    by_type = {c.type: c.status for c in b.conditions()}
    assert by_type == {"KernelDeadlock": Status.TRUE, "CPUPressure": Status.FALSE}


@pytest.mark.parametrize("length", [MAX_MESSAGE + 1, 10 * MAX_MESSAGE, 1 << 20], ids=["one over", "ten times", "1 MiB"])
def test_a_message_over_the_bound_is_written_truncated_with_a_marker(length: int) -> None:
    b = book()
    b.apply(obs("kernel", 0, ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "x" * length)))
    (c,) = b.conditions()
    assert len(c.message) == MAX_MESSAGE and c.message.endswith(TRUNCATED)
    assert c.message.startswith("x" * (MAX_MESSAGE - len(TRUNCATED)))


def test_a_message_at_the_bound_is_written_whole() -> None:
    b = book()
    b.apply(obs("kernel", 0, ConditionReport("KernelDeadlock", Status.TRUE, "TaskHung", "x" * MAX_MESSAGE)))
    assert b.conditions()[0].message == "x" * MAX_MESSAGE
