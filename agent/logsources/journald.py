"""Entries of the host's systemd journal, read in the agent's own process through libsystemd's sd-journal API.

Why in-process, through libsystemd: the journal file format changes with systemd versions (compact mode, keyed
hashes), and only systemd's own reader keeps up with it, so the journal is read by libsystemd, not parsed here.
It used to be read by `journalctl --follow --output=json` as a child process, but the journal monitors are on by
default wherever there is a journal, and that child cost 7.4 MiB of resident memory (mostly the pages of the
libraries it maps) and the JSON on its pipe was parsed again in Python: the agent's tree stayed over
node-problem-detector's memory and at 2.3x its CPU (issue 28). In-process, sd-journal costs about 1.2 MiB, hands
each field over as bytes, and skips unwanted identifiers by its own index (`sd_journal_add_match`). ctypes is
the standard library, so no binding is built against one libsystemd's headers (`agent/logsources/sdjournal.py`).
The library is the host's own below the host root when it loads, which reads what its journald writes; else the
image's. If none loads, `read()` raises OSError saying so and the monitors' conditions turn Unknown.

Where: the host root's `/var/log/journal` and `/run/log/journal` (persistent or volatile, the node-problem-detector
pain point #121), as `journalctl --root` opens them (`SD_JOURNAL_OS_ROOT`), or one `directory` (NPD's `logPath`).

`read()` never blocks: it takes the inotify events sd-journal's descriptor holds (`sd_journal_process`; a rotation
is taken in there, and reading goes on from the current entry) and then the entries logged since, at most
`max_entries` per call (`behind` says more are waiting). `fileno()` is that descriptor, so the agent waits for
input instead of polling (None where sd-journal says it may miss changes: then the monitor polls). On an error
the journal is closed and `read()` raises OSError; a later call opens it again (at most once per
`restart_after`) right after the last entry read (its cursor), so nothing is lost or read twice.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.logsources import sdjournal

DEFAULT_MAX_ENTRIES = 2000
MAX_FIELD = 64 * 1024  # bytes of a field kept (sd-journal's own default threshold): a runaway field cannot grow memory
_FIELDS = (b"MESSAGE", b"SYSLOG_IDENTIFIER", b"_SYSTEMD_UNIT")


@dataclass(frozen=True)
class JournalEntry:
    message: str
    at: dt.datetime  # __REALTIME_TIMESTAMP: when journald received it
    identifier: str  # SYSLOG_IDENTIFIER, what node-problem-detector's `pluginConfig.source` matches
    unit: str  # _SYSTEMD_UNIT, "" when the sender is not a unit
    cursor: str


class JournalReader:
    """Journal entries logged by any of `identifiers` (all entries when empty) since the last `read()`.

    `directory` reads the journal files below that directory (node-problem-detector's `logPath`) instead of the
    host root's `/var/log/journal` and `/run/log/journal`. `libraries` are the libsystemd files to try, in order
    (default: the host's, then the image's; see `sdjournal.candidates`).
    """

    def __init__(self, host_root: Path, *, identifiers: Sequence[str] = (), directory: Path | None = None,
                 libraries: Sequence[str] | None = None, max_entries: int = DEFAULT_MAX_ENTRIES,
                 restart_after: float = 5.0) -> None:
        self.path = directory or host_root
        self.behind = False
        self._directory = directory
        self._libraries = tuple(libraries) if libraries is not None else sdjournal.candidates(host_root)
        self._identifiers = list(identifiers)
        self._max_entries = max_entries
        self._restart_after = restart_after
        self._since: dt.datetime | None = None  # where the first open begins; None: the whole journal
        self._cursor = ""
        self._journal: sdjournal.Journal | None = None
        self._fd: int | None = None
        self._last_start = -float("inf")
        self._last_error = ""
        self._failed = ""  # an error met after some entries were read: raised by the next call

    def seek_end(self) -> None:
        """Skip the history: read only entries logged from now on. A start time rather than the journal's tail
        at opening, which would also skip entries logged between this call and the opening."""
        self._since = dt.datetime.now(dt.UTC)

    def start_at(self, since: dt.datetime) -> None:
        """Begin with the entries logged at `since` or later (lookback)."""
        self._since = since

    @property
    def library(self) -> str | None:
        """The libsystemd file reading the journal, once open."""
        return self._journal.library.path if self._journal is not None else None

    def fileno(self) -> int | None:
        """sd-journal's inotify descriptor, while the journal is open: readable when a journal file changed."""
        return self._fd

    def read(self) -> list[JournalEntry]:
        if self._failed:
            error, self._failed = self._failed, ""
            raise OSError(error)
        if self._journal is None:
            self._open()
        assert self._journal is not None
        entries: list[JournalEntry] = []
        self.behind = False
        try:
            self._journal.process()
            while True:
                if len(entries) >= self._max_entries:
                    self.behind = True
                    break
                if not self._journal.next():
                    break
                entry = self._entry(self._journal)
                if entry is not None:
                    entries.append(entry)
                    self._cursor = entry.cursor
        except OSError as e:
            self.close()
            self._last_error = f"reading the journal in {self.path} failed: {e.strerror or e}"
            if not entries:
                raise OSError(self._last_error) from None
            self._failed = self._last_error  # what was read is returned; its cursor is where the reopening resumes
        return entries

    def close(self) -> None:
        journal, self._journal, self._fd = self._journal, None, None
        if journal is not None:
            journal.close()

    def _open(self) -> None:
        if time.monotonic() < self._last_start + self._restart_after:
            raise OSError(self._last_error)  # the same words until the restart: no condition churn
        self._last_start = time.monotonic()
        journal = None
        try:
            library = sdjournal.load(self._libraries)
            journal = sdjournal.Journal(library, self._directory or self.path, os_root=self._directory is None)
            inotify = journal.fd()  # before reading, so no change goes unnoticed; it also watches for new files
            fd = inotify if journal.reliable_fd() else None
            for identifier in self._identifiers:
                journal.add_match("SYSLOG_IDENTIFIER", identifier)
            journal.set_data_threshold(MAX_FIELD)
            self._seek(journal)
        except OSError as e:
            if journal is not None:
                journal.close()
            self._last_error = e.strerror if e.errno is not None and e.strerror else str(e)
            raise OSError(self._last_error) from None
        self._journal, self._fd = journal, fd

    def _seek(self, journal: sdjournal.Journal) -> None:
        if self._cursor:
            journal.seek_cursor(self._cursor)
            # the entry the cursor names, when it is still there, was read already; else this is the one after it
            if journal.next() and not journal.test_cursor(self._cursor):
                journal.seek_cursor(self._cursor)  # back to just before it, for read()'s next()
        elif self._since is not None:
            journal.seek_realtime(int(self._since.timestamp() * 1_000_000))
        else:
            journal.seek_head()

    @staticmethod
    def _entry(journal: sdjournal.Journal) -> JournalEntry | None:
        """The current entry; None for one without a message (as NPD, which reads MESSAGE only)."""
        message, identifier, unit = (journal.get(field, MAX_FIELD) for field in _FIELDS)
        if message is None:
            return None
        try:
            at = dt.datetime.fromtimestamp(journal.realtime_usec() / 1e6, dt.UTC)
        except (OverflowError, ValueError):  # a clock far past any date
            return None
        return JournalEntry(message=message.decode("utf-8", "replace"), at=at,
                            identifier=(identifier or b"").decode("utf-8", "replace"),
                            unit=(unit or b"").decode("utf-8", "replace"), cursor=journal.cursor())
