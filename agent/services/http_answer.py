"""One HTTP/1.1 answer read from the bytes a healthz probe's connection received, accepting only what RFC 9112 allows.

No I/O here: `read_answer(data, ended=...)` is called again as bytes come, and says either what the answer was, or
how many bytes it needs before reading again can tell more. Anything else is a `ProbeError` naming what was wrong:
every number is ASCII digits (a latin-1 "²" is no digit), and a status line, header line or chunk size is matched
whole. Interim 1xx answers before the final one are passed over (`100 Continue` is no failed probe, and no answer
the next probe reads); 101 is final, since the probe asked for no protocol switch. Whatever comes after an answer
whose end is known (a Content-Length, or no body at all) is no answer to this request: those surplus bytes fail the
probe, so a server that sends answers ahead can never have them read as the next probes' answers.

A body that is chunked, longer than `MAX_KEPT_BODY` or runs to the connection's end is not read to its end: the
answer is taken as soon as the status is known (200) or its first `MESSAGE_BODY` bytes are there (a failure's
message quotes them), and its connection is not used again.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic_common.http1_grammar import CHUNK_SIZE, DIGITS, FIELD_LINE, STATUS_LINE, field_values

MAX_LINE = 8192  # one status or header line; a healthz answer's are tens of bytes
MAX_HEADERS = 100  # header lines of one answer
MAX_HEAD = 32768  # all the status and header lines of one probe's answers, interim ones included
MAX_KEPT_BODY = 65536  # a longer body is not read to the end: the connection is dropped instead
MESSAGE_BODY = 80  # how much of a failing answer's body the condition message quotes
MAX_NEEDED = MAX_HEAD + MAX_KEPT_BODY  # with this many bytes buffered, read_answer always decides


class ProbeError(Exception):
    """The answer was not HTTP this probe can read (the message says what)."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes  # at most MESSAGE_BODY bytes of it are ever quoted
    reusable: bool  # read to its end, and the server keeps the connection open


@dataclass(frozen=True)
class Read:
    answer: Answer
    used: int  # the bytes it took, interim answers included


@dataclass(frozen=True)
class _Head:
    version: int  # the minor version: 0 or 1
    status: int
    fields: list[tuple[str, str]]  # names in lower case, values as sent (ASCII checked where it matters)
    end: int  # where the body begins

    def values(self, name: str) -> list[str]:
        return field_values(self.fields, name)


def read_answer(data: bytes, *, ended: bool) -> Read | int:
    """The final answer at the start of `data`, or the length `data` must reach before this can tell more (a line's
    end may tell sooner). `ended`: the server closed its side, no more bytes come."""
    read = _final(data, ended=ended)
    if isinstance(read, Read):
        return read
    if len(data) >= MAX_NEEDED:  # only a chunked body can get here: chunk-size lines as long as MAX_LINE
        raise ProbeError(f"the answer is not whole within its first {MAX_NEEDED} bytes")
    return min(read, MAX_NEEDED)


def _final(data: bytes, *, ended: bool) -> Read | int:
    pos = 0
    while True:
        head = _head(data, pos)
        if isinstance(head, int):
            return head
        if head.status < 200 and head.status != 101:
            pos = head.end  # interim: the final answer follows
            continue
        return _body(data, head, ended=ended)


def _body(data: bytes, head: _Head, *, ended: bool) -> Read | int:
    connection = head.values("connection")
    keep = "close" not in connection and (head.version == 1 or "keep-alive" in connection)
    start = head.end
    if head.status in (101, 204, 304):
        return _whole(data, Answer(head.status, b"", keep and head.status != 101), start)
    codings = head.values("transfer-encoding")
    length = _content_length(head)
    if codings and length is not None:
        raise ProbeError("the answer has both Transfer-Encoding and Content-Length")
    if length is not None and length <= MAX_KEPT_BODY:
        if len(data) < start + length:
            return start + length
        return _whole(data, Answer(head.status, data[start:start + length], keep), start + length)
    # Chunked, too long to read through, or running to the connection's end: the connection is given up rather
    # than read to the end of a body nobody needs; a failing answer's first bytes go into the message.
    if head.status == 200:
        return Read(Answer(200, b"", False), start)
    if codings and codings[-1] == "chunked":
        return _chunks(data, head.status, start, ended=ended)
    wanted = start + min(MESSAGE_BODY, MAX_KEPT_BODY if length is None else length)
    if len(data) < wanted and not ended:
        return wanted
    return Read(Answer(head.status, data[start:wanted], False), min(len(data), wanted))


