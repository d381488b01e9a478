"""A JSON value's kind as an error message names it ("the answer is a list, not an object")."""

from __future__ import annotations


def json_kind(value: object) -> str:
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")
