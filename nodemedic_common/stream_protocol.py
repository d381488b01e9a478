"""An asyncio connection one reader at a time waits on, as both of nodemedic's HTTP clients hold theirs (the agent's
healthz probe: agent/services/probe_connection.py; the API client: nodemedic_common/http1_connection.py): the bytes
received and not yet read, whether the server ended the connection (and the error it was lost to), an event each
arrival sets, and a writable event a write waits on until the transport's buffer drains. Closing aborts the
transport: it never waits for a peer that reads nothing. Each subclass says what it keeps of the bytes that come
(`data_received`)."""

from __future__ import annotations

import asyncio
import ssl
from typing import Self, cast


class StreamProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._ended = False  # the server closed its side, or the connection was lost or aborted
        self._lost: Exception | None = None  # why, when the connection was lost to an error
        self._data = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    @classmethod
    async def open(cls, host: str, port: int, context: ssl.SSLContext | None) -> Self:
        loop = asyncio.get_running_loop()
        _, protocol = await loop.create_connection(cls, host, port, ssl=context,
                                                   server_hostname=host if context is not None else None)
        return protocol

    def close(self) -> None:
        self._ended = True
        if self._transport is not None:
            self._transport.abort()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)

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
