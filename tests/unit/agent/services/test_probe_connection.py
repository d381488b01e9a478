"""The healthz probe's connection against servers on 127.0.0.1: one answer per request, nothing read that nobody
asked for, and no wait without the caller's deadline (writing, or closing)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from agent.services.http_answer import Answer
from agent.services.probe_connection import Closed, ProbeConnection

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def until(condition: Callable[[], bool], what: str) -> None:
    """Wait for `condition`, at most 5 s."""
    try:
        async with asyncio.timeout(5):
            while not condition():
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def served(handler: Handler, client: Callable[[ProbeConnection], Awaitable[None]]) -> None:
    async def main() -> None:
        listening = await asyncio.start_server(handler, "127.0.0.1", 0)
        connection = await ProbeConnection.open("127.0.0.1", listening.sockets[0].getsockname()[1], None)
        try:
            await client(connection)
        finally:
            connection.close()
            listening.close()

    asyncio.run(main())


def test_a_byte_that_comes_while_no_request_waits_drops_the_connection() -> None:
    send_more = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK)
        await send_more.wait()
        writer.write(OK)  # an answer nobody asked for
        await reader.read()

    async def client(connection: ProbeConnection) -> None:
        assert await connection.ask(REQUEST) == Answer(200, b"ok", True)
        assert connection.usable
        send_more.set()
        await until(lambda: not connection.usable, "the connection to be dropped")

    served(handler, client)


def test_a_server_that_closes_before_the_whole_answer_is_closed() -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(OK[:20])
        writer.close()

    async def client(connection: ProbeConnection) -> None:
        with pytest.raises(Closed):
            await connection.ask(REQUEST)
        assert not connection.usable

    served(handler, client)


def test_a_write_the_server_never_reads_waits_only_within_the_deadline_and_close_does_not_wait() -> None:
    lost = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await lost.wait()  # reads nothing while the client writes

    async def client(connection: ProbeConnection) -> None:
        original = connection.connection_lost
        connection.connection_lost = lambda exc: (original(exc), lost.set())[0]  # type: ignore[method-assign]
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await connection.ask(b"GET / HTTP/1.1\r\nX: " + b"a" * 64 * 1024 * 1024 + b"\r\n\r\n")
        connection.close()  # 64 MiB still buffered: a graceful close would wait for the server to read them
        await until(lost.is_set, "the connection to be released")

    served(handler, client)
