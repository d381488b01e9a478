"""The sharing tables: equal values become the object asked for first, dicts only with their items in the same order,
and no table keeps more than SIZE values."""

from __future__ import annotations

from remediator.state.sharing import SIZE, Shared, SharedMaps


def test_an_equal_value_is_the_first_one_asked_for_and_a_different_one_stays_itself() -> None:
    table = Shared[tuple[str, ...]]()
    first, equal, other = ("a", "b"), tuple(["a", "b"]), ("a", "c")
    assert equal is not first
    assert table(first) is first
    assert table(equal) is first
    assert table(other) is other


def test_dicts_with_the_same_items_in_the_same_order_are_one_and_keep_that_order() -> None:
    table = SharedMaps[str]()
    first = table({"app": "web", "tier": "front"})
    assert table({"app": "web", "tier": "front"}) is first
    reordered = table({"tier": "front", "app": "web"})
    assert reordered is not first and reordered == first
    assert list(first) == ["app", "tier"] and list(reordered) == ["tier", "app"]
    assert table({"app": "api"}) == {"app": "api"}
    assert table({}) is table({})


def test_a_table_keeps_at_most_size_values_the_least_recently_asked_going_first() -> None:
    table = Shared[tuple[int, ...]]()
    first = (0, 0)
    table(first)
    for i in range(1, SIZE):
        table((i, i))
    assert table(tuple([0, 0])) is first  # still kept: SIZE values asked for so far
    for i in range(SIZE, 2 * SIZE):
        table((i, i))
    later = tuple([0, 0])
    assert table(later) is later  # pushed out by SIZE newer ones: a new copy is kept in its place
