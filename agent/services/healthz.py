"""A component's own healthz, probed with a debounce: shared by the kubelet and kube-proxy checks.

`GET url` within `request_timeout`; anything but HTTP 200 is a failed probe, and `failure_threshold` of them in a row
turn `<Subject>Unhealthy` True (`agent/verdicts/debounce.py`).

Pace (`HealthzProbe.paced`): while the status is settled (healthy, or unhealthy already) a probe runs on the check's
interval, the agent's 30 s grid, where it wakes for every other check anyway; from a failed probe until the streak is
decided, every `recheck_interval` (5 s). So `<Subject>Unhealthy` turns True at most interval + (threshold - 1) x
recheck_interval after the component stops answering (30 + 2 x 5 = 40 s, plus the last probe's time), and the
probe never wakes the agent on its own while nothing is wrong. (Every 10 s it had cost the agent four wake-ups a
minute of their own, a third of its idle CPU, half of it on a machine whose caches another process keeps cold.)

The GET is HTTP/1.1 spoken over asyncio's streams, as the runtime check speaks its CRI call with the standard
library: a probe needs one request line and the answer's status line, and a client library's request machinery
(session, connector, tracing, cookie jar) cost more than the probe itself on every run. One keep-alive connection
serves every probe while the server keeps it (an answer with a length and without `Connection: close`); a connection
the server closed while idle is retried once on a new one, so a stale keep-alive connection never counts as a failed
probe. No redirect is followed (a 3xx is a failed probe), and no proxy: healthz is a node-local endpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import ssl
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

from agent.bounds import AT_LEAST_ONE, POSITIVE, ZERO, Bounds, bounded
from agent.model import MIN_INTERVAL, CheckTiming, ConditionReport
from agent.verdicts.debounce import FailureDebounce
from nodemedic_common.durations import format_duration
from nodemedic_common.inputs import quoted

MAX_LINE = 8192  # one status or header line; a healthz answer's are tens of bytes
MAX_HEADERS = 100
MAX_KEPT_BODY = 65536  # a longer body is not read to the end: the connection is dropped instead
MESSAGE_BODY = 80  # how much of a failing answer's body the condition message quotes


class ProbeError(Exception):
    """The answer was not HTTP this probe can read (the message says what)."""


@dataclass(frozen=True)
class ProbeTiming(CheckTiming):
    """A probe's timing: its timeout may run past its interval (a long request timeout only delays the next probe,
    and a probe's answer is no sample that goes stale)."""

    timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), POSITIVE)


def _healthz_url(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host, got {quoted(url)}"
    if not url.isascii():
        return "must be ASCII (percent-encode other characters)"
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number in 0-65535
    except ValueError:
        return "the port must be a number from 0 to 65535"
    return None


# The bounds of the settings every healthz-probing check has (kubelet, kube-proxy).
HEALTHZ_URL = Bounds(form=_healthz_url)
REQUEST_TIMEOUT = Bounds(above=ZERO, shorter_than="timing.timeout")
RECHECK_INTERVAL = Bounds(at_least=MIN_INTERVAL, why="findings reach the Node at most once a second",
                          not_longer_than="timing.interval")


@dataclass(frozen=True)
class ProbeSettings:
    """The settings every check that probes a component's healthz has, flat in its config (kubelet, kube-proxy): a
    check's Config extends them with its `healthz_url` and its own fields."""

    # the timeout leaves room for a full request_timeout
    timing: CheckTiming = field(default_factory=lambda: ProbeTiming(interval=dt.timedelta(seconds=30),
                                                                    timeout=dt.timedelta(seconds=15)))
    request_timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), REQUEST_TIMEOUT)
    failure_threshold: int = bounded(3, AT_LEAST_ONE)
    recheck_interval: dt.timedelta = bounded(dt.timedelta(seconds=5), RECHECK_INTERVAL)

    def probe(self, subject: str, url: str) -> HealthzProbe:
        return HealthzProbe(subject, url, request_timeout=self.request_timeout,
                            failure_threshold=self.failure_threshold, recheck_interval=self.recheck_interval)


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def close(self) -> None:
        self.writer.close()  # the transport is released at once; nothing to wait for on a probe connection


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes  # at most MESSAGE_BODY bytes of it are ever quoted
    reusable: bool  # read to its end, and the server keeps the connection open


