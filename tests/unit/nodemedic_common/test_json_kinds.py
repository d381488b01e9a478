"""`json_kind`: a decoded JSON value's kind as an error message names it, and how a user puts it in a message."""

from __future__ import annotations

import pytest

from nodemedic_common.json_kinds import json_kind
from remediator.state.live_cluster import list_items


@pytest.mark.parametrize(("value", "kind"), [
    ({}, "an object"), ({"a": 1}, "an object"), ([], "a list"), ([1], "a list"), ("", "a string"),
    ("x", "a string"), (True, "a boolean"), (False, "a boolean"), (None, "null"), (0, "a number"),
    (1.5, "a number"), (-3, "a number"),
])
def test_each_json_value_is_named_by_its_kind(value: object, kind: str) -> None:
    assert json_kind(value) == kind


def test_a_boolean_is_a_boolean_not_a_number_though_bool_is_an_int() -> None:
    assert json_kind(True) != json_kind(1)


def test_a_user_names_the_kind_it_got_instead_of_an_object() -> None:
    with pytest.raises(ValueError, match="the answer is a list, not an object"):
        list_items([], "/api/v1/nodes")
