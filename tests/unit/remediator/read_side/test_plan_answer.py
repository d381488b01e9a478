"""/plan as one typed answer: made from a plan, written as JSON, read back into the same answer; absent sections
and unknown keys as the docstring promises; a wrong shape refused naming its place."""

from __future__ import annotations

import pytest

from remediator.model.plan import Plan, PlannedEviction, Protected
from remediator.model.records import PodRecord
from remediator.read_side.fields import Unreadable
from remediator.read_side.plan_answer import PlanAnswer

POD = PodRecord("shop", "web-1", "uid-1", "n1", "Running")


def test_an_answer_reads_back_as_the_answer_that_wrote_it() -> None:
    plan = Plan(evictions=[PlannedEviction(POD, "PodLifeTime", "older than 1h")],
                protected=[Protected(POD, "a PDB allows no disruption")], breaker_open=True, tainted_limit=2)
    answer = PlanAnswer.of(plan)
    assert PlanAnswer.read(answer.to_json()) == answer
    assert answer.evictions[0].strategy == "PodLifeTime" and answer.breaker.tainted_limit == 2


def test_a_plan_without_repair_or_dark_nodes_leaves_both_sections_out() -> None:
    written = PlanAnswer.of(Plan()).to_json()
    assert "repair" not in written and "darkNodes" not in written
    assert PlanAnswer.read(written).repair is None


def test_an_empty_document_is_an_empty_answer_and_unknown_keys_are_kept_as_reports() -> None:
    assert PlanAnswer.read({}) == PlanAnswer()
    answer = PlanAnswer.read({"fragmentation": {"pending": []}, "fromANewerLeader": [1, "two"]})
    assert dict(answer.reports) == {"fragmentation": {"pending": []}, "fromANewerLeader": [1, "two"]}
    assert answer.to_json()["fromANewerLeader"] == [1, "two"]


@pytest.mark.parametrize(("doc", "place"), [
    ([], "/plan: a list, not an object"),
    (None, "/plan: null"),
    ({"evictions": [{"name": "a", "node": "n", "strategy": "s", "reason": "r"}]}, "evictions[0]: no namespace"),
    ({"taints": {"add": "n1"}}, "taints: add"),
    ({"breaker": {"open": "yes"}}, "breaker: open"),
])
def test_a_field_of_the_wrong_shape_is_refused_naming_its_place(doc: object, place: str) -> None:
    with pytest.raises(Unreadable) as refused:
        PlanAnswer.read(doc)
    assert place in str(refused.value)
