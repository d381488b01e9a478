"""HTTP/1.1 to the API server for the one client (kube_client.py): a request or a watch stream on a keep-alive
connection, at most `limit` at once.

Not aiohttp (which the remediator's notifications and Prometheus queries use): on the agent, aiohttp and what it
imports were 7.4 MiB of the process's 28 MiB of anonymous memory, on every node, where node-problem-detector's whole
pod takes 11.5 MiB. The API server speaks a small part of HTTP/1.1 (a Content-Length or chunked body, gzip when asked),
and what it sends is read with the grammar the healthz probe checks strictly (http1_grammar.py).

Every answer is read strictly: interim 1xx answers are passed over, a malformed status, header, length or chunk is a
ProtocolError, and a connection goes back to the pool only after an answer read to its known end with nothing after
it (a byte no request asked for means the connection is out of step: it is dropped). A GET whose reused connection
turns out closed before any byte of its answer came is sent once more on a new connection (the server had closed
an idle connection; nothing was done).
"""

from __future__ import annotations

import asyncio
import ssl
import time
import zlib
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from nodemedic_common.http1_connection import Closed, Http1Connection, LineTooLong
from nodemedic_common.http1_grammar import CHUNK_SIZE, DIGITS, FIELD_LINE, STATUS_LINE, field_values

MAX_LINE = 16 << 10  # one status, header or chunk-size line
MAX_HEADERS = 100  # header lines of one answer
PIECE = 1 << 16  # the most bytes one read of a body hands on (after gzip)
IDLE_SECONDS = 30.0  # an idle connection older than this is closed rather than reused
_GZIP = 16 + zlib.MAX_WBITS
# What a request target keeps as it is (RFC 3986 pchar, "/", "?" and "%" of escapes already made); the rest is
# percent-encoded, so no space, CR or LF of a name reaches the request line.
_TARGET_SAFE = "/?%:@!$&'()*+,;=-._~"


class ProtocolError(Exception):
    """The answer was not HTTP/1.1 this client reads (the message says what); its connection is dropped."""


class BodyTooLong(Exception):
    """A body over the caller's limit: read no further."""


@dataclass
class Answer:
    """The status and header fields of a final answer; its body is read once, with `read` or `pieces`."""

    status: int
    fields: list[tuple[str, str]]  # names in lower case
    framing: str  # "length", "chunked", "close" (to the connection's end) or "none"
    length: int  # of a "length" body
    gzip: bool
    keep_alive: bool
    connection: Http1Connection
    ended: bool = field(default=False, init=False)  # the body was read to its end

    async def read(self, limit: int | None = None) -> bytes:
        """The whole body (gzip undone); BodyTooLong past `limit` bytes."""
        if limit is not None and self.framing == "length" and not self.gzip and self.length > limit:
            raise BodyTooLong(f"the answer is {self.length} bytes, over {limit}")
        parts, size = [], 0
        async for piece in self.pieces():
            size += len(piece)
            if limit is not None and size > limit:
                raise BodyTooLong(f"the answer is over {limit} bytes: not read further")
            parts.append(piece)
        return b"".join(parts)

    async def pieces(self) -> AsyncIterator[bytes]:
        """The body as it comes, at most PIECE bytes at a time (gzip undone: a small body cannot unpack to a large
        one all at once)."""
        unzip = zlib.decompressobj(_GZIP) if self.gzip else None
        async for raw in self._raw():
            if unzip is None:
                yield raw
                continue
            data = raw
            while data:
                out = unzip.decompress(data, PIECE)
                data = unzip.unconsumed_tail
                if out:
                    yield out
        if unzip is not None and not unzip.eof:
            raise ProtocolError("the gzip body ended before its end")
        self.ended = True

    def _raw(self) -> AsyncIterator[bytes]:
        if self.framing in ("length", "none"):
            return _length_body(self.connection, self.length)  # "none": length 0
        if self.framing == "chunked":
            return _chunked_body(self.connection)
        return _body_to_close(self.connection)


async def _length_body(conn: Http1Connection, length: int) -> AsyncIterator[bytes]:
    left = length
    while left:
        piece = await conn.some(min(left, PIECE))
        if not piece:
            raise ProtocolError(f"the server closed the connection {left} byte(s) before the body's end")
        left -= len(piece)
        yield piece


async def _chunked_body(conn: Http1Connection) -> AsyncIterator[bytes]:
    while size := await _chunk_size(conn):
        while size:
            piece = await conn.some(min(size, PIECE))
            if not piece:
                raise ProtocolError("the server closed the connection inside a chunk")
            size -= len(piece)
            yield piece
        if await conn.exactly(2) != b"\r\n":
            raise ProtocolError("the answer has a chunk that does not end where its size says")
    for _ in range(MAX_HEADERS + 1):  # the trailer section (not used)
        if not await conn.line(MAX_LINE):
            return
    raise ProtocolError(f"the answer has more than {MAX_HEADERS} trailer lines")


async def _body_to_close(conn: Http1Connection) -> AsyncIterator[bytes]:
    while piece := await conn.some(PIECE):
        yield piece


