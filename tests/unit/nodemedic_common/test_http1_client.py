"""The API client's HTTP/1.1, against a scripted server on a real socket: bodies framed by length, chunks or the
connection's end, gzip undone, interim answers passed over; a connection reused only after an answer read to its end
with nothing after it (answers sent ahead or surplus bytes are never read as a later request's answer); a GET retried
once when its idle connection had been closed, a POST not; at most `limit` requests at once; the hostile answers of
issue 42 (a non-ASCII digit, a signed chunk size, two framings) refused as ProtocolError."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable

import pytest

from nodemedic_common.http1_client import BodyTooLong, Http1Pool, ProtocolError

Script = Callable[[int, bytes], bytes | None]  # (request number, request head) -> bytes to send (None: close)


class Server:
    """Answers each request with what `script` says; counts connections and the most requests in flight."""

    def __init__(self, script: Script, *, delay: float = 0.0) -> None:
        self.script, self.delay = script, delay
        self.connections = self.requests = self.in_flight = self.most_in_flight = 0
        self.heads: list[bytes] = []
        self._writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._writers.append(writer)
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.requests += 1
                self.heads.append(head)
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                await asyncio.sleep(self.delay)
                self.in_flight -= 1
                answer = self.script(self.requests, head)
                if answer is None:
                    break
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    def close_idle(self) -> None:
        for writer in self._writers:
            writer.close()


async def serving(server: Server, body: Callable[[str], Awaitable[None]]) -> None:
    listener = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        await asyncio.wait_for(body(f"http://127.0.0.1:{port}"), 20)
    finally:
        listener.close()


def ok(body: bytes = b'{"a":1}') -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)


async def get(pool: Http1Pool, path: str = "/x", method: str = "GET", limit: int | None = None,
              read_seconds: float | None = None) -> tuple[int, bytes]:
    async with pool.open(method, path, {"Accept": "application/json"}, b"{}" if method == "POST" else None,
                         connect_seconds=5, read_seconds=read_seconds) as answer:
        return answer.status, await answer.read(limit)


def run(server: Server, body: Callable[[Http1Pool], Awaitable[None]], limit: int = 4) -> None:
    async def with_pool(base: str) -> None:
        pool = Http1Pool(base, False, limit)
        try:
            await body(pool)
        finally:
            pool.close()

    asyncio.run(serving(server, with_pool))


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: 1\r\n\r\n"


@pytest.mark.parametrize(("answer", "body"), [
    (ok(b"hello"), b"hello"),
    (CHUNKED, b"abcde"),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 199 Hm\r\nX: y\r\n\r\n" + ok(b"final"), b"final"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
     % (len(gzip.compress(b"z" * 100_000, mtime=0)), gzip.compress(b"z" * 100_000, mtime=0)), b"z" * 100_000),
    (b"HTTP/1.1 204 No Content\r\n\r\n", b""),
], ids=["length", "chunked", "interim", "gzip", "no-content"])
def test_an_answer_is_read_to_its_end_and_its_connection_reused(answer: bytes, body: bytes) -> None:
    server = Server(lambda n, head: answer)

    status = 204 if answer.startswith(b"HTTP/1.1 204") else 200

    async def body_(pool: Http1Pool) -> None:
        assert [await get(pool), await get(pool)] == [(status, body)] * 2

    run(server, body_)
    assert (server.requests, server.connections) == (2, 1)


@pytest.mark.parametrize("answer", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\n\r\nok",  # to the connection's end
], ids=["connection-close", "http-1.0", "to-the-end"])
def test_an_answer_that_ends_its_connection_is_read_and_the_next_request_opens_a_new_one(answer: bytes) -> None:
    server = Server(lambda n, head: answer)

    async def one_answer_per_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        server.heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(answer)
        await writer.drain()
        writer.close()

    async def body(pool: Http1Pool) -> None:
        assert [await get(pool), await get(pool)] == [(200, b"ok")] * 2

    server.handle = one_answer_per_connection  # type: ignore[method-assign]
    run(server, body)
    assert (len(server.heads), server.connections) == (2, 2)


@pytest.mark.parametrize("extra", [ok(b"ahead") * 3, b"xyz", b"HTTP/1.1 100 Continue\r\n\r\n"],
                         ids=["answers-ahead", "bytes", "late-interim"])
def test_bytes_past_an_answer_are_never_read_as_the_next_requests_answer(extra: bytes) -> None:
    server = Server(lambda n, head: ok(b"%d" % n) + (extra if n == 1 else b""))

    async def body(pool: Http1Pool) -> None:
        assert await get(pool) == (200, b"1")
        await asyncio.sleep(0.05)  # the surplus arrives while the connection is idle
        assert await get(pool) == (200, b"2")

    run(server, body)
    assert server.connections == 2, "the out-of-step connection was dropped"


@pytest.mark.parametrize(("answer", "what"), [
    (b"HTTP/1.1 \xb200 OK\r\nContent-Length: 0\r\n\r\n", "not HTTP/1"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n", "not a number"),
    (b"HTTP/1.1 500 x\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n", "chunk size that is not a number"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", "both"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", "differing"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n", "does not end where"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: br\r\nContent-Length: 0\r\n\r\n", "encoded as 'br'"),
    (b"HTTP/1.1 101 Switching\r\n\r\n", "switched protocols"),
    (b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n", "not `name: value`"),
    (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n", "more than 100 header lines"),
    (b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\n\x1f\x8b\x08\x00", "gzip body ended"),
], ids=["status-digit", "length-digit", "signed-chunk", "two-framings", "two-lengths", "chunk-end", "brotli",
        "switch", "header", "headers", "gzip-cut"])
def test_a_hostile_answer_is_a_protocol_error_and_its_connection_is_dropped(answer: bytes, what: str) -> None:
    server = Server(lambda n, head: answer if n == 1 else ok())

    async def body(pool: Http1Pool) -> None:
        with pytest.raises(ProtocolError, match=what):
            await get(pool)
        assert await get(pool) == (200, b'{"a":1}')

    run(server, body)
    assert server.connections == 2


def test_a_body_over_the_limit_is_refused_whether_its_length_is_said_or_not() -> None:
    big = b"x" * 5000
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"3e8\r\n" + b"x" * 1000 + b"\r\n"
    server = Server(lambda n, head: ok(big) if n == 1 else chunked * 1 + (b"3e8\r\n" + b"x" * 1000 + b"\r\n") * 4)

    async def body(pool: Http1Pool) -> None:
        with pytest.raises(BodyTooLong, match="5000 bytes, over 1000"):
            await get(pool, limit=1000)
        with pytest.raises(BodyTooLong, match="over 2000 bytes"):
            await get(pool, limit=2000)

    run(server, body)


def test_a_gzip_bomb_is_unpacked_a_piece_at_a_time_and_stopped_at_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (50 << 20), mtime=0)
    server = Server(lambda n, head: b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(bomb), bomb))

    async def body(pool: Http1Pool) -> None:
        async with pool.open("GET", "/x", {}, None, connect_seconds=5) as answer:
            sizes = [len(p) async for p in answer.pieces()]
        assert max(sizes) <= 1 << 16 and sum(sizes) == 50 << 20
        with pytest.raises(BodyTooLong):
            await get(pool, limit=1 << 20)

    run(server, body)


def test_a_silent_server_ends_the_wait_after_read_seconds() -> None:
    server = Server(lambda n, head: b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")

    async def body(pool: Http1Pool) -> None:
        with pytest.raises(TimeoutError):
            await get(pool, read_seconds=0.2)

    run(server, body)


@pytest.mark.parametrize(("method", "retried"), [("GET", True), ("POST", False)])
def test_a_request_on_an_idle_connection_the_server_closed_is_sent_again_only_when_it_is_a_get(
        method: str, retried: bool) -> None:
    server = Server(lambda n, head: ok(b"%d" % n) if n == 1 else None)  # the second request: closed unanswered

    async def body(pool: Http1Pool) -> None:
        assert await get(pool, method=method) == (200, b"1")
        server.script = lambda n, head: ok(b"%d" % n)
        if retried:
            # The server drops the connection as the next request arrives: the GET goes again on a new one.
            server.script = lambda n, head: None if n == 2 else ok(b"%d" % n)
            assert await get(pool, method=method) == (200, b"3")
        else:
            server.script = lambda n, head: None
            with pytest.raises(Exception, match="closed"):
                await get(pool, method=method)

    run(server, body)
    assert server.connections == (2 if retried else 1)


def test_at_most_limit_requests_are_in_flight_at_once() -> None:
    server = Server(lambda n, head: ok(), delay=0.05)

    async def body(pool: Http1Pool) -> None:
        assert await asyncio.gather(*(get(pool) for _ in range(6))) == [(200, b'{"a":1}')] * 6

    run(server, body, limit=2)
    assert server.most_in_flight == 2 and server.connections == 2


def test_the_request_line_is_percent_encoded_and_a_header_with_a_line_break_is_refused() -> None:
    server = Server(lambda n, head: ok())

    async def body(pool: Http1Pool) -> None:
        await get(pool, "/api/v1/nodes/a b\r\nX: y?labelSelector=a%3Db")
        with pytest.raises(ValueError, match="line break"):
            async with pool.open("GET", "/x", {"Authorization": "Bearer a\r\nX: y"}, None, connect_seconds=5):
                pass

    run(server, body)
    request_line = server.heads[0].split(b"\r\n")[0]
    assert request_line == b"GET /api/v1/nodes/a%20b%0D%0AX:%20y?labelSelector=a%3Db HTTP/1.1"
    assert b"\r\nAccept-Encoding: gzip\r\n" in server.heads[0]


def test_the_servers_path_prefix_and_an_ipv6_host_are_kept() -> None:
    pool = Http1Pool("https://[::1]:6443/k8s/clusters/c-1/", False, 1)
    assert pool._request("GET", "/api", {}, None).split(b"\r\n")[:2] == [
        b"GET /k8s/clusters/c-1/api HTTP/1.1", b"Host: [::1]:6443"]
    with pytest.raises(ValueError, match="not an http"):
        Http1Pool("ftp://x", False, 1)
