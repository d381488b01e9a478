from __future__ import annotations

from remediator.model.records import PodRecord
from remediator.state.derived import Derived, PerList


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
        derived.zone_counts.get(f"owner-{key}", pods("a"), lambda ps: {"zone-a": len(ps)})
    derived.keep_only({"n1", "n3"}, {"owner-n2"})
    assert len(derived.requests) == 2 and len(derived.zone_counts) == 1


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
