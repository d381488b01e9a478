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

from agent.services.http_answer import MAX_NEEDED, Answer, read_answer
from nodemedic_common.stream_protocol import StreamProtocol


class Closed(Exception):
    """The server closed the connection before the whole answer came."""


class ProbeConnection(StreamProtocol):
    def __init__(self) -> None:
        super().__init__()
        self._needed = 0  # the buffer's length at which read_answer can tell more (a newline may tell sooner)
        self._asking = False

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

    def data_received(self, data: bytes) -> None:
        if not self._asking:
            self.close()  # an answer nobody asked for
            return
        self._buffer += data
        if len(self._buffer) >= MAX_NEEDED and self._transport is not None:
            self._transport.pause_reading()
        if b"\n" in data or len(self._buffer) >= self._needed:
            self._data.set()
