"""An answer's fields are read typed, and any of the wrong shape is refused with its place named."""

from __future__ import annotations

import pytest

from remediator.read_side.fields import Fields, Unreadable, json_value


def refusal(doc: object, read: str, key: str) -> str:
    with pytest.raises(Unreadable) as e:
        getattr(Fields.of(doc, "/x"), read)(key)
    return str(e.value)


def test_a_body_that_is_not_an_object_is_refused() -> None:
    for body, kind in (([], "a list"), (None, "null"), ("plan", "a string"), (3, "a number"), (True, "a boolean")):
        with pytest.raises(Unreadable, match=f"^/x: {kind}, not an object$"):
            Fields.of(body, "/x")


def test_a_missing_or_mistyped_field_is_named() -> None:
    assert refusal({}, "text", "name") == "/x: no name"
    assert refusal({"name": 3}, "text", "name") == "/x: name is a number, not a string"
    assert refusal({"n": True}, "integer", "n") == "/x: n is a boolean, not an integer"
    assert refusal({"n": "1"}, "number", "n") == "/x: n is a string, not a number"
    assert refusal({"on": "yes"}, "flag", "on") == "/x: on is a string, not a boolean"
    assert refusal({"rows": {}}, "texts", "rows") == "/x: rows is an object, not a list"
    assert refusal({"rows": ["a", 1]}, "texts", "rows") == "/x: rows[1] is a number, not a string"


def test_rows_are_read_each_with_its_index_in_the_path() -> None:
    f = Fields.of({"rows": [{"a": "1"}, {"b": "2"}]}, "/x")
    with pytest.raises(Unreadable, match=r"^/x: rows\[1\]: no a$"):
        f.rows("rows", lambda row: row.text("a"))


def test_absent_sections_read_as_empty_and_extra_keys_are_allowed() -> None:
    f = Fields.of({"new": {"from": "a newer leader"}}, "/x")
    assert f.rows("rows", lambda row: row.text("a")) == () and f.texts("t") == () and f.text_map("n") == ()
    assert f.section("s") is None and f.optional_text("t") is None and f.flag("on") is False


def test_a_number_too_large_for_a_float_is_refused() -> None:
    assert refusal({"n": 10**400}, "number", "n") == "/x: n is too large a number"


def test_an_object_of_strings_or_integers_is_read_as_its_pairs_in_order() -> None:
    f = Fields.of({"m": {"b": "2", "a": "1"}, "n": {"z": 3}}, "/x")
    assert f.text_map("m") == (("b", "2"), ("a", "1")) and f.integer_map("n") == (("z", 3),)
    assert refusal({"m": {"a": 1}}, "text_map", "m") == "/x: m: a is a number, not a string"
    assert refusal({"n": {"z": 1.5}}, "integer_map", "n") == "/x: n: z is a number, not an integer"
    assert refusal({"m": []}, "text_map", "m") == "/x: m: a list, not an object"


def test_a_json_value_is_carried_as_it_is_and_anything_else_refused() -> None:
    value = {"a": [1, 2.5, None, True, "s", {"b": []}]}
    assert json_value(value, "/x") == value
    with pytest.raises(Unreadable, match=r"^/x: a\[1\]: tuple, not a JSON value$"):
        json_value({"a": [1, ()]}, "/x")
    with pytest.raises(Unreadable, match=r"^/x: a key that is not a string$"):
        json_value({1: "a"}, "/x")
    deep: object = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(Unreadable, match=r"^/x: nested too deep$"):
        json_value(deep, "/x")
