"""The agent's /metrics and /healthz endpoint over real sockets: routes, methods, limits, slow clients."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from agent.reporting.status_server import MAX_HEAD, Answer, StatusServer


def run(body: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), 20))


def routes(healthy: list[bool]) -> dict[str, Callable[[], Answer]]:
    return {"/metrics": lambda: Answer(200, "text/plain; version=0.0.4", b"up 1\n"),
            "/healthz": lambda: Answer(200 if healthy[0] else 503, "text/plain", b"ok\n" if healthy[0] else b"stale\n")}


async def raw(port: int, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()  # the server closes the connection after one answer
    writer.close()
    return answer


def fetch(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status, r.headers["Content-Type"], r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers["Content-Type"], e.read()


def test_routes_answer_with_their_status_type_and_body_to_a_real_http_client() -> None:
    async def body() -> None:
        healthy = [True]
        server = StatusServer(routes(healthy))
        await server.start("127.0.0.1:0")
        base = f"http://127.0.0.1:{server.port}"
        assert await asyncio.to_thread(fetch, f"{base}/metrics") == (200, "text/plain; version=0.0.4", b"up 1\n")
        assert await asyncio.to_thread(fetch, f"{base}/healthz?verbose") == (200, "text/plain", b"ok\n")
        healthy[0] = False
        assert await asyncio.to_thread(fetch, f"{base}/healthz") == (503, "text/plain", b"stale\n")
        status, _, text = await asyncio.to_thread(fetch, f"{base}/nothing")
        assert (status, text) == (404, b"404 Not Found\n")
        await server.close()

    run(body)


@pytest.mark.parametrize(("request_bytes", "status_line"), [
    (b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", b"HTTP/1.1 405 Method Not Allowed\r\n"),
    (b"garbage\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET /metrics SPDY/3\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET /metrics HTTP/1.1\r\nX: " + b"a" * MAX_HEAD + b"\r\n\r\n",
     b"HTTP/1.1 431 Request Header Fields Too Large\r\n"),
], ids=["post", "no-request-line", "not-http", "huge-head"])
def test_bad_requests_get_a_clear_status_and_the_connection_closed(request_bytes: bytes, status_line: bytes) -> None:
    async def body() -> None:
        server = StatusServer(routes([True]))
        await server.start("127.0.0.1:0")
        answer = await raw(server.port, request_bytes)
        assert answer.startswith(status_line), answer[:80]
        await server.close()

    run(body)


def test_head_sends_the_headers_without_the_body() -> None:
    async def body() -> None:
        server = StatusServer(routes([True]))
        await server.start("127.0.0.1:0")
        answer = await raw(server.port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and b"Content-Length: 5\r\n" in answer
        assert answer.endswith(b"\r\n\r\n")
        await server.close()

    run(body)


def test_a_silent_client_is_dropped_after_the_read_timeout_while_others_are_served() -> None:
    async def body() -> None:
        server = StatusServer(routes([True]), read_timeout=0.3)
        await server.start("127.0.0.1:0")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /metr")  # never finishes its head
        assert (await raw(server.port, b"GET /healthz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 200 OK")
        assert await asyncio.wait_for(reader.read(), 5) == b"", "closed without an answer"
        writer.close()
        await server.close()

    run(body)


def test_close_ends_connections_still_open() -> None:
    async def body() -> None:
        server = StatusServer(routes([True]), read_timeout=60)
        await server.start("127.0.0.1:0")
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"GET /")
        await writer.drain()
        await asyncio.sleep(0)  # let the server accept it
        await asyncio.wait_for(server.close(), 5)
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()

    run(body)


def test_a_connection_past_the_bound_is_closed_at_once_and_the_held_ones_are_still_served() -> None:
    async def body() -> None:
        server = StatusServer(routes([True]), read_timeout=30.0, max_connections=3)
        await server.start("127.0.0.1:0")
        held = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(3)]
        for _, w in held:  # half a request each: the server waits on them (up to read_timeout)
            w.write(b"GET /metrics HTTP/1.1\r\n")
            await w.drain()
        # Each accept runs as its own task: wait until the server holds all three before the extra one arrives.
        while server.connections < 3:
            await asyncio.sleep(0)
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        try:  # a whole request, closed unanswered: an empty read, or a reset
            writer.write(b"GET /metrics HTTP/1.1\r\n\r\n")
            await writer.drain()
            answer = await reader.read()
        except ConnectionResetError:
            answer = b""
        assert answer == b""
        writer.close()
        r0, w0 = held[0]
        w0.write(b"\r\n")  # a held one completes its request and is answered
        assert (await r0.read()).startswith(b"HTTP/1.1 200 OK\r\n")
        for _, w in held:
            w.close()
        await server.close()

    run(body)