class Http1Pool:
    def __init__(self, server: str, tls: ssl.SSLContext | bool, limit: int) -> None:
        """`server`: http(s)://host[:port][/prefix]; `tls`: the context for https (False: no verification)."""
        url = urlsplit(server)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {server!r}")
        self._host, self._prefix = url.hostname, url.path.rstrip("/")
        self._port = url.port or (443 if url.scheme == "https" else 80)
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._authority = host + (f":{url.port}" if url.port else "")
        self._tls = _context(tls) if url.scheme == "https" else None
        self._slots, self._limit = asyncio.Semaphore(limit), limit
        self._idle: list[Http1Connection] = []

    @asynccontextmanager
    async def open(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None, *,
                   connect_seconds: float, read_seconds: float | None = None) -> AsyncIterator[Answer]:
        """Send the request and give its final answer, whose body the caller reads inside the block. OSError,
        TimeoutError, Closed, ProtocolError or LineTooLong when it fails; the caller bounds the whole (its deadline)."""
        request = self._request(method, path, headers, body)
        async with self._slots:
            answer = await self._ask(request, method, connect_seconds, read_seconds)
            try:
                yield answer
            finally:
                conn = answer.connection
                if answer.ended and answer.keep_alive and conn.usable and len(self._idle) < self._limit:
                    conn.idle_since = time.monotonic()
                    self._idle.append(conn)
                else:
                    conn.close()

    def close(self) -> None:
        for conn in self._idle:
            conn.close()
        self._idle.clear()

    async def _ask(self, request: bytes, method: str, connect_seconds: float, read_seconds: float | None) -> Answer:
        while True:
            conn, reused = await self._connection(connect_seconds)
            conn.read_seconds = read_seconds
            try:
                await conn.write(request)
                return await _answer(conn, head_only=method == "HEAD")
            except (Closed, ConnectionResetError, BrokenPipeError):
                conn.close()
                if not (reused and method == "GET"):
                    raise
            except BaseException:
                conn.close()
                raise

    async def _connection(self, connect_seconds: float) -> tuple[Http1Connection, bool]:
        while self._idle:
            conn = self._idle.pop()
            if conn.usable and time.monotonic() - conn.idle_since < IDLE_SECONDS:
                return conn, True
            conn.close()
        async with asyncio.timeout(connect_seconds):
            return await Http1Connection.open(self._host, self._port, self._tls), False

    def _request(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> bytes:
        lines = [f"{method} {quote(self._prefix + path, safe=_TARGET_SAFE)} HTTP/1.1", f"Host: {self._authority}",
                 "Accept-Encoding: gzip"]
        for name, value in headers.items():
            if any(c in value for c in "\r\n\0"):
                raise ValueError(f"the {name} header has a line break in it")
            lines.append(f"{name}: {value}")
        if body is not None:
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


async def _answer(conn: Http1Connection, *, head_only: bool) -> Answer:
    """The final answer's head (interim 1xx answers passed over) and how its body is framed (RFC 9112 6.3)."""
    while True:
        version, status, fields = await _head(conn)
        if status >= 200:
            break
        if status == 101:
            raise ProtocolError("the server switched protocols, which this client never asks for")
    connection = field_values(fields, "connection")
    keep_alive = "close" not in connection and (version == 1 or "keep-alive" in connection)
    encodings = field_values(fields, "content-encoding")
    if encodings not in ([], ["identity"], ["gzip"]):
        raise ProtocolError(f"the answer is encoded as {', '.join(encodings)[:40]!r}, which this client never asks for")
    answer = Answer(status, fields, "none", 0, encodings == ["gzip"], keep_alive, conn)
    if head_only or status in (204, 304):
        answer.ended = True
    else:
        _frame(answer)
    return answer


def _frame(answer: Answer) -> None:
    """How the body ends: chunked, at a Content-Length, or at the connection's end (then it is not reused)."""
    codings = field_values(answer.fields, "transfer-encoding")
    lengths = {v.strip() for n, value in answer.fields if n == "content-length" for v in value.split(",")}
    if codings and lengths:
        raise ProtocolError("the answer has both Transfer-Encoding and Content-Length")
    if len(lengths) > 1:
        raise ProtocolError(f"the answer has differing Content-Length values: {', '.join(sorted(lengths))[:40]!r}")
    if codings and codings[-1] == "chunked":
        answer.framing = "chunked"
    elif lengths:
        (length,) = lengths
        if not DIGITS.fullmatch(length.encode("latin-1")) or len(length) > 15:
            raise ProtocolError(f"the answer has a Content-Length that is not a number: {length[:20]!r}")
        answer.framing, answer.length = "length", int(length)
        if answer.length == 0:
            answer.ended, answer.gzip = True, False
    else:
        answer.framing, answer.keep_alive = "close", False


async def _head(conn: Http1Connection) -> tuple[int, int, list[tuple[str, str]]]:
    line = await conn.line(MAX_LINE)
    status = STATUS_LINE.fullmatch(line)
    if status is None:
        raise ProtocolError(f"the answer is not HTTP/1: {line[:40]!r}")
    fields: list[tuple[str, str]] = []
    for _ in range(MAX_HEADERS + 1):
        line = await conn.line(MAX_LINE)
        if not line:
            return int(status[1]), int(status[2]), fields
        found = FIELD_LINE.fullmatch(line)
        if found is None:
            raise ProtocolError(f"the answer has a header line that is not `name: value`: {line[:40]!r}")
        fields.append((found[1].decode("ascii").lower(), found[2].decode("latin-1")))
    raise ProtocolError(f"the answer has more than {MAX_HEADERS} header lines")


async def _chunk_size(conn: Http1Connection) -> int:
    line = await conn.line(MAX_LINE)
    size = CHUNK_SIZE.fullmatch(line)
    if size is None:
        raise ProtocolError(f"the answer has a chunk size that is not a number: {line[:20]!r}")
    return int(size[1], 16)


def _context(tls: ssl.SSLContext | bool) -> ssl.SSLContext:
    if isinstance(tls, ssl.SSLContext):
        return tls
    if tls:
        return ssl.create_default_context()
    insecure = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # insecure-skip-tls-verify: the user's choice, in the kubeconfig
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE
    return insecure


FAILURES = (OSError, TimeoutError, Closed, ProtocolError, LineTooLong)  # a request that got no usable answer
