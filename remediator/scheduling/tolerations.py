"""Whether a pod's tolerations accept a node's taints (the rules of Kubernetes' Toleration.ToleratesTaint).

tolerationSeconds is deliberately ignored: a NoExecute toleration with a deadline still tolerates the taint
for scheduling, which is the only question asked here.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

from remediator.model.records import Effect, Taint, Toleration

# Gt/Lt values must be plain decimal integers (no "+", no leading zeros) that fit in int64; anything else
# never matches, so a mistyped taint value cannot suddenly become tolerated.
_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _decimal(text: str) -> int | None:
    if not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def tolerates(toleration: Toleration, taint: Taint) -> bool:
    """One toleration against one taint.

    * an empty effect matches every effect, otherwise the effects must be equal;
    * an empty key with `Exists` matches every key, otherwise the keys must be equal (the API server rejects
      an empty key with any other operator, so such a toleration matches nothing here);
    * `Exists` matches any value, `Equal` or an empty operator needs equal values;
    * `Lt`/`Gt` hold when the taint's value is less/greater than the toleration's, both as integers.
    """
    if toleration.effect and toleration.effect != str(taint.effect):
        return False
    operator = toleration.operator or "Equal"
    if operator == "Exists":
        return not toleration.key or toleration.key == taint.key
    if toleration.key != taint.key:
        return False
    if operator == "Equal":
        return toleration.value == taint.value
    if operator in ("Lt", "Gt"):
        bound, value = _decimal(toleration.value), _decimal(taint.value)
        if bound is None or value is None:
            return False
        return value < bound if operator == "Lt" else value > bound
    return False


def tolerated(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """Some toleration in `tolerations` accepts `taint`."""
    return any(tolerates(t, taint) for t in tolerations)


def untolerated(tolerations: Iterable[Toleration], taints: Iterable[Taint],
                effects: Collection[Effect | str]) -> list[Taint]:
    """The taints whose effect is in `effects` and that no toleration accepts, in the order given."""
    wanted = {str(e) for e in effects}
    accepted = tuple(tolerations)  # read more than once, so an iterator must not be exhausted by the first taint
    return [t for t in taints if str(t.effect) in wanted and not tolerated(accepted, t)]
