"""The kernel log: `/dev/kmsg` records (or a file/FIFO in the same format), parsed into KmsgRecord."""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from agent.logsources.tail import DEFAULT_MAX_BYTES, Tail

_KMSG_HEADER = re.compile(r"([0-9]+),([0-9]+),([0-9]+),([^,]*)(?:,.*)?", re.ASCII)
_KMSG_ESCAPE = re.compile(rb"\\x([0-9a-fA-F]{2})")
_KMSG_READ_SIZE = 8192  # one /dev/kmsg read() must hold a whole record (EINVAL otherwise); records are < 8 KiB
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


class KmsgReader:
    """Kernel log records appended since the last `read()`, from `/dev/kmsg` or a file/FIFO of the same format.

    The character device returns exactly one record per read(); EAGAIN means none are left, EPIPE means the
    ring buffer overwrote records we had not read yet (reading continues with the oldest record still there; the
    gap shows in the records' `seq`). A regular file is tailed by offset (tests and fixtures use one), a FIFO is kept
    open and read until empty. `seek_end()` skips the history (everything logged before the first read).
    """

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_records: int = DEFAULT_MAX_RECORDS,
                 ) -> None:
        self.path = path
        self._max_records = max_records
        self._tail = Tail(path, max_bytes=max_bytes)
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

    def start_at(self, since: dt.datetime) -> None:
        """Nothing to do: the kernel's ring buffer cannot be searched by time, so it is read from its oldest record
        and the log monitor drops the records logged before `since` by their time since boot."""

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
                continue
            if not data:
                return records
            # One record per read: the first line is the record, the rest are its " KEY=value" dictionary lines.
            record = parse_kmsg(data.split(b"\n", 1)[0].decode("utf-8", "replace"))
            if record is not None:
                records.append(record)
