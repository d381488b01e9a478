"""The lines of a watch response, each bounded explicitly.

A watch response is one JSON event per line, and a line holds a whole object. aiohttp's line iterator stops at its
read buffer's high-water mark (512 KiB with its defaults) and raises `LineTooLong`, an exception neither program
expected: one object over that size (a Node with a large annotation, a Pod with a big env or annotation) killed
the agent's and the remediator's watches, and with them the program. The API server accepts objects up to etcd's
request limit (1.5 MiB by default, 3 MiB at most in practice), so the bound here is a generous explicit one, and a
line over it is an error of its own that the caller handles (relist, count, log) instead of a crash.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

# Over five times the largest object etcd accepts with any setting seen in practice; a watch line also carries the
# event's type and JSON's escaping, which can double a value's size.
MAX_WATCH_LINE = 16 << 20


class LineTooLong(Exception):
    """A line longer than the bound: the caller's stream is useless from here on (the rest of it is not read)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"a watch event longer than {limit >> 20} MiB (the explicit bound; etcd's limit is lower)")
        self.limit = limit


async def bounded_lines(chunks: AsyncIterable[bytes], limit: int = MAX_WATCH_LINE) -> AsyncIterator[bytes]:
    """The newline-terminated lines of `chunks` (the last one also without a newline), each at most `limit` bytes
    without its newline; LineTooLong when one is longer. Memory: at most `limit` plus one chunk."""
    pending: list[bytes] = []
    size = 0
    async for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            size += end - start
            if size > limit:
                raise LineTooLong(limit)
            pending.append(chunk[start:end])
            yield b"".join(pending)
            pending, size, start = [], 0, end + 1
        if start < len(chunk):
            size += len(chunk) - start
            if size > limit:
                raise LineTooLong(limit)
            pending.append(chunk[start:])
    if pending:
        yield b"".join(pending)
