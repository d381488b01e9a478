"""nodemedic's figure beside the same figure of the program it is compared with, and their ratio."""

from __future__ import annotations

import math
from dataclasses import dataclass


def ratio(ours: float, theirs: float) -> float | None:
    """ours / theirs; None where the peer's figure is 0 or was not measured (NaN): no ratio says anything then."""
    if theirs == 0 or math.isnan(theirs):
        return None
    return ours / theirs


def format_ratio(value: float | None, *, undefined: str = "n/a") -> str:
    """Two decimals, as every benchmark prints a ratio; `undefined` where there is none."""
    return undefined if value is None else f"{value:.2f}"


@dataclass(frozen=True)
class Comparison:
    """One quantity measured on both sides, in the same unit ("" for a count)."""

    label: str
    ours: float
    theirs: float
    unit: str

    @property
    def ratio(self) -> float | None:
        return ratio(self.ours, self.theirs)
