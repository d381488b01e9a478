"""Text log files (`/var/log/kern.log`, syslog), tailed across rotation: NPD's filelog source."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from agent.logsources.tail import DEFAULT_MAX_BYTES, Tail


class FileLogReader:
    """Text lines appended to a log file (e.g. `/var/log/kern.log`) since the last `read()`.

    Rotation is followed: a new inode at the path (rename-and-create) first yields the rest of the old file,
    then the new file from its start; a file that shrank (copytruncate) is read again from its start. If the
    path vanishes while open, the old file is drained once and the next `read()` raises FileNotFoundError
    until the file is back.
    """

    def __init__(self, path: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self._tail = Tail(path, max_bytes=max_bytes)

    @property
    def behind(self) -> bool:
        return self._tail.behind

    def seek_end(self) -> None:
        self._tail.seek_end()

    def start_at(self, since: dt.datetime) -> None:
        """Nothing to do: a text file cannot be searched by time, so the history is read from the start and the
        log monitor drops the lines logged before `since` by their timestamps."""

    def fileno(self) -> int | None:
        """None: a regular file is always "readable" to poll(), so it is polled at the monitor's interval."""
        return None

    def read(self) -> list[str]:
        return [line.decode("utf-8", "replace") for line in self._tail.read_lines()]

    def close(self) -> None:
        self._tail.close()
