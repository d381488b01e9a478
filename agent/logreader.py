"""Tail readers for the kernel log (`/dev/kmsg`) and text log files, polled from the event loop (no threads).

Each `read()` returns what was appended since the previous call and never blocks: files are read to their
current end, FIFOs and `/dev/kmsg` are opened O_NONBLOCK and read until EAGAIN. One call does a bounded amount
of work (`max_bytes`, `max_records`) so a huge backlog cannot stall the agent's loop past a check's timeout; when
a call stopped at that bound, `behind` is True and the next call continues where it left off.

Files are opened lazily: a missing path raises FileNotFoundError from `read()`, and a later call retries, so a
log that appears after start-up is picked up without a restart.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

_KMSG_HEADER = re.compile(r"([0-9]+),([0-9]+),([0-9]+),([^,]*)(?:,.*)?", re.ASCII)
_KMSG_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")
_KMSG_READ_SIZE = 8192  # one /dev/kmsg read() must hold a whole record (EINVAL otherwise); records are < 8 KiB
_MAX_PENDING = 64 * 1024  # a "line" that never ends is cut here, so a runaway writer cannot grow memory
DEFAULT_MAX_BYTES = 1024 * 1024
DEFAULT_MAX_RECORDS = 4096


@dataclass(frozen=True)
class KmsgRecord:
    priority: int  # syslog level: 0 emerg .. 7 debug
    facility: int  # 0 kernel, 1 user (lines written to /dev/kmsg from user space), ...
    seq: int  # the kernel's record sequence number; a gap means records were overwritten before we read them
    usec: int  # microseconds since boot (monotonic clock: suspend time is not counted)
    flags: str  # "-" for a normal record; "c"/"+" on kernels that still split continuation lines
    message: str


def parse_kmsg(line: str) -> KmsgRecord | None:
    """Parse one `<prio>,<seq>,<usec>,<flags>[,more];<message>` record; None for dictionary or garbage lines.

    Lines starting with a space are the `KEY=value` dictionary lines that follow a record (SUBSYSTEM=, DEVICE=);
    the caller skips them by getting None. Never raises.
    """
    line = line.rstrip("\n")
    if not line or line[0] == " ":
        return None
    header, sep, message = line.partition(";")
    match = _KMSG_HEADER.fullmatch(header) if sep else None
    if match is None:
        return None
    prio = int(match.group(1))
    return KmsgRecord(priority=prio & 7, facility=prio >> 3, seq=int(match.group(2)), usec=int(match.group(3)),
                      flags=match.group(4), message=_unescape(message))


def _unescape(message: str) -> str:
    """The kernel writes non-printable bytes, bytes >= 0x7f and the backslash itself as `\\xNN`; undo that.

    The escaped bytes may be parts of one UTF-8 character, so they are put back as bytes and decoded together.
    """
    if "\\x" not in message:
        return message
    raw = _KMSG_ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), message.encode("utf-8"))
    return raw.decode("utf-8", "replace")


class _Tail:
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


class KmsgReader:
    """Kernel log records appended since the last `read()`, from `/dev/kmsg` or a file/FIFO of the same format.

    The character device returns exactly one record per read(); EAGAIN means none are left, EPIPE means the
    ring buffer overwrote records we had not read yet (counted in `overwritten`; reading continues with the
    oldest record still there). A regular file is tailed by offset (tests and fixtures use one), a FIFO is kept
    open and read until empty. `seek_end()` skips the history (everything logged before the first read).
    """

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_records: int = DEFAULT_MAX_RECORDS,
                 ) -> None:
        self.path = path
        self.overwritten = 0
        self._max_records = max_records
        self._tail = _Tail(path, max_bytes=max_bytes)
        self._device_fd: int | None = None
        self._device_behind = False
        self._skip_history = False
        self._mode: str | None = None  # "device" or "tail", decided at the first read

    @property
    def behind(self) -> bool:
        """True when the last read stopped at its bound with more records waiting."""
        return self._device_behind if self._mode == "device" else self._tail.behind

    def seek_end(self) -> None:
        if self._device_fd is not None:
            os.lseek(self._device_fd, 0, os.SEEK_END)  # /dev/kmsg: continue after the newest record
        elif self._mode == "tail":
            self._tail.seek_end()
        else:
            self._skip_history = True

    def fileno(self) -> int | None:
        """The open /dev/kmsg device, which poll() reports readable when records are waiting; None for a file."""
        return self._device_fd if self._mode == "device" else None

    def read(self) -> list[KmsgRecord]:
        if self._mode is None:
            self._mode = "device" if stat.S_ISCHR(os.stat(self.path).st_mode) else "tail"
            if self._skip_history and self._mode == "tail":
                self._tail.seek_end()
        if self._mode == "tail":
            records = (parse_kmsg(line.decode("utf-8", "replace")) for line in self._tail.read_lines())
            return [record for record in records if record is not None]
        return self._read_device()

    def close(self) -> None:
        self._tail.close()
        if self._device_fd is not None:
            os.close(self._device_fd)
            self._device_fd = None

    def _read_device(self) -> list[KmsgRecord]:
        if self._device_fd is None:
            self._device_fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            if self._skip_history:
                os.lseek(self._device_fd, 0, os.SEEK_END)
        records: list[KmsgRecord] = []
        self._device_behind = False
        while True:
            if len(records) >= self._max_records:
                self._device_behind = True
                return records
            try:
                data = os.read(self._device_fd, _KMSG_READ_SIZE)
            except BlockingIOError:  # EAGAIN: nothing new
                return records
            except BrokenPipeError:  # EPIPE: we fell behind the ring buffer; the next read resumes past the gap
                self.overwritten += 1
                continue
            if not data:
                return records
            # One record per read: the first line is the record, the rest are its " KEY=value" dictionary lines.
            record = parse_kmsg(data.split(b"\n", 1)[0].decode("utf-8", "replace"))
            if record is not None:
                records.append(record)


class FileLogReader:
    """Text lines appended to a log file (e.g. `/var/log/kern.log`) since the last `read()`.

    Rotation is followed: a new inode at the path (rename-and-create) first yields the rest of the old file,
    then the new file from its start; a file that shrank (copytruncate) is read again from its start. If the
    path vanishes while open, the old file is drained once and the next `read()` raises FileNotFoundError
    until the file is back.
    """

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self._tail = _Tail(path, max_bytes=max_bytes)

    @property
    def behind(self) -> bool:
        return self._tail.behind

    def seek_end(self) -> None:
        self._tail.seek_end()

    def fileno(self) -> int | None:
        """None: a regular file is always "readable" to poll(), so it is polled at the monitor's interval."""
        return None

    def read(self) -> list[str]:
        return [line.decode("utf-8", "replace") for line in self._tail.read_lines()]

    def close(self) -> None:
        self._tail.close()