def _whole(data: bytes, answer: Answer, end: int) -> Read:
    """An answer whose end is known: nothing may follow it before the next request."""
    if len(data) > end:
        raise ProbeError(f"the server sent {len(data) - end} byte(s) past its answer: {data[end:end + 40]!r}")
    return Read(answer, end)


def _head(data: bytes, pos: int) -> _Head | int:
    line = _head_line(data, pos)
    if isinstance(line, int):
        return line
    text, after = line
    status = STATUS_LINE.fullmatch(text)
    if status is None:
        raise ProbeError(f"the answer is not HTTP/1: {data[pos:after][:40]!r}")
    fields: list[tuple[str, str]] = []
    pos = after
    for _ in range(MAX_HEADERS + 1):
        line = _head_line(data, pos)
        if isinstance(line, int):
            return line
        text, after = line
        if not text:
            return _Head(int(status[1]), int(status[2]), fields, after)
        field = FIELD_LINE.fullmatch(text)
        if field is None:
            what = "without a colon" if b":" not in text else "that is not `name: value`"
            raise ProbeError(f"the answer has a header line {what}: {data[pos:after][:40]!r}")
        fields.append((field[1].decode("ascii").lower(), field[2].decode("latin-1")))
        pos = after
    raise ProbeError(f"the answer has more than {MAX_HEADERS} header lines")


def _head_line(data: bytes, pos: int) -> tuple[bytes, int] | int:
    """A status or header line, all of them (interim answers' too) within MAX_HEAD bytes."""
    line = _line(data, pos)
    if (line[1] if isinstance(line, tuple) else len(data)) > MAX_HEAD:
        raise ProbeError(f"the answer's status and header lines are longer than {MAX_HEAD} bytes")
    return min(line, MAX_HEAD + 1) if isinstance(line, int) else line


def _line(data: bytes, pos: int) -> tuple[bytes, int] | int:
    """The line at `pos` without its CRLF (or bare LF, RFC 9112 2.2) and where the next begins."""
    end = data.find(b"\n", pos, pos + MAX_LINE + 1)
    if end < 0:
        if len(data) - pos > MAX_LINE:
            raise ProbeError(f"the answer has a line longer than {MAX_LINE} bytes")
        return pos + MAX_LINE + 1
    return data[pos:end - 1 if end > pos and data[end - 1] == 13 else end], end + 1


def _content_length(head: _Head) -> int | None:
    """Content-Length: ASCII digits, the same in every field and list element; a number past MAX_KEPT_BODY's
    digits reads as MAX_KEPT_BODY + 1 (too long to read through, whatever it is)."""
    values = {v.strip() for n, value in head.fields if n == "content-length" for v in value.split(",")}
    if not values:
        return None
    if len(values) > 1:
        raise ProbeError(f"the answer has differing Content-Length values: {', '.join(sorted(values))[:40]!r}")
    (value,) = values
    if not DIGITS.fullmatch(value.encode("latin-1")):
        raise ProbeError(f"the answer has a Content-Length that is not a number: {value[:20]!r}")
    return int(value) if len(value) <= len(str(MAX_KEPT_BODY)) else MAX_KEPT_BODY + 1


def _chunks(data: bytes, status: int, pos: int, *, ended: bool) -> Read | int:
    """A chunked failing answer: its first MESSAGE_BODY bytes of chunk data, each chunk size and end checked (the
    connection is not used again, so the rest is not read)."""
    body = b""
    while len(body) < MESSAGE_BODY:
        line = _line(data, pos)
        if isinstance(line, int):
            return line
        text, after = line
        size_match = CHUNK_SIZE.fullmatch(text)
        if size_match is None:
            raise ProbeError(f"the answer has a chunk size that is not a number: {data[pos:after][:20]!r}")
        size = int(size_match[1], 16)
        if size == 0:  # the last chunk (its trailer is not read)
            pos = after
            break
        if size >= MESSAGE_BODY - len(body):  # the quote is full: the rest is not read
            if len(data) < after + MESSAGE_BODY - len(body):
                return after + MESSAGE_BODY - len(body)
            body += data[after:after + MESSAGE_BODY - len(body)]
            break
        if len(data) < after + size + 2:
            return after + size + 2
        if data[after + size:after + size + 2] != b"\r\n":
            raise ProbeError(f"the answer has a chunk that does not end where its size says: {data[pos:after][:20]!r}")
        body += data[after:after + size]
        pos = after + size + 2
    return Read(Answer(status, body, False), pos)
