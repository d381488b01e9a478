"""Text from the cluster made safe to print on a terminal.

Node condition messages, pod and owner names, a runtime's version string: anyone who can write a node's status or
create a pod chooses them, and a terminal obeys the control characters in what it prints (an ESC sequence clears
the screen or moves the cursor over earlier lines, OSC 52 writes the reader's clipboard, a carriage return or a
bidirectional override makes a line read as something it is not). Every such character is shown as its escape
instead, so what is printed is what was sent, visibly.
"""

from __future__ import annotations

import re

# C0 (newline and tab included: a value is one cell of one line), DEL, C1, and the Unicode format characters that
# reorder or hide text: bidi embeddings, overrides and isolates, the marks, the line and paragraph separators. Also
# lone surrogates (a file name's bytes that are not UTF-8, or a JSON "\udcff"), which no UTF-8 output can encode
# (a strict stdout raises), and U+FFFE/U+FFFF, which a YAML reader refuses in a file the text is written to.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff\ufffe\uffff]")


def printable(text: str) -> str:
    """`text` with each control character written as its Python escape (`\\x1b`, `\\n`, `\\u202e`)."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")
