"""JSON decoding that turns nesting past the decoder's reach into a ValueError saying where, for every JSON the two
programs read from a file or an answer (snapshots, the API's answers and watch events, the leader's /plan, the
annotations nodemedic wrote, the agent's state file).

CPython's decoder recurses once per nested list or object: `[[[[...` a few thousand levels deep (a 100 KB file, a
256 KB annotation) raises RecursionError, which no `except ValueError` of a caller catches, so a hostile document
became a traceback (`plan --snapshot`) or a crashed loop. Here it is a NestedTooDeep, a ValueError, with the line and
column where the text first goes deeper than MAX_NESTING, found by a flat scan of the text (no recursion) that runs
only when decoding failed.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Levels reported as too deep. Kubernetes objects, /plan answers and annotations nest ~10-20 levels (a pod's
# managedFields the most); the decoder itself fails somewhere below the interpreter's recursion limit (1000).
MAX_NESTING = 256

# A string (closed or not: its contents may hold brackets), or one bracket.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[{]|[\]}]', re.DOTALL)


class NestedTooDeep(ValueError):
    """A document nested past what the decoder can take; `line` and `column` (1-based) are where it goes deeper than
    MAX_NESTING levels, 0 when the scan found no such place (the caller's own stack was already deep)."""

    def __init__(self, line: int, column: int) -> None:
        self.line, self.column = line, column
        where = f"line {line}, column {column}: " if line else ""
        super().__init__(f"{where}JSON nested deeper than {MAX_NESTING} levels, more than any answer or file nodemedic "
                         "reads holds")


def loads(data: str | bytes, **kwargs: Any) -> Any:
    """json.loads(data, **kwargs); NestedTooDeep (a ValueError) in place of RecursionError."""
    try:
        return json.loads(data, **kwargs)
    except RecursionError:
        text = data if isinstance(data, str) else data.decode("utf-8", errors="replace")
        raise NestedTooDeep(*_too_deep_at(text)) from None


def _too_deep_at(text: str) -> tuple[int, int]:
    """(line, column) of the bracket that opens level MAX_NESTING + 1, or (0, 0)."""
    depth = 0
    for m in _TOKEN.finditer(text):
        token = m.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_NESTING:
                pos = m.start()
                return text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
        elif token in ("]", "}"):
            depth -= 1
    return 0, 0
