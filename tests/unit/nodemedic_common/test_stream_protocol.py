"""The connection both HTTP clients build on: `open` gives the subclass connected, the server's end and a lost
connection wake the reader (the first error kept), a write's drain event follows the transport, and `close` aborts."""

from __future__ import annotations

import asyncio

from nodemedic_common.stream_protocol import StreamProtocol
from tests.unit.nodemedic_common.test_http1_connection import FakeTransport


class Kept(StreamProtocol):
    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._data.set()


def test_open_connects_the_subclass_and_close_aborts_without_waiting_for_the_peer() -> None:
    async def run() -> None:
        got = asyncio.Event()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"hello")
            await writer.drain()
            await got.wait()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        conn = await Kept.open("127.0.0.1", server.sockets[0].getsockname()[1], None)
        assert isinstance(conn, Kept)
        await asyncio.wait_for(conn._data.wait(), 5)
        assert bytes(conn._buffer) == b"hello"
        conn.close()
        assert conn._ended and conn._transport is not None and conn._transport.is_closing()
        got.set()
        server.close()

    asyncio.run(run())


def test_the_end_and_a_lost_connection_wake_the_reader_and_the_first_error_is_kept() -> None:
    async def run() -> None:
        conn = Kept()
        conn.connection_made(FakeTransport())
        assert conn.eof_received() is False
        assert conn._ended and conn._data.is_set()
        conn.connection_lost(ConnectionResetError("first"))
        conn.connection_lost(OSError("second"))
        assert str(conn._lost) == "first"

    asyncio.run(run())


def test_writes_wait_while_the_transport_is_paused() -> None:
    async def run() -> None:
        conn = Kept()
        conn.pause_writing()
        assert not conn._writable.is_set()
        conn.resume_writing()
        assert conn._writable.is_set()
        conn.pause_writing()
        conn.connection_lost(None)  # a lost connection never leaves a writer waiting
        assert conn._writable.is_set()

    asyncio.run(run())


def test_close_aborts_the_transport() -> None:
    conn, transport = Kept(), FakeTransport()
    conn.connection_made(transport)
    conn.close()
    assert transport.aborted and conn._ended
