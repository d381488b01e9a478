"""The API client's connection buffers a bounded amount (reading pauses past HIGH_WATER and resumes once the reader
has taken the bytes), refuses a line past its bound, ends every wait for bytes after `read_seconds`, says when it
closed before the bytes asked for came, and tells the pool that a byte nobody asked for came (not `usable`)."""

from __future__ import annotations

import asyncio

import pytest

from nodemedic_common import http1_connection
from nodemedic_common.http1_connection import Closed, Http1Connection, LineTooLong


class FakeTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.paused = self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return self.aborted

    def abort(self) -> None:
        self.aborted = True

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False


def connected() -> tuple[Http1Connection, FakeTransport]:
    conn, transport = Http1Connection(), FakeTransport()
    conn.connection_made(transport)
    return conn, transport


def test_lines_end_at_crlf_or_a_bare_lf_and_a_line_past_its_bound_is_refused() -> None:
    async def run() -> None:
        conn, _ = connected()
        conn.data_received(b"one\r\ntwo\nthree-is-long\n")
        assert await conn.line(10) == b"one"
        assert await conn.line(10) == b"two"
        with pytest.raises(LineTooLong):
            await conn.line(10)

    asyncio.run(run())


def test_a_line_still_coming_is_waited_for_and_an_endless_one_refused_without_its_newline() -> None:
    async def run() -> None:
        conn, _ = connected()
        waiting = asyncio.ensure_future(conn.line(100))
        await asyncio.sleep(0)
        conn.data_received(b"par")
        conn.data_received(b"ts\r\n")
        assert await waiting == b"parts"
        conn.data_received(b"x" * 101)
        with pytest.raises(LineTooLong):
            await conn.line(100)

    asyncio.run(run())


def test_reading_pauses_past_the_high_water_mark_and_resumes_when_the_reader_has_taken_the_bytes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http1_connection, "HIGH_WATER", 100)
    monkeypatch.setattr(http1_connection, "LOW_WATER", 50)

    async def run() -> None:
        conn, transport = connected()
        conn.data_received(b"x" * 101)
        assert transport.paused
        await conn.exactly(40)
        assert transport.paused, "61 bytes left: over the low-water mark"
        await conn.exactly(20)
        assert not transport.paused

    asyncio.run(run())


def test_a_wait_for_bytes_ends_after_read_seconds() -> None:
    async def run() -> None:
        conn, _ = connected()
        conn.read_seconds = 0.05
        with pytest.raises(TimeoutError):
            await conn.some(10)

    asyncio.run(run())


def test_bytes_asked_for_after_the_server_closed_are_closed_and_some_gives_what_is_left_then_nothing() -> None:
    async def run() -> None:
        conn, _ = connected()
        conn.data_received(b"abc")
        conn.eof_received()
        with pytest.raises(Closed):
            await conn.exactly(5)
        assert await conn.some(10) == b"abc"
        assert await conn.some(10) == b""
        with pytest.raises(Closed):
            await conn.write(b"GET / HTTP/1.1\r\n\r\n")

    asyncio.run(run())


def test_a_connection_lost_to_an_error_raises_that_error_to_the_reader() -> None:
    async def run() -> None:
        conn, _ = connected()
        waiting = asyncio.ensure_future(conn.line(10))
        await asyncio.sleep(0)
        conn.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(ConnectionResetError):
            await waiting

    asyncio.run(run())


def test_a_byte_nobody_asked_for_makes_the_connection_unusable_and_close_aborts() -> None:
    async def run() -> None:
        conn, transport = connected()
        before = conn.usable
        conn.data_received(b"H")
        assert (before, conn.usable) == (True, False)
        conn.close()
        assert transport.aborted

    asyncio.run(run())


def test_a_write_waits_for_the_transport_to_drain_within_read_seconds() -> None:
    async def run() -> None:
        conn, transport = connected()
        conn.read_seconds = 0.05
        conn.pause_writing()
        with pytest.raises(TimeoutError):
            await conn.write(b"x")
        assert transport.written == b"x"
        conn.resume_writing()
        await conn.write(b"y")

    asyncio.run(run())
