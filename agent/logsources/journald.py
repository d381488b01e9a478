"""Entries of the host's systemd journal, read through `journalctl --follow --output=json`.

Why journalctl rather than a binding: the journal file format changes with systemd versions (compact mode,
keyed hashes), and only systemd's own reader keeps up with it; the Python bindings need libsystemd headers to
build and pin one libsystemd. journalctl is systemd's maintained reader, its JSON output is a stable interface,
and `--root` points it at the host's `/var/log/journal` and `/run/log/journal` (persistent or volatile, the
node-problem-detector pain point #121) below the host root. In a pod, the image's journalctl reads the host's
files; a journal written by a much newer systemd may use features an older journalctl cannot read, which shows
as journalctl exiting with an error (the monitor's conditions turn Unknown with journalctl's message).

`read()` never blocks: journalctl runs as a child process and its output pipe is read O_NONBLOCK until empty
(at most `max_bytes` per call; `behind` says more is waiting). `fileno()` is that pipe, so the agent can wait
for input instead of polling. If journalctl exits, `read()` raises OSError with its last stderr line, and a
later call starts it again (at most once per `restart_after`) right after the last entry read (`--after-cursor`),
so nothing is lost or read twice.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_BYTES = 1024 * 1024
_MAX_LINE = 256 * 1024  # one JSON entry longer than this is cut off and dropped: a runaway field cannot grow memory


@dataclass(frozen=True)
class JournalEntry:
    message: str
    at: dt.datetime  # __REALTIME_TIMESTAMP: when journald received it
    identifier: str  # SYSLOG_IDENTIFIER, what node-problem-detector's `pluginConfig.source` matches
    unit: str  # _SYSTEMD_UNIT, "" when the sender is not a unit
    cursor: str


def parse_entry(line: bytes) -> JournalEntry | None:
    """One line of `journalctl --output=json`; None for anything that is not an entry with a message."""
    try:
        fields = json.loads(line)
    except ValueError:
        return None
    if not isinstance(fields, dict):
        return None
    message = _text(fields.get("MESSAGE"))
    try:
        at = dt.datetime.fromtimestamp(int(fields["__REALTIME_TIMESTAMP"]) / 1e6, dt.UTC)
    except (KeyError, ValueError, TypeError, OverflowError, OSError):  # OverflowError/OSError: past any date
        return None
    if message is None:
        return None
    return JournalEntry(message=message, at=at, identifier=_text(fields.get("SYSLOG_IDENTIFIER")) or "",
                        unit=_text(fields.get("_SYSTEMD_UNIT")) or "", cursor=str(fields.get("__CURSOR", "")))


def _text(value: object) -> str | None:
    """journalctl writes a field that is not valid UTF-8 as a list of byte values, and a repeated field as a list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(b, int) for b in value):
        return bytes(b & 0xFF for b in value).decode("utf-8", "replace")
    if isinstance(value, list) and value:
        return _text(value[-1])
    return None


class JournalReader:
    """Journal entries logged by any of `identifiers` (all entries when empty) since the last `read()`.

    `directory` reads the journal files below that directory (node-problem-detector's `logPath`) instead of the
    host root's `/var/log/journal` and `/run/log/journal`.
    """

    def __init__(self, host_root: Path, *, identifiers: Sequence[str] = (), directory: Path | None = None,
                 journalctl: str = "journalctl", max_bytes: int = DEFAULT_MAX_BYTES,
                 restart_after: float = 5.0) -> None:
        self.path = directory or host_root
        self.behind = False
        self._where = ["--directory", str(directory)] if directory else ["--root", str(host_root)]
        self._identifiers = list(identifiers)
        self._journalctl = journalctl
        self._max_bytes = max_bytes
        self._restart_after = restart_after
        self._since: dt.datetime | None = None  # where the first start begins; None: the whole journal
        self._cursor = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._pending = b""
        self._stderr = b""
        self._last_start = -float("inf")
        self._last_error = ""

    def seek_end(self) -> None:
        """Skip the history: read only entries logged from now on. A start time rather than journalctl's
        `--lines=0`, which would also skip entries logged while journalctl is starting."""
        self._since = dt.datetime.now(dt.UTC)

    def start_at(self, since: dt.datetime) -> None:
        """Begin with the entries logged at `since` or later (lookback)."""
        self._since = since

    def fileno(self) -> int | None:
        """The pipe journalctl writes to, while it runs: readable when entries are waiting."""
        return self._proc.stdout.fileno() if self._proc is not None and self._proc.stdout is not None else None

    def argv(self) -> list[str]:
        # --merge: without it --follow implies --boot, whose lookup of the current boot fails ("No such boot ID in
        # journal") while the journal holds no entry of it yet; the start is always given by --since or a cursor.
        argv = [self._journalctl, *self._where, "--follow", "--merge", "--output=json", "--all", "--no-pager",
                "--quiet"]
        argv += [f"--identifier={i}" for i in self._identifiers]
        if self._cursor:
            argv += [f"--after-cursor={self._cursor}", "--no-tail"]
        elif self._since is not None:
            argv += [f"--since=@{self._since.timestamp():.6f}", "--no-tail"]
        else:
            argv += ["--no-tail"]
        return argv

    def read(self) -> list[JournalEntry]:
        if self._proc is None:
            self._start()
        assert self._proc is not None and self._proc.stdout is not None
        data = self._drain(self._proc.stdout.fileno())
        self._stderr = (self._stderr + self._drain_stderr())[-2048:]
        entries = self._entries(data)
        if not data and self._proc.poll() is not None:
            code, self._proc = self._proc.returncode, None
            last = self._stderr.decode("utf-8", "replace").strip().splitlines()
            self._pending, self._stderr = b"", b""
            self._last_error = f"journalctl exited with {code}" + (f": {last[-1]}" if last else "")
            raise OSError(self._last_error)
        return entries

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def _start(self) -> None:
        if time.monotonic() < self._last_start + self._restart_after:
            raise OSError(self._last_error)  # the same words until the restart: no condition churn
        self._last_start = time.monotonic()
        try:
            proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, close_fds=True)
        except OSError as e:
            self._last_error = f"cannot run {self._journalctl}: {e.strerror or e}"
            raise OSError(self._last_error) from None
        assert proc.stdout is not None and proc.stderr is not None
        os.set_blocking(proc.stdout.fileno(), False)
        os.set_blocking(proc.stderr.fileno(), False)
        self._proc = proc

    def _drain(self, fd: int) -> bytes:
        chunks: list[bytes] = []
        total = 0
        self.behind = False
        while total < self._max_bytes:
            try:
                chunk = os.read(fd, min(65536, self._max_bytes - total))
            except BlockingIOError:
                return b"".join(chunks)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
        self.behind = True
        return b"".join(chunks)

    def _drain_stderr(self) -> bytes:
        assert self._proc is not None and self._proc.stderr is not None
        try:
            return os.read(self._proc.stderr.fileno(), 65536)
        except BlockingIOError:
            return b""

    def _entries(self, data: bytes) -> list[JournalEntry]:
        if not data:
            return []
        *lines, self._pending = (self._pending + data).split(b"\n")
        if len(self._pending) > _MAX_LINE:
            self._pending = b""
        entries = []
        for line in lines:
            entry = parse_entry(line)
            if entry is not None:
                entries.append(entry)
                self._cursor = entry.cursor or self._cursor
        return entries
