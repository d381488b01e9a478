"""An answer's fields are read typed, and any of the wrong shape is refused with its place named."""

from __future__ import annotations

import pytest

from remediator.read_side.fields import Fields, Unreadable


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
    assert f.rows("rows", lambda row: row.text("a")) == () and f.texts("t") == () and f.names("n") == ()
    assert f.section("s") is None and f.optional_text("t") is None and f.flag("on") is False


def test_a_number_too_large_for_a_float_is_refused() -> None:
    assert refusal({"n": 10**400}, "number", "n") == "/x: n is too large a number"
