"""HTTP/1.1's answer grammar (RFC 9112) as nodemedic reads it, in one place for both readers: the healthz probe's
(agent/services/http_answer.py) and the API server client's (nodemedic_common/http1_client.py).

Each pattern is matched whole (`fullmatch`) and accepts only ASCII where a number or a name is expected: a byte
such as latin-1 "²" passes `str.isdigit()` and then fails `int()`, so no number is ever read through `isdigit`.
"""

from __future__ import annotations

import re

STATUS_LINE = re.compile(rb"HTTP/1\.([01]) ([1-9][0-9][0-9])(?: [\t\x20-\x7e\x80-\xff]*)?")
TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
FIELD_LINE = re.compile(rb"(" + TOKEN + rb"):[\t ]*([\t\x20-\x7e\x80-\xff]*?)[\t ]*")
DIGITS = re.compile(rb"[0-9]+")
CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[\t ]*(?:;[\t\x20-\x7e\x80-\xff]*)?")


def field_values(fields: list[tuple[str, str]], name: str) -> list[str]:
    """The comma-separated elements of every `name` field (names in lower case), in lower case: Connection,
    Transfer-Encoding, Content-Encoding."""
    return [v.strip().lower() for n, value in fields if n == name for v in value.split(",") if v.strip()]
