"""Kubernetes resource quantities ("100m", "64Mi", "1.5", "2e3") as integers.

CPU is kept in millicores, everything else in base units (bytes, pods, devices), rounded up like the
scheduler does, so comparisons are exact integer arithmetic.
"""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, DecimalException

_SUFFIX = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40), "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$")


# Kubernetes keeps a quantity in an int64 of its smallest unit; anything bigger is refused there ("quantity too
# large"), and here it would make an integer of any size (1e999999999) or none at all (inf, nan).
_LARGEST = Decimal(2**63)


def parse_quantity(value: str | int | float) -> Decimal:
    """A quantity in base units; ValueError on anything Kubernetes would not accept."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    try:
        if isinstance(value, int | float):
            q = Decimal(str(value))
        else:
            m = _QUANTITY.match(value.strip())
            if not m or m.group(2) not in _SUFFIX:
                raise ValueError(f"not a quantity: {value!r}")
            q = Decimal(m.group(1)) * _SUFFIX[m.group(2)]
    except DecimalException as e:  # InvalidOperation, Overflow (1e999999999 times a suffix)
        raise ValueError(f"not a quantity: {value!r}") from e
    if not q.is_finite() or abs(q) >= _LARGEST:
        raise ValueError(f"not a quantity Kubernetes accepts: {value!r}")
    return q


# Typed: True, 1 and 1.0 are one key untyped, and True is no quantity. Most pods of a cluster request a few dozen
# distinct quantities: parsing each once is 0.2 s of a 15,000-pod `plan --kubeconfig` (issue 43).
@functools.lru_cache(maxsize=4096, typed=True)
def to_int(resource: str, value: str | int | float) -> int:
    """Integer form used everywhere in the remediator: millicores for cpu, base units (rounded up) otherwise."""
    q = parse_quantity(value)
    if resource == "cpu":
        q *= 1000
    return math.ceil(q)


def resources(raw: dict[str, object] | None) -> dict[str, int]:
    """A ResourceList as integers; entries that do not parse are skipped (bad data never crashes a cycle)."""
    out: dict[str, int] = {}
    for name, value in (raw or {}).items():
        if isinstance(value, str | int | float):
            try:
                out[name] = to_int(name, value)
            except ValueError:
                continue
    return out
