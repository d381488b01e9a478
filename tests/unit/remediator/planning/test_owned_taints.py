"""The owned-taints annotation: render and parse round-trip, anything unreadable owns nothing (with a reason), the
strategy/rule split, and `carrying` (only taints both recorded and still on the node)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from remediator.model.records import Effect, NodeRecord, Taint
from remediator.planning.owned_taints import (
    OwnedTaint,
    by_strategy,
    carrying,
    parse_owned,
    render_owned,
    strategy_owned,
    strategy_owner,
)
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2026, 1, 2, 4, 0, 0, tzinfo=dt.UTC)
SINCE = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)
BAD = Taint(key="nodemedic.io/bad", value="disk", effect=Effect.NO_SCHEDULE)
GONE = Taint(key="nodemedic.io/gone", effect=Effect.NO_EXECUTE)


def _owned(taint: Taint, *rules: str, since: dt.datetime = SINCE) -> OwnedTaint:
    return OwnedTaint(taint=taint, rules=rules, cause="DiskPressure", since=since)


def test_rendered_taints_parse_back_the_same_sorted_by_identity() -> None:
    owned = [_owned(GONE, "strategy:Balance"), _owned(BAD, "disk", "io")]
    assert parse_owned(render_owned(owned)) == ([owned[1], owned[0]], None)


def test_render_writes_compact_json_with_times_in_utc_z() -> None:
    plus_one = dt.datetime(2026, 1, 2, 4, 0, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert render_owned([_owned(BAD, "disk", since=plus_one)]) == (
        '[{"cause":"DiskPressure","effect":"NoSchedule","key":"nodemedic.io/bad","rules":["disk"],'
        '"since":"2026-01-02T03:00:00Z","value":"disk"}]')


@pytest.mark.parametrize("annotation", [None, ""])
def test_no_annotation_owns_nothing_without_an_error(annotation: str | None) -> None:
    assert parse_owned(annotation) == ([], None)


def test_value_and_cause_default_to_empty() -> None:
    owned, error = parse_owned('[{"key":"k","effect":"NoExecute","rules":["r"],"since":"2026-01-02T03:00:00Z"}]')
    assert error is None
    assert owned == [OwnedTaint(Taint("k", "", Effect.NO_EXECUTE), ("r",), "", SINCE)]


def _item(**changes: object) -> str:
    item: dict[str, object] = {"key": "k", "value": "", "effect": "NoSchedule", "rules": ["r"], "cause": "",
                               "since": "2026-01-02T03:00:00Z"}
    item.update(changes)
    return json.dumps([{k: v for k, v in item.items() if v is not None}])


@pytest.mark.parametrize(("annotation", "why"), [
    ("{not json", "JSONDecodeError"),
    ('{"key": "k"}', "ValueError: not a JSON list"),
    ('["k"]', "TypeError"),
    (_item(rules="r"), "ValueError: rules must be a list of strings"),
    (_item(rules=["r", 1]), "ValueError: rules must be a list of strings"),
    (_item(rules=None), "KeyError"),
    (_item(effect="Sometimes"), "ValueError"),
    (_item(key=7), "TypeError: expected a string, got 7"),
    (_item(cause=["x"]), "TypeError: expected a string"),
    (_item(since="2026-01-02T03:00:00"), "has no time zone or is out of range"),
    (_item(since="9999-01-01T00:00:00Z"), "has no time zone or is out of range"),
    (_item(since="soon"), "ValueError"),
])
def test_an_unreadable_annotation_owns_nothing_and_says_why(annotation: str, why: str) -> None:
    owned, error = parse_owned(annotation)
    assert owned == []
    assert error is not None
    assert error.startswith(f"{OWNED_TAINTS_ANNOTATION}: unreadable (") and error.endswith("); owning nothing")
    assert why in error


def test_an_annotation_nested_past_the_decoder_owns_nothing_and_says_where() -> None:
    owned, error = parse_owned("[" * 100_000 + "]" * 100_000)
    assert owned == []
    assert error is not None and "NestedTooDeep: line 1, column 257: JSON nested deeper than 256 levels" in error


def test_one_bad_entry_makes_the_whole_annotation_own_nothing() -> None:
    good = json.loads(render_owned([_owned(BAD, "disk")]))
    bad = json.loads(_item(effect="Never"))
    assert parse_owned(json.dumps(good + bad))[0] == []


def test_strategy_owner_and_by_strategy_tell_a_strategys_taint_from_a_rules() -> None:
    assert strategy_owner("Balance") == "strategy:Balance"
    assert by_strategy(("strategy:A", "strategy:B"))
    assert not by_strategy(("strategy:A", "disk"))
    assert not by_strategy(())
    assert strategy_owned(_owned(GONE, strategy_owner("Balance")))
    assert not strategy_owned(_owned(GONE, "disk"))


def _node(name: str, owned: list[OwnedTaint], taints: tuple[Taint, ...]) -> NodeRecord:
    return NodeRecord(name=name, taints=taints, annotations={OWNED_TAINTS_ANNOTATION: render_owned(owned)})


def test_carrying_maps_the_nodes_whose_recorded_taint_is_still_on_for_the_owner_to_its_age() -> None:
    snap = Snapshot(now=NOW, pods_by_node={}, pods_by_owner={}, nodes={n.name: n for n in (
        _node("on", [_owned(BAD, "disk", "io")], (Taint(BAD.key, "other value", BAD.effect),)),
        _node("removed", [_owned(BAD, "disk")], ()),
        _node("other-rule", [_owned(BAD, "io")], (BAD,)),
        _node("other-effect", [_owned(BAD, "disk")], (Taint(BAD.key, BAD.value, Effect.NO_EXECUTE),)),
        NodeRecord(name="human", taints=(BAD,)),
        NodeRecord(name="garbled", taints=(BAD,), annotations={OWNED_TAINTS_ANNOTATION: "[{"}),
    )})
    assert carrying(snap, BAD, "disk") == {"on": 3600.0}
