"""Reading an answer's JSON into typed values, one field at a time, naming where a field of the wrong shape is.

An answer comes from another program (a leader of another version, or whatever answers on its port): every value
is checked as it is read, so a wrong one is one Unreadable naming its place (`/plan: evictions[3]: no namespace`),
never a KeyError or TypeError later. Keys a reader does not ask for are allowed: a newer leader may add some.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias, TypeVar

from nodemedic_common.json_kinds import json_kind

T = TypeVar("T")
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"


class Unreadable(Exception):
    """An answer, or a part of it, of a shape this program does not read; the message says where and what."""


@dataclass(frozen=True)
class Fields:
    """One JSON object of an answer and where it is in the answer (`/plan: evictions[3]`)."""

    doc: Mapping[str, object]
    path: str

    @staticmethod
    def of(value: object, path: str) -> Fields:
        if not isinstance(value, dict):
            raise Unreadable(f"{path}: {json_kind(value)}, not an object")
        return Fields(value, path)

    def _refuse(self, key: str, value: object, wanted: str) -> Unreadable:
        if value is None:
            return Unreadable(f"{self.path}: no {key}")
        return Unreadable(f"{self.path}: {key} is {json_kind(value)}, not {wanted}")

    def text(self, key: str) -> str:
        value = self.doc.get(key)
        if not isinstance(value, str):
            raise self._refuse(key, value, "a string")
        return value

    def optional_text(self, key: str) -> str | None:
        return None if self.doc.get(key) is None else self.text(key)

    def flag(self, key: str) -> bool:
        """False when absent."""
        value = self.doc.get(key, False)
        if not isinstance(value, bool):
            raise self._refuse(key, value, "a boolean")
        return value

    def number(self, key: str) -> float:
        value = self.doc.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._refuse(key, value, "a number")
        try:
            return float(value)
        except OverflowError:  # an integer of hundreds of digits
            raise Unreadable(f"{self.path}: {key} is too large a number") from None

    def integer(self, key: str) -> int:
        value = self.doc.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._refuse(key, value, "an integer")
        return value

    def section(self, key: str) -> Fields | None:
        """The object under `key`; None when absent (an older or newer leader may not send it)."""
        value = self.doc.get(key)
        return None if value is None else Fields.of(value, f"{self.path}: {key}")

    def rows(self, key: str, read: Callable[[Fields], T]) -> tuple[T, ...]:
        """Each object of the list under `key`, read; none when absent."""
        return tuple(read(Fields.of(item, f"{self.path}: {key}[{i}]")) for i, item in enumerate(self._list(key)))

    def texts(self, key: str) -> tuple[str, ...]:
        out = []
        for i, item in enumerate(self._list(key)):
            if not isinstance(item, str):
                raise Unreadable(f"{self.path}: {key}[{i}] is {json_kind(item)}, not a string")
            out.append(item)
        return tuple(out)

    def text_map(self, key: str) -> tuple[tuple[str, str], ...]:
        """The (key, string) pairs of the object under `key`, in its order; none when absent."""
        section = self.section(key)
        return () if section is None else tuple((k, section.text(k)) for k in section.doc)

    def integer_map(self, key: str) -> tuple[tuple[str, int], ...]:
        """The (key, integer) pairs of the object under `key`, in its order; none when absent."""
        section = self.section(key)
        return () if section is None else tuple((k, section.integer(k)) for k in section.doc)

    def _list(self, key: str) -> list[object]:
        value = self.doc.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._refuse(key, value, "a list")
        return value


def json_value(value: object, path: str) -> JsonValue:
    """`value` checked to be JSON all the way down (what a part of an answer carried as it came must be)."""
    try:
        return _json_value(value, path)
    except RecursionError:
        raise Unreadable(f"{path}: nested too deep") from None


def _json_value(value: object, path: str) -> JsonValue:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [_json_value(item, f"{path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, JsonValue] = {}
        for k, item in value.items():
            if not isinstance(k, str):
                raise Unreadable(f"{path}: a key that is not a string")
            out[k] = _json_value(item, f"{path}: {k}")
        return out
    raise Unreadable(f"{path}: {type(value).__name__}, not a JSON value")