class HealthzProbe:
    def __init__(self, subject: str, url: str, *, request_timeout: dt.timedelta, failure_threshold: int,
                 recheck_interval: dt.timedelta) -> None:
        self.condition_type = f"{subject}Unhealthy"
        self._url = url
        self._parts = urlsplit(url)
        self._request = _request(self._parts)
        self._request_timeout = request_timeout
        self._recheck_interval = recheck_interval
        self._debounce = FailureDebounce(subject, self.condition_type, failure_threshold)
        self._context: ssl.SSLContext | None = None  # for an https url, built on first use
        self._connection: _Connection | None = None  # kept alive between probes, closed by close()

    def paced(self, timing: CheckTiming) -> CheckTiming:
        """The check's `timing`, its interval shortened to `recheck_interval` while a failure waits for its
        confirmation."""
        if self._debounce.confirming:
            return dataclasses.replace(timing, interval=self._recheck_interval)
        return timing

    async def report(self) -> ConditionReport:
        return self._debounce.report(await self.probe(), ok=f"{self._url} answers 200", target=f"GET {self._url}")

    async def close(self) -> None:
        """Release the keep-alive connection."""
        self._drop()

    def tls(self) -> ssl.SSLContext | None:
        """The system CA store for an https probe; None for plain http (no TLS at all)."""
        if self._parts.scheme != "https":
            return None
        if self._context is None:
            self._context = ssl.create_default_context()
        return self._context

    async def probe(self) -> str | None:
        """None when healthy, else what went wrong (stable wording: it becomes the condition message)."""
        timeout = self._request_timeout
        try:
            async with asyncio.timeout(timeout.total_seconds()):
                answer = await self._exchange()
        except TimeoutError:
            self._drop()
            return f"no answer within {format_duration(timeout)}"
        except asyncio.IncompleteReadError:
            self._drop()
            return "the connection closed before the whole answer came"
        except (OSError, ProbeError) as exc:
            self._drop()
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if not answer.reusable:
            self._drop()
        if answer.status == 200:
            return None
        body = answer.body[:MESSAGE_BODY].decode(errors="replace").strip()
        return f"HTTP {answer.status}" + (f" {body!r}" if body else "")

    async def _exchange(self) -> _Answer:
        connection = self._connection
        if connection is not None and not connection.reader.at_eof():
            try:
                return await _ask(connection, self._request)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass  # closed by the server while idle (or just as we asked): once more on a new connection
        self._drop()
        connection = self._connection = await self._connect()
        return await _ask(connection, self._request)

    async def _connect(self) -> _Connection:
        parts, context = self._parts, self.tls()
        port = parts.port or (443 if context is not None else 80)
        reader, writer = await asyncio.open_connection(parts.hostname, port, ssl=context, limit=MAX_LINE,
                                                       server_hostname=parts.hostname if context else None)
        return _Connection(reader, writer)

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _request(parts: SplitResult) -> bytes:
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rpartition("@")[2]  # the Host header never carries credentials
    return (f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: nodemedic-agent\r\nAccept: */*\r\n\r\n"
            .encode("ascii", errors="strict"))


async def _ask(connection: _Connection, request: bytes) -> _Answer:
    """Send the GET and read the answer: status line, headers, and the body when it is short and its length known."""
    connection.writer.write(request)
    await connection.writer.drain()
    reader = connection.reader
    try:
        version, status, headers = await _head(reader)
        connection_header = headers.get("connection", "").lower()
        keep = "close" not in connection_header and (version == "HTTP/1.1" or "keep-alive" in connection_header)
        if status in (204, 304) or 100 <= status < 200:
            return _Answer(status, b"", keep)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        if length is not None and not chunked:
            if not length.isdigit():
                raise ProbeError(f"the answer has a Content-Length that is not a number: {length[:20]!r}")
            if int(length) <= MAX_KEPT_BODY:
                return _Answer(status, await reader.readexactly(int(length)), keep)
        # Chunked, too long to read through, or running to the connection's end: the connection is given up
        # rather than read to the end of a body nobody needs; a failing answer's first bytes go into the message.
        if status == 200:
            return _Answer(status, b"", False)
        return _Answer(status, await (_first_chunk(reader) if chunked else reader.read(MESSAGE_BODY)), False)
    except asyncio.LimitOverrunError:
        raise ProbeError(f"the answer has a line longer than {MAX_LINE} bytes") from None


async def _head(reader: asyncio.StreamReader) -> tuple[str, int, dict[str, str]]:
    """The HTTP version, the status code and the headers (names in lower case)."""
    version, status = _status_line(await reader.readuntil(b"\n"))
    headers: dict[str, str] = {}
    for _ in range(MAX_HEADERS + 1):
        line = await reader.readuntil(b"\n")
        if line in (b"\r\n", b"\n"):
            return version, status, headers
        name, colon, value = line.decode("latin-1").partition(":")
        if not colon:
            raise ProbeError(f"the answer has a header line without a colon: {line[:40]!r}")
        headers[name.strip().lower()] = value.strip()
    raise ProbeError(f"the answer has more than {MAX_HEADERS} header lines")


async def _first_chunk(reader: asyncio.StreamReader) -> bytes:
    size = await reader.readuntil(b"\n")
    try:
        first = int(size.split(b";")[0].strip(), 16)
    except ValueError:
        raise ProbeError(f"the answer has a chunk size that is not a number: {size[:20]!r}") from None
    return await reader.readexactly(min(first, MESSAGE_BODY))


def _status_line(line: bytes) -> tuple[str, int]:
    """("HTTP/1.1", 200) from b"HTTP/1.1 200 OK\\r\\n"."""
    version, _, rest = line.decode("latin-1").strip().partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit() or rest[3:4] not in ("", " "):
        raise ProbeError(f"the answer is not HTTP/1: {line[:40]!r}")
    return version, int(code)
