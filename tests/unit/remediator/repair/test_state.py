"""The repair ladder's annotation: what to_annotation writes parse_state reads back, the history bounded to
MAX_HISTORY steps and each result to MAX_RESULT characters, and every unreadable field refused by name."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from nodemedic_common.repair_contract import RepairAction
from remediator.repair.state import MAX_HISTORY, MAX_RESULT, LadderState, StateError, Tried, parse_state, step_id

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)


def _tried(i: int, *, result: str = "persisted", service: str = "") -> Tried:
    return Tried(step=i % 100, action=RepairAction.RESTART, service=service, requested=T0 + dt.timedelta(minutes=i),
                 ended=T0 + dt.timedelta(minutes=i, seconds=30), result=result)


def _state(history: tuple[Tried, ...] = (), *, service: str = "kubelet") -> LadderState:
    return LadderState(id="1767322800-1", rule="kubelet-down", step=1, action=RepairAction.REBOOT, service=service,
                       requested=T0 + dt.timedelta(minutes=5), started=T0, history=history)


def _doc(**changes: object) -> str:
    doc: dict[str, object] = json.loads(_state((_tried(0, service="kubelet"),)).to_annotation())
    doc.update(changes)
    return json.dumps({k: v for k, v in doc.items() if v is not None})


def test_a_ladder_written_to_its_annotation_reads_back_the_same() -> None:
    state = _state((_tried(0, service="kubelet"), _tried(1)))
    assert parse_state(state.to_annotation()) == state


def test_the_annotation_leaves_out_an_empty_service_and_writes_utc_seconds() -> None:
    doc = json.loads(_state((_tried(0),), service="").to_annotation())
    assert "service" not in doc and "service" not in doc["history"][0]
    assert (doc["requested"], doc["started"]) == ("2026-01-02T03:05:00Z", "2026-01-02T03:00:00Z")


def test_the_annotation_keeps_only_the_newest_steps_of_a_long_history() -> None:
    history = tuple(_tried(i) for i in range(MAX_HISTORY + 3))
    doc = json.loads(_state(history).to_annotation())
    assert [h["step"] for h in doc["history"]] == list(range(3, MAX_HISTORY + 3))
    assert parse_state(_state(history).to_annotation()).history == history[-MAX_HISTORY:]


def test_a_long_result_is_cut_to_max_result_characters_on_write_and_on_read() -> None:
    long = "x" * (MAX_RESULT + 50)
    assert parse_state(_state((_tried(0, result=long),)).to_annotation()).history[0].result == "x" * MAX_RESULT
    raw = _doc(history=[{"step": 0, "action": "restart", "requested": "2026-01-02T03:00:00Z",
                         "ended": "2026-01-02T03:01:00Z", "result": long}])
    assert parse_state(raw).history[0].result == "x" * MAX_RESULT


def test_a_history_on_read_is_cut_to_its_newest_max_history_entries() -> None:
    entries = [{"step": i, "action": "restart", "requested": "2026-01-02T03:00:00Z", "ended": "2026-01-02T03:01:00Z",
                "result": str(i)} for i in range(MAX_HISTORY + 2)]
    assert [t.result for t in parse_state(_doc(history=entries)).history] == [str(i) for i in range(2, MAX_HISTORY + 2)]


def test_a_missing_history_is_an_empty_one() -> None:
    assert parse_state(_doc(history=None)).history == ()


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    (_doc(id=""), "id: expected a non-empty string"),
    (_doc(rule=None), "rule: expected a non-empty string"),
    (_doc(service=3), "service: expected a string"),
    (_doc(step=100), "step: expected a step index 0..99"),
    (_doc(step=-1), "step: expected a step index 0..99"),
    (_doc(step=True), "step: expected a step index 0..99"),
    (_doc(step="1"), "step: expected a step index 0..99"),
    (_doc(action="drain"), "action: expected one of restart, reboot, replace, person"),
    (_doc(requested="yesterday"), "requested: expected an RFC 3339 time"),
    (_doc(started="2026-01-02T03:00:00"), "started: expected an RFC 3339 time"),
    (_doc(history={}), "history: expected a list"),
    (_doc(history=["x"]), "history[0]: expected an object"),
    (_doc(history=[{"step": 0, "action": "restart", "requested": "2026-01-02T03:00:00Z"}]),
     "history[0].ended: expected an RFC 3339 time"),
])
def test_an_unreadable_annotation_is_refused_naming_the_field(text: str, message: str) -> None:
    with pytest.raises(StateError) as e:
        parse_state(text)
    assert str(e.value).startswith(message), str(e.value)
    assert not str(e.value).startswith("the annotation: ")


def test_a_step_id_names_the_second_it_was_asked_for_and_the_step() -> None:
    assert step_id(T0 + dt.timedelta(microseconds=900_000), 2) == f"{int(T0.timestamp())}-2"


def test_a_tried_step_describes_its_action_service_time_and_result() -> None:
    assert _tried(0, service="kubelet").describe() == "restart kubelet at 2026-01-02T03:00:00Z: persisted"
    assert _tried(0).describe() == "restart at 2026-01-02T03:00:00Z: persisted"
