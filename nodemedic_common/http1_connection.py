"""One HTTP/1.1 connection to the API server, as a byte stream the client reads answers from (http1_client.py).

Reading is bounded: at most `HIGH_WATER` bytes wait in the buffer (the transport is paused there and resumed when
the reader has taken them), a line is refused past its bound, and each wait for bytes ends after `read_seconds`
(a TimeoutError) as well as at the caller's own deadline.
Writing waits for the transport to drain under the same deadline; closing aborts (stream_protocol.py). `usable` tells
the pool whether a byte came that no request asked for: such a connection is out of step and is dropped, never
reused.
"""

from __future__ import annotations

import asyncio
import time

from nodemedic_common.stream_protocol import StreamProtocol

HIGH_WATER = 1 << 20  # bytes buffered before the transport is paused
LOW_WATER = 256 << 10  # and resumed below this


class Closed(Exception):
    """The server closed the connection (or it was lost) before the bytes asked for came."""


class LineTooLong(Exception):
    """A status, header or chunk-size line past its bound."""


class Http1Connection(StreamProtocol):
    def __init__(self) -> None:
        super().__init__()
        self._paused = False
        self.idle_since = time.monotonic()
        self.read_seconds: float | None = None  # the longest wait for the server's next bytes (None: the caller's)

    @property
    def usable(self) -> bool:
        """Open, and nothing came since the last answer was read to its end."""
        return not self._ended and not self._buffer and self._transport is not None \
            and not self._transport.is_closing()

    async def write(self, data: bytes) -> None:
        if self._ended or self._transport is None:
            raise self._lost or Closed("the connection is closed")
        self._transport.write(data)
        async with asyncio.timeout(self.read_seconds):
            await self._writable.wait()
        if self._lost is not None:
            raise self._lost

    async def line(self, limit: int) -> bytes:
        """The next line without its CRLF (or bare LF, RFC 9112 2.2); LineTooLong past `limit` bytes."""
        while True:
            end = self._buffer.find(b"\n", 0, limit + 1)
            if end >= 0:
                line = self._take(end + 1)[:-1]
                return line[:-1] if line.endswith(b"\r") else line
            if len(self._buffer) > limit:
                raise LineTooLong(f"a line longer than {limit} bytes: {bytes(self._buffer[:40])!r}")
            await self._more()

    async def exactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            await self._more()
        return self._take(n)

    async def some(self, most: int) -> bytes:
        """Up to `most` bytes, as soon as any are there; b"" once the server has closed and none are left."""
        while not self._buffer:
            if self._ended:
                return b""
            await self._more()
        return self._take(min(most, len(self._buffer)))

    async def _more(self) -> None:
        if self._ended:
            raise self._lost or Closed("the server closed the connection before its answer ended")
        self._data.clear()
        async with asyncio.timeout(self.read_seconds):
            await self._data.wait()

    def _take(self, n: int) -> bytes:
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        if self._paused and len(self._buffer) < LOW_WATER and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return data

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        self._data.set()
        if not self._paused and len(self._buffer) > HIGH_WATER and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
