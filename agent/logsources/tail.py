"""What the log sources share: tailing a file or FIFO, polled from the event loop (no threads).

Each `read()` returns what was appended since the previous call and never blocks: files are read to their
current end, FIFOs and `/dev/kmsg` are opened O_NONBLOCK and read until EAGAIN. One call does a bounded amount
of work (`max_bytes`, `max_records`) so a huge backlog cannot stall the agent's loop past a check's timeout; when
a call stopped at that bound, `behind` is True and the next call continues where it left off.

Files are opened lazily: a missing path raises FileNotFoundError from `read()`, and a later call retries, so a
log that appears after start-up is picked up without a restart.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_MAX_PENDING = 64 * 1024  # a "line" that never ends is cut here, so a runaway writer cannot grow memory
DEFAULT_MAX_BYTES = 1024 * 1024


class Tail:
    """Whole lines appended to a regular file or a FIFO since the last call, as bytes without the newline.

    A regular file is re-checked on every call: a new inode (rotated or replaced) is drained of what was written
    to the old one, then followed from its start; a file smaller than our offset was truncated and is followed
    from its start. A partial last line is held until its newline arrives.
    """

    def __init__(self, path: Path, *, max_bytes: int) -> None:
        self.path = path
        self.behind = False
        self._max_bytes = max_bytes
        self._fd: int | None = None
        self._fifo = False
        self._identity: tuple[int, int] = (0, 0)  # (st_dev, st_ino) of the open file
        self._offset = 0
        self._pending = b""
        self._skip_history = False

    def seek_end(self) -> None:
        """Skip what is in the file now; applied when the file is first opened if it is not open yet."""
        if self._fd is None:
            self._skip_history = True
            return
        self._pending = b""
        if self._fifo:
            while self._read_fifo():
                pass
        else:
            self._offset = os.fstat(self._fd).st_size

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None

    def read_lines(self) -> list[bytes]:
        if self._fd is None:
            self._open(skip_history=self._skip_history)
            self._skip_history = False
            return self._split(self._drain())
        if self._fifo:
            return self._split(self._drain())
        try:
            current = os.stat(self.path)
            identity: tuple[int, int] | None = (current.st_dev, current.st_ino)
        except FileNotFoundError:
            identity = None  # rotated away and not re-created yet
        if identity != self._identity:
            # Finish the old file first: lines written just before the rotation belong to no other file.
            lines = self._split(self._drain(limit=False)) + self._flush_pending()
            self.close()
            if identity is not None:
                self._open(skip_history=False)
                lines += self._split(self._drain())
            return lines
        if os.fstat(self._fd).st_size < self._offset:  # truncated in place (copytruncate): start over
            self._offset, self._pending = 0, b""
        return self._split(self._drain())

    def _open(self, *, skip_history: bool) -> None:
        mode = os.stat(self.path).st_mode  # FileNotFoundError goes to the caller
        self._fifo = stat.S_ISFIFO(mode)
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        info = os.fstat(fd)
        self._fd, self._identity, self._offset, self._pending = fd, (info.st_dev, info.st_ino), 0, b""
        if skip_history:
            self.seek_end()

    def _drain(self, *, limit: bool = True) -> bytes:
        chunks: list[bytes] = []
        total = 0
        self.behind = False
        while True:
            size = min(65536, self._max_bytes - total) if limit else 65536
            chunk = self._read_fifo(size) if self._fifo else self._read_file(size)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if limit and total >= self._max_bytes:
                self.behind = True
                return b"".join(chunks)

    def _read_file(self, size: int) -> bytes:
        assert self._fd is not None
        chunk = os.pread(self._fd, size, self._offset)
        self._offset += len(chunk)
        return chunk

    def _read_fifo(self, size: int = 65536) -> bytes:
        assert self._fd is not None
        try:
            return os.read(self._fd, size)  # b"" while no writer has it open; we keep ours for the next one
        except BlockingIOError:
            return b""

    def _split(self, data: bytes) -> list[bytes]:
        if not data:
            return []
        *lines, self._pending = (self._pending + data).split(b"\n")
        if len(self._pending) > _MAX_PENDING:
            lines.append(self._pending)
            self._pending = b""
        return lines

    def _flush_pending(self) -> list[bytes]:
        rest, self._pending = self._pending, b""
        return [rest] if rest else []
