"""The bounded `--listen` server over real sockets: routes, methods, malformed heads, and each bound of issue 40 (idle
keep-alive connections, one client taking every slot, clients that do not read, the liveness probe's slot)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from nodemedic_common.http_server import Answer, BoundedServer, Handler, Limits


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 20))


def answer(status: int, content_type: str, body: bytes) -> Handler:
    async def handler(_: str) -> Answer:
        return Answer(status, content_type, body)
    return handler


def routes(healthy: list[bool]) -> dict[str, Handler]:
    async def healthz(_: str) -> Answer:
        return Answer(200 if healthy[0] else 503, "text/plain", b"ok\n" if healthy[0] else b"stale\n")

    async def why(node: str) -> Answer:
        return Answer(200, "text/plain", f"why {node}\n".encode())

    return {"/metrics": answer(200, "text/plain; version=0.0.4", b"up 1\n"), "/healthz": healthz, "/why/": why}


async def started(extra: dict[str, Handler] | None = None, **limits: Any) -> BoundedServer:
    """A server on a free loopback port; an idle keep-alive connection closed soon, so `raw` reads to the end."""
    server = BoundedServer({**routes([True]), **(extra or {})}, Limits(**{"keepalive_timeout": 0.2, **limits}))
    await server.start("127.0.0.1:0")
    return server


async def raw(port: int, request: bytes, source: str = "127.0.0.1") -> bytes:
    """What the server sent before closing; a reset reads as nothing."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()


