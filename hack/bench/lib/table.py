"""A side-by-side table: one row per quantity, a column per program, and the ratio."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Column:
    header: str
    align: Literal["<", ">"] = "<"
    width: int | None = None  # None: as wide as its widest cell, header included


def table(columns: Sequence[Column], rows: Sequence[Sequence[str]], *, gap: str = "") -> list[str]:
    """The header line and one line per row, each cell padded to its column; no trailing blanks."""
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"a row of {len(row)} cells in a table of {len(columns)} columns: {list(row)}")
    widths = [c.width if c.width is not None else max([len(c.header), *(len(row[i]) for row in rows)])
              for i, c in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return gap.join(f"{cell:{c.align}{w}}" for cell, c, w in zip(cells, columns, widths, strict=True)).rstrip()

    return [line([c.header for c in columns]), *(line(row) for row in rows)]
