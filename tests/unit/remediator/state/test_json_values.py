"""A JSON value of another kind than the field should hold reads as empty, never as an exception."""

from __future__ import annotations

import pytest

from remediator.state.json_values import as_dict, as_list, str_map


@pytest.mark.parametrize("value", [None, "x", 3, 1.5, True, [1]])
def test_anything_but_an_object_reads_as_an_empty_one(value: object) -> None:
    assert as_dict(value) == {}


@pytest.mark.parametrize("value", [None, "x", 3, {"a": 1}, False])
def test_anything_but_a_list_reads_as_an_empty_one(value: object) -> None:
    assert as_list(value) == []


def test_an_object_and_a_list_are_read_as_they_are() -> None:
    d, items = {"a": 1}, [1, 2]
    assert as_dict(d) is d and as_list(items) is items


def test_a_map_of_strings_takes_any_scalar_as_its_text() -> None:
    assert str_map({"a": 1, "b": True, "c": "x"}) == {"a": "1", "b": "True", "c": "x"}
    assert str_map(["a"]) == {}
