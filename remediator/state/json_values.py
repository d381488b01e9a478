"""A JSON value read as the kind a field should hold: anything else reads as empty, so that one object of an odd shape
yields defaults, never an exception (records.py, pod_constraints.py)."""

from __future__ import annotations

from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_dict(value).items()}
