"""why_answer.py: the /why/NODE answer built from the facts `why` found, written as JSON and read back, with each
fact's change time said both as an RFC 3339 stamp and as a duration from the answer's time."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.read_side.fields import Fields, Unreadable
from remediator.read_side.why import Fact
from remediator.read_side.why_answer import FactLine, WhyAnswer

NOW = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)


def test_a_fact_that_does_not_change_on_its_own_has_no_change_time() -> None:
    line = FactLine.of(Fact("node", "Ready"), NOW)
    assert line == FactLine("node", "Ready", None, None)
    assert line.to_json() == {"topic": "node", "sentence": "Ready"}


def test_a_fact_changing_later_is_stamped_in_utc_and_counted_in_whole_seconds_from_now() -> None:
    at = (NOW + dt.timedelta(minutes=4, seconds=30, milliseconds=700)).astimezone(dt.timezone(dt.timedelta(hours=2)))
    line = FactLine.of(Fact("rule", "waits", at), NOW)
    assert line.changes_at == "2026-06-01T12:04:30.700000Z"
    assert line.changes_in == "4m30s"
    assert line.to_json() == {"topic": "rule", "sentence": "waits", "changesAt": "2026-06-01T12:04:30.700000Z",
                              "changesIn": "4m30s"}


def test_a_change_time_already_past_is_said_to_come_in_zero_seconds() -> None:
    line = FactLine.of(Fact("timer", "due", NOW - dt.timedelta(seconds=5)), NOW)
    assert line.changes_in == "0s"


def test_an_answer_is_stamped_with_its_time_and_keeps_the_facts_in_order() -> None:
    answer = WhyAnswer.of("n1", NOW, [Fact("node", "Ready"), Fact("taint", "none", NOW + dt.timedelta(seconds=3))])
    assert answer.at == "2026-06-01T12:00:00Z"
    assert [f.topic for f in answer.facts] == ["node", "taint"]
    assert answer.to_json() == {"node": "n1", "at": "2026-06-01T12:00:00Z", "facts": [
        {"topic": "node", "sentence": "Ready"},
        {"topic": "taint", "sentence": "none", "changesAt": "2026-06-01T12:00:03Z", "changesIn": "3s"}]}


def test_an_answer_before_the_first_planning_cycle_has_no_time_and_says_so() -> None:
    answer = WhyAnswer.before_planning("n1")
    assert answer.at is None
    assert answer.facts == (FactLine("plan", "no planning cycle yet"),)
    assert "at" not in answer.to_json()
    assert WhyAnswer.read(answer.to_json(), "/why/n1") == answer


def test_a_fact_line_is_read_with_its_optional_change_time() -> None:
    f = Fields({"topic": "rule", "sentence": "s", "changesAt": "2026-06-01T12:00:03Z", "changesIn": "3s", "x": 1},
               "/why/n1: facts[0]")
    assert FactLine.read(f) == FactLine("rule", "s", "2026-06-01T12:00:03Z", "3s")
    assert FactLine.read(Fields({"topic": "rule", "sentence": "s"}, "p")) == FactLine("rule", "s")


def test_an_answer_without_facts_is_read_as_none() -> None:
    assert WhyAnswer.read({"node": "n1", "at": "t"}, "/why/n1") == WhyAnswer("n1", "t", ())


@pytest.mark.parametrize(("doc", "problem"), [
    ({"node": "n1", "facts": [{"topic": "node", "sentence": "s", "changesIn": 3}]},
     "/why/n1: facts[0]: changesIn is a number, not a string"),
    ({"node": "n1", "at": False, "facts": []}, "/why/n1: at is a boolean, not a string"),
    ({"node": "n1", "facts": ["node"]}, "/why/n1: facts[0]: a string, not an object"),
])
def test_a_why_answer_with_a_field_of_the_wrong_shape_is_refused_naming_it(doc: object, problem: str) -> None:
    with pytest.raises(Unreadable) as e:
        WhyAnswer.read(doc, "/why/n1")
    assert str(e.value) == problem
