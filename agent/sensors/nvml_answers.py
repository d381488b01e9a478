"""NVML's answers, distrusted: each call's result is checked for the shape the `nvml` check reads before it is used.

The driver's library and the binding over it are outside the agent: a lost GPU answers garbage as readily as an
error, a binding of another version returns other shapes, and `pynvml` itself raises more than its `NVMLError` (its
UUID call decodes the driver's bytes as UTF-8; ctypes raises `ArgumentError` when the binding and the library
disagree). So a call's answer is `UNSUPPORTED` when the driver or this GPU lacks the call, `Failed` with words for
any exception or any value of another shape, and otherwise the value, checked. Nothing here raises.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard, TypeVar, Union

T = TypeVar("T")

# NVML's return codes that mean "this GPU or driver has no such thing", not "something is wrong".
ABSENT = frozenset({3, 13, 2})  # NOT_SUPPORTED, FUNCTION_NOT_FOUND, INVALID_ARGUMENT
COUNTER_END = 2**64  # NVML's counters are unsigned 64-bit
_SHOWN = 80  # the most characters of a driver's text or a value's repr put into a message


class Unsupported:
    def __repr__(self) -> str:
        return "UNSUPPORTED"


UNSUPPORTED = Unsupported()


@dataclass(frozen=True)
class Failed:
    why: str
    code: int | None = None  # NVML's return code, when the failure was an NVMLError


# `Union`, not `|`: a generic alias over a TypeVar that mypy understands on Python 3.11 (no `type` statement)
Value = Union[T, Unsupported, Failed]  # noqa: UP007


def printable(text: str, limit: int = _SHOWN) -> str:
    """`text` fit for a condition's message: one line, no control or format characters, at most `limit` long."""
    clean = "".join(c if c.isprintable() else "?" for c in text)
    return clean if len(clean) <= limit else clean[:limit - 1] + "…"


def shown(value: object) -> str:
    """A value NVML answered, as a message quotes it (its repr, escaped and clipped)."""
    return printable(_safe(repr, value))


def words(exc: BaseException) -> str:
    """An exception's own words; its type's name where it has none or its `__str__` fails (pynvml's asks NVML)."""
    said = _safe(str, exc)
    return printable(said) if said and not said.startswith("<unprintable") else type(exc).__name__


def _safe(show: Callable[[Any], str], value: object) -> str:
    try:
        return show(value)
    except Exception:  # noqa: BLE001 - a hostile object's __str__/__repr__: its type is all that is left to tell
        return f"<unprintable {type(value).__name__}>"


def ask(nvml: Any, call: Callable[..., T], *args: Any) -> Value[T]:
    name = getattr(call, "__name__", "NVML call")
    try:
        return call(*args)
    except nvml.NVMLError as exc:
        code = getattr(exc, "value", None)
        if code in ABSENT:
            return UNSUPPORTED
        return Failed(f"{name}: {words(exc)}", code if isinstance(code, int) else None)
    except Exception as exc:  # noqa: BLE001 - the binding's own failures (decoding, ctypes): this GPU's answer is bad
        return Failed(f"{name}: {type(exc).__name__}: {words(exc)}")


def field(name: str, answer: object, attribute: str) -> Value[Any]:
    """A field of a structure NVML filled: pynvml's structures decode their text fields as UTF-8 when read, so
    reading one can raise as a call can."""
    try:
        return getattr(answer, attribute)
    except Exception as exc:  # noqa: BLE001 - the binding's decoding of the driver's bytes, or no such field
        return Failed(f"{name}: its {attribute} unreadable: {type(exc).__name__}: {words(exc)}")


def counter(name: str, value: Value[Any]) -> Value[int]:
    """A count NVML keeps: an int from 0 below 2**64 (not a bool, not negative, not text)."""
    if isinstance(value, Unsupported | Failed) or is_count(value):
        return value
    return Failed(f"{name}: answered {shown(value)}, not a count")


def flag(name: str, value: Value[Any]) -> Value[bool]:
    """NVML's yes/no: 0 or 1 (NVML_FEATURE_DISABLED/ENABLED and the like)."""
    if isinstance(value, Unsupported | Failed):
        return value
    if is_count(value) and value in (0, 1):
        return bool(value)
    return Failed(f"{name}: answered {shown(value)}, not 0 or 1")


def is_count(value: object) -> TypeGuard[int]:
    return type(value) is int and 0 <= value < COUNTER_END
