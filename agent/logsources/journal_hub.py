"""One journal reader for every journald monitor that reads the same journal: the shipped journal monitors are on
by default because together they cost one reader, not one each.

`JournalHub` opens one `JournalReader` (sd-journal, in the agent's process) for the union of its monitors'
identifiers (one `SYSLOG_IDENTIFIER` match each, which sd-journal ORs) and routes each entry to the subscriptions
whose identifier logged it. Each monitor holds a `JournalSubscription`, which is its `LogSource`. The reader opens
once every subscription has said where its history begins, at the earliest of them (each subscription drops what
is older than its own start), so no monitor loses history to another that started first.

Every subscription offers the same descriptor to wait on: sd-journal's inotify descriptor, or, while entries
already routed to it wait to be read or the reader stopped at its bound with more to read, a pipe that always
reads ready, so no monitor sleeps on input another monitor pumped for it, nor on a backlog no file change will
announce. The supervisor lets many checks wait on one descriptor.

A host without a journal (no journal file in `/var/log/journal` or `/run/log/journal` below the host root, when no
`logPath` names one) opens no reader and loads no libsystemd: `read()` raises `SourceAbsent`, and the monitors
report nothing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from agent.logsources.journald import DEFAULT_MAX_ENTRIES, JournalEntry, JournalReader
from agent.logsources.source import SourceAbsent

JOURNAL_DIRS = ("var/log/journal", "run/log/journal")  # persistent and volatile, below the host root
MAX_QUEUED = 10_000  # entries routed to one subscription and not read yet (each is woken at once: a bound only)


class JournalHub:
    def __init__(self, host_root: Path, *, directory: Path | None = None, libraries: Sequence[str] | None = None,
                 max_entries: int = DEFAULT_MAX_ENTRIES, restart_after: float = 5.0) -> None:
        self.path = directory or host_root
        self._host_root = host_root
        self._directory = directory
        self._libraries = libraries
        self._max_entries = max_entries
        self._restart_after = restart_after
        self._subscriptions: list[JournalSubscription] = []
        self._reader: JournalReader | None = None
        self._ready: tuple[int, int] | None = None  # a pipe holding one byte: always readable
        self.behind = False

    def subscribe(self, identifier: str) -> JournalSubscription:
        subscription = JournalSubscription(self, identifier)
        self._subscriptions.append(subscription)
        return subscription

    def present(self) -> bool:
        """A journal file below the host's journal folders (`<machine-id>/*.journal`): an empty folder, as images
        without journald leave, is no journal."""
        if self._directory is not None:
            return True  # a logPath the config names: opening it says what is wrong with it
        return any(_journal_files(self._host_root / d) for d in JOURNAL_DIRS)

    def fileno(self) -> int | None:
        return self._reader.fileno() if self._reader is not None else None

    def ready_fd(self) -> int:
        if self._ready is None:
            read_end, write_end = os.pipe()
            os.write(write_end, b"!")
            self._ready = (read_end, write_end)
        return self._ready[0]

    def pump(self) -> None:
        """Read what was logged since and hand each entry to the subscriptions that want it."""
        if self._reader is None:
            if not self.present():
                raise SourceAbsent(f"{self.path}: no journal (no journal file in /{' or /'.join(JOURNAL_DIRS)})")
            if any(not s.declared for s in self._subscriptions):
                return  # a monitor has not said where its history begins yet: start for all at once
            self._reader = self._start()
        self.behind = False  # not after an error: the ready pipe would wake the monitors without end
        entries = self._reader.read()
        self.behind = self._reader.behind
        for entry in entries:
            for subscription in self._subscriptions:
                if subscription.identifier in ("", entry.identifier):
                    subscription.queue.append(entry)

    def _start(self) -> JournalReader:
        identifiers = {s.identifier for s in self._subscriptions}
        reader = JournalReader(self._host_root, identifiers=() if "" in identifiers else sorted(identifiers),
                               directory=self._directory, libraries=self._libraries, max_entries=self._max_entries,
                               restart_after=self._restart_after)
        starts = [s.since for s in self._subscriptions]
        if all(start is not None for start in starts):
            reader.start_at(min(start for start in starts if start is not None))
        return reader

    def release(self, subscription: JournalSubscription) -> None:
        """A monitor is done; the last one out closes the journal."""
        if subscription in self._subscriptions:
            self._subscriptions.remove(subscription)
        if self._subscriptions:
            return
        if self._reader is not None:
            self._reader.close()
            self._reader = None
        if self._ready is not None:
            for fd in self._ready:
                os.close(fd)
            self._ready = None


def _journal_files(directory: Path) -> bool:
    try:
        folders = [p for p in directory.iterdir() if p.is_dir()]
        return any(f.name.endswith((".journal", ".journal~")) for folder in folders for f in folder.iterdir())
    except OSError:
        return False


class JournalSubscription:
    """One monitor's view of the hub's journal: the entries its identifier logged ("" = every entry)."""

    def __init__(self, hub: JournalHub, identifier: str) -> None:
        self.path = hub.path
        self.identifier = identifier
        self.queue: deque[JournalEntry] = deque(maxlen=MAX_QUEUED)
        self.declared = False
        self.since: dt.datetime | None = None  # None once declared: the whole journal
        self._hub = hub

    @property
    def behind(self) -> bool:
        return self._hub.behind

    def seek_end(self) -> None:
        self.start_at(dt.datetime.now(dt.UTC))

    def start_at(self, since: dt.datetime) -> None:
        self.since, self.declared = since, True

    def fileno(self) -> int | None:
        return self._hub.ready_fd() if self.queue or self._hub.behind else self._hub.fileno()

    def read(self) -> list[JournalEntry]:
        self._hub.pump()
        entries = [e for e in self.queue if self.since is None or e.at >= self.since]
        self.queue.clear()
        return entries

    def close(self) -> None:
        self._hub.release(self)


class JournalHubs:
    """The hubs of one agent: one per journal read (the host's, or a `logPath` a config names)."""

    def __init__(self, host_root: Path) -> None:
        self._host_root = host_root
        self._hubs: dict[Path | None, JournalHub] = {}

    def hub(self, directory: Path | None) -> JournalHub:
        if directory not in self._hubs:
            self._hubs[directory] = JournalHub(self._host_root, directory=directory)
        return self._hubs[directory]