async def kept_alive_get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> bytes:
    """One GET on an open keep-alive connection: the head and body of its answer."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                  if line.startswith(b"content-length"))
    return head + await asyncio.wait_for(reader.readexactly(length), 10)


async def until(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within the deadline"
        await asyncio.sleep(0.01)


def fetch(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def test_routes_answer_with_their_status_type_and_body_to_a_real_http_client() -> None:
    async def body() -> None:
        healthy = [True]
        server = BoundedServer(routes(healthy))
        await server.start("127.0.0.1:0")
        base = f"http://127.0.0.1:{server.port}"
        assert await asyncio.to_thread(fetch, f"{base}/metrics") == (200, "text/plain; version=0.0.4", b"up 1\n")
        assert await asyncio.to_thread(fetch, f"{base}/healthz?verbose") == (200, "text/plain", b"ok\n")
        healthy[0] = False
        assert await asyncio.to_thread(fetch, f"{base}/healthz") == (503, "text/plain", b"stale\n")
        assert await asyncio.to_thread(fetch, f"{base}/why/node%2D7") == (200, "text/plain", b"why node-7\n")
        for missing in ("/nothing", "/why/", "/why/a/b"):
            status, _, text = await asyncio.to_thread(fetch, f"{base}{missing}")
            assert (status, text) == (404, b"404 Not Found\n"), missing
        await server.close()

    run(body)


@pytest.mark.parametrize(("request_bytes", "status_line"), [
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 405 Method Not Allowed\r\n"),
    (b"garbage\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET /metrics SPDY/3\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET metrics HTTP/1.1\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * Limits().max_head + b"\r\n\r\n",
     b"HTTP/1.1 431 Request Header Fields Too Large\r\n"),
], ids=["post", "no-request-line", "not-http", "not-a-path", "huge-head"])
def test_bad_requests_get_a_clear_status_the_connection_closed_and_nothing_logged(
        request_bytes: bytes, status_line: bytes, caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        server = await started()
        answer = await raw(server.port, request_bytes)
        assert answer.startswith(status_line), answer[:80]
        assert status_line.startswith(b"HTTP/1.1 405 ") or b"Connection: close\r\n" in answer
        await server.close()

    with caplog.at_level(logging.INFO):
        run(body)
    assert caplog.records == []


def test_an_over_long_request_line_logs_nothing_and_the_server_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """The probe's finding: aiohttp logged an ERROR with a traceback for it."""
    async def body() -> None:
        server = await started()
        answer = await raw(server.port, b"GET /" + b"a" * 200_000 + b" HTTP/1.1\r\n\r\n")
        assert answer in (b"", ) or answer.startswith(b"HTTP/1.1 431 "), answer[:80]  # a reset if it was still sending
        assert (await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        await server.close()

    with caplog.at_level(logging.INFO):
        run(body)
    assert caplog.records == []


def test_a_handler_that_fails_answers_500_and_logs_once(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(_: str) -> Answer:
        raise RuntimeError("bug")

    async def body() -> None:
        server = await started(extra={"/broken": broken})
        assert (await raw(server.port, b"GET /broken HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 500 ")
        await server.close()

    with caplog.at_level(logging.INFO):
        run(body)
    assert [(r.levelname, r.getMessage(), getattr(r, "path", None)) for r in caplog.records] == [
        ("ERROR", "answering a request failed", "/broken")]


def test_head_sends_the_headers_without_the_body() -> None:
    async def body() -> None:
        server = await started()
        answer = await raw(server.port, b"HEAD /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 5\r\n" in answer
        assert answer.endswith(b"\r\n\r\n")
        await server.close()

    run(body)


def test_http_1_1_keeps_the_connection_for_the_next_request_and_1_0_or_close_does_not() -> None:
    async def body() -> None:
        server = await started()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        for _ in range(3):
            assert (await kept_alive_get(reader, writer, "/metrics")).endswith(b"up 1\n")
        writer.close()
        assert b"Connection: close" in await raw(server.port, b"GET /metrics HTTP/1.0\r\n\r\n")
        assert b"Connection: close" in await raw(server.port, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        await server.close()

    run(body)


@pytest.mark.parametrize("sent", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"], ids=["silent", "half-a-head"])
def test_a_client_that_does_not_send_a_whole_head_in_time_is_dropped_while_others_are_served(sent: bytes) -> None:
    async def body() -> None:
        server = await started(head_timeout=0.3)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(sent)
        assert (await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        assert await asyncio.wait_for(reader.read(), 5) == b"", "closed without an answer"
        writer.close()
        await server.close()

    run(body)


def test_an_idle_keep_alive_connection_is_closed_after_the_keepalive_timeout() -> None:
    async def body() -> None:
        server = await started(keepalive_timeout=0.3)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        assert (await kept_alive_get(reader, writer, "/healthz")).startswith(b"HTTP/1.1 200 OK")
        assert await asyncio.wait_for(reader.read(), 5) == b"", "closed by the server, long before the deadline"
        await until(lambda: server.connections == 0)
        writer.close()
        await server.close()

    run(body)


def test_idle_keep_alive_connections_holding_every_slot_make_room_for_a_new_client() -> None:
    """The probe's finding: 64 idle keep-alive connections held every slot for an hour, /healthz refused."""
    async def body() -> None:
        server = await started(max_connections=3, per_client=3, keepalive_timeout=60)
        held = [await asyncio.open_connection("127.0.0.1", server.port, local_addr=("127.0.0.2", 0))
                for _ in range(3)]
        for reader, writer in held:
            assert (await kept_alive_get(reader, writer, "/healthz")).startswith(b"HTTP/1.1 200 OK")
        assert (await raw(server.port, b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")).endswith(b"up 1\n")
        assert await asyncio.wait_for(held[0][0].read(), 5) == b"", "the oldest idle one was closed for it"
        for _, w in held:
            w.close()
        await server.close()

    run(body)


def test_one_client_gets_at_most_per_client_slots_and_the_probe_is_answered_past_every_bound() -> None:
    async def body() -> None:
        server = await started(max_connections=4, per_client=2, reserved=2, head_timeout=30)
        # Half a head each from two addresses: busy, not idle, so nothing can be closed to make room.
        held = [await asyncio.open_connection("127.0.0.1", server.port, local_addr=(f"127.0.0.{2 + i % 2}", 0))
                for i in range(4)]
        for _, w in held:
            w.write(b"GET /metrics HTTP/1.1\r\n")
            await w.drain()
        await until(lambda: server.connections == 4)
        # A third from 127.0.0.2 is past its bound; the reserved slot answers the probe path only, then closes.
        assert (await raw(server.port, b"GET /metrics HTTP/1.1\r\n\r\n", "127.0.0.2")).startswith(b"HTTP/1.1 503 ")
        probe = await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n", "127.0.0.4")
        assert probe.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in probe
        # One reserved slot per address: a second from one that holds one is refused at once, though one is free.
        _, writer = await asyncio.open_connection("127.0.0.1", server.port, local_addr=("127.0.0.5", 0))
        writer.write(b"GET /healthz HTTP/1.1\r\n")
        await writer.drain()
        await until(lambda: server.connections == 5)
        assert await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n", "127.0.0.5") == b""
        assert (await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n", "127.0.0.6")).startswith(b"HTTP/1.1 200")
        writer.close()
        r0, w0 = held[0]
        w0.write(b"\r\n")  # a held one completes its request and is answered
        assert (await asyncio.wait_for(r0.readuntil(b"up 1\n"), 5)).startswith(b"HTTP/1.1 200 OK")
        for _, w in held:
            w.close()
        await server.close()

    run(body)


def test_a_client_that_does_not_read_its_answer_is_cut_off_at_the_write_deadline() -> None:
    """The probe's finding: clients that never read /plan each held a copy of it (RSS 266 -> 630 MB)."""
    big = b"x" * (16 * 1024 * 1024)

    async def body() -> None:
        server = await started(write_timeout=0.5, extra={"/big": answer(200, "application/json", big)})
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
        await asyncio.get_running_loop().sock_sendall(sock, b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        await until(lambda: server.connections == 1)
        await until(lambda: server.connections == 0)  # cut off, never having read
        # What the transport still buffers for it is gone with it: nothing of the 16 MiB is held.
        assert (await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        sock.close()
        await server.close()

    run(body)


def test_a_reader_at_normal_speed_gets_a_big_answer_whole() -> None:
    big = bytes(range(256)) * 40_000

    async def body() -> None:
        server = await started(extra={"/big": answer(200, "application/octet-stream", big)})
        got = await raw(server.port, b"GET /big HTTP/1.1\r\nConnection: close\r\n\r\n")
        assert got.split(b"\r\n\r\n", 1)[1] == big
        await server.close()

    run(body)


def test_close_ends_connections_still_open() -> None:
    async def body() -> None:
        server = await started(head_timeout=60)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /")
        await writer.drain()
        await until(lambda: server.connections == 1)
        await asyncio.wait_for(server.close(), 5)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

    run(body)


def test_listen_without_a_host_binds_every_interface() -> None:
    async def body() -> None:
        server = BoundedServer(routes([True]))
        await server.start(":0")
        reader, writer = await asyncio.open_connection("127.0.0.2", server.port)  # not 127.0.0.1's socket
        assert (await kept_alive_get(reader, writer, "/healthz")).startswith(b"HTTP/1.1 200 OK")
        writer.close()
        await server.close()

    run(body)
