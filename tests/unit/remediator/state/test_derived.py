from __future__ import annotations

import datetime as dt

from remediator.model.records import Condition, NodeRecord, PodRecord, Taint
from remediator.state.derived import Derived, PerList, PerNodes


def pods(*names: str) -> list[PodRecord]:
    return [PodRecord(namespace="ns", name=n, uid=n, node_name="n1", phase="Running") for n in names]


def test_a_value_is_served_again_for_the_very_list_it_came_from_only() -> None:
    table: PerList[int] = PerList()
    calls: list[int] = []

    def compute(ps: list[PodRecord]) -> int:
        calls.append(len(ps))
        return len(ps)

    first = pods("a", "b")
    assert table.get("n1", first, compute) == 2
    assert table.get("n1", first, compute) == 2
    assert calls == [2], "the same list: worked out once"
    equal = pods("a", "b")
    assert table.get("n1", equal, compute) == 2 and calls == [2, 2], "an equal list is another version: worked out"
    assert table.get("n2", equal, compute) == 2 and calls == [2, 2, 2], "each key has its own value"


def test_a_value_worked_out_alike_for_a_new_list_is_the_kept_one() -> None:
    table: PerList[list[int]] = PerList()
    first = table.get("n1", pods("a"), lambda ps: [len(ps)])
    again = table.get("n1", pods("a"), lambda ps: [len(ps)], alike=lambda kept, found: kept == found)
    assert again is first, "alike: the kept object stands for the new list"
    other = table.get("n1", pods("a", "b"), lambda ps: [len(ps)], alike=lambda kept, found: kept == found)
    assert other == [2] and other is not first


def test_a_different_context_forgets_every_value_and_an_equal_one_keeps_them() -> None:
    table: PerList[int] = PerList()
    calls: list[int] = []

    def compute(ps: list[PodRecord]) -> int:
        calls.append(1)
        return len(ps)

    kept = pods("a")
    table.within({"n1": "zone-a"}).get("o1", kept, compute)
    table.within({"n1": "zone-a"}).get("o1", kept, compute)
    assert len(calls) == 1, "an equal context (another dict) keeps the values"
    table.within({"n1": "zone-b"}).get("o1", kept, compute)
    assert len(calls) == 2, "a node moved zone: worked out again"


def test_keys_no_longer_in_the_cluster_are_forgotten() -> None:
    derived = Derived()
    for key in ("n1", "n2", "n3"):
        derived.requests.get(key, pods("a"), lambda ps: {"pods": len(ps)})
        derived.live.get(key, pods("a"), tuple)
    derived.keep_only({"n1", "n3"})
    assert len(derived.requests) == 2 and len(derived.live) == 2


class _Kept:
    def __init__(self) -> None:
        self.runs = 0


def test_a_strategy_gets_back_the_object_it_keeps_and_a_new_one_of_another_kind() -> None:
    d = Derived()
    first = d.kept_by("S", _Kept)
    first.runs = 3
    assert d.kept_by("S", _Kept) is first and d.kept_by("S", _Kept).runs == 3
    assert d.kept_by("T", _Kept) is not first  # each strategy its own
    assert isinstance(d.kept_by("S", PerList), PerList)  # another kind replaces it
    assert d.kept_by("S", _Kept).runs == 0


def test_a_value_from_the_nodes_is_served_while_their_placement_is_equal_and_forgotten_when_it_changes() -> None:
    table: PerNodes[int] = PerNodes()
    calls: list[str] = []

    def compute(key: str) -> int:
        calls.append(key)
        return len(calls)

    nodes = {"n1": NodeRecord("n1", labels={"zone": "a"})}
    assert table.on(nodes).get("shape", lambda: compute("shape")) == 1
    assert table.on(nodes).get("shape", lambda: compute("shape")) == 1
    equal = {"n1": NodeRecord("n1", labels={"zone": "a"})}
    assert table.on(equal).get("shape", lambda: compute("shape")) == 1 and calls == ["shape"], \
        "equal records (another snapshot's): kept"
    heartbeat = Condition("Ready", "True", heartbeat=dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    reported = {"n1": NodeRecord("n1", labels={"zone": "a"}, resource_version="2", conditions=(heartbeat,))}
    assert table.on(reported).get("shape", lambda: compute("shape")) == 1 and calls == ["shape"], \
        "a status report (another record, its labels, taints and cordon as they were): kept"
    relabelled = {"n1": NodeRecord("n1", labels={"zone": "b"})}
    assert table.on(relabelled).get("shape", lambda: compute("shape")) == 2, "a node relabelled: worked out again"
    tainted = {"n1": NodeRecord("n1", labels={"zone": "b"}, taints=(Taint("dedicated", "x"),))}
    assert table.on(tainted).get("shape", lambda: compute("shape")) == 3, "a node tainted: worked out again"
    cordoned = {"n1": NodeRecord("n1", labels={"zone": "b"}, taints=(Taint("dedicated", "x"),), unschedulable=True)}
    assert table.on(cordoned).get("shape", lambda: compute("shape")) == 4, "a node cordoned: worked out again"


def test_a_value_no_snapshot_asked_for_is_forgotten_when_the_next_snapshot_comes() -> None:
    table: PerNodes[str] = PerNodes()
    first, second, third = ({"n1": NodeRecord("n1")} for _ in range(3))
    table.on(first).get("old", lambda: "kept")
    table.on(second).get("new", lambda: "x")
    assert len(table) == 1, "'old' was not asked for with the second snapshot"
    table.on(third)
    assert table.get("old", lambda: "worked out again") == "worked out again"
    assert table.get("new", lambda: "worked out again") == "x", "asked for last time: still kept"
