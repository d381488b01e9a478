"""The healthz probe's keep-alive connection: one request at a time, one answer to each, never out of step.

Bytes are kept only while a request waits for its answer (`ask`). A byte that comes while none waits is an answer
nobody asked for (a server sending answers ahead, or a late surplus): the connection is dropped at once, and the
next probe asks on a new one, so no such byte is ever read as an answer. What one request may buffer is bounded
(`MAX_NEEDED`: reading pauses there, where `read_answer` always decides, and is not resumed: an answer
that long is never kept), and so is every wait: the request's write
waits for the transport's buffer to drain and the answer's bytes are awaited only under the probe's timeout (the
caller's), and `close` aborts the transport, so closing never waits for a peer that reads nothing.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import cast

from agent.services.http_answer import MAX_NEEDED, Answer, read_answer


class Closed(Exception):
    """The server closed the connection before the whole answer came."""


class ProbeConnection(asyncio.Protocol):
    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._needed = 0  # the buffer's length at which read_answer can tell more (a newline may tell sooner)
        self._asking = False
        self._ended = False  # the server closed its side, or the connection was lost or dropped
        self._lost: Exception | None = None  # why, when the connection was lost to an error
        self._data = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    @classmethod
    async def open(cls, host: str, port: int, context: ssl.SSLContext | None) -> ProbeConnection:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port, ssl=context,
                                                   server_hostname=host if context is not None else None)
        return protocol

    @property
    def usable(self) -> bool:
        """Open, and nothing came since the last answer."""
        return not self._ended

    async def ask(self, request: bytes) -> Answer:
        """Send `request` and read its answer. Raises Closed, ProbeError, or the OSError the connection was lost
        to; the caller bounds the wait (the probe's timeout) and drops the connection on any of them."""
        assert self._transport is not None and not self._asking, "one request at a time, on an open connection"
        self._asking, self._needed = True, 0
        self._transport.write(request)
        await self._writable.wait()
        while True:
            self._data.clear()
            read = read_answer(bytes(self._buffer), ended=self._ended)
            if not isinstance(read, int):
                break
            if self._ended:
                raise self._lost or Closed()
            self._needed = read
            await self._data.wait()
        self._asking = False
        self._buffer.clear()
        return read.answer

    def close(self) -> None:
        """Drop the connection now: a probe's connection holds nothing worth a graceful close."""
        self._ended = True
        if self._transport is not None:
            self._transport.abort()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if not self._asking:
            self.close()  # an answer nobody asked for
            return
        self._buffer += data
        if len(self._buffer) >= MAX_NEEDED and self._transport is not None:
            self._transport.pause_reading()
        if b"\n" in data or len(self._buffer) >= self._needed:
            self._data.set()

    def eof_received(self) -> bool:
        self._ended = True
        self._data.set()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._ended = True
        self._lost = self._lost or exc
        self._data.set()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()
