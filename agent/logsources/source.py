"""The one interface every log source offers the log monitor, so it reads the kernel log, a log file or the
journal through the same calls.

Each source keeps its own record type (`KmsgRecord`, a text line, `JournalEntry`): what a record's text is and
when it was logged is the log monitor's to read, because NPD's config decides it (a filelog line is dated by the
config's `timestamp` pattern, a kmsg record by the host's boot time).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, TypeVar

RecordT_co = TypeVar("RecordT_co", covariant=True)


class SourceAbsent(OSError):
    """The log does not exist on this host (a host without a journal): nothing to read and nothing to report, as
    opposed to a log that exists and cannot be read."""


class LogSource(Protocol[RecordT_co]):
    path: Path  # what is read; named when it cannot be

    @property
    def behind(self) -> bool:
        """True when the last `read()` stopped at its bound with more waiting."""

    def seek_end(self) -> None:
        """Skip the history: read only what is logged from now on."""

    def start_at(self, since: dt.datetime) -> None:
        """Begin the history at `since` (lookback); a source that cannot search by time reads it all."""

    def fileno(self) -> int | None:
        """A descriptor that is readable when input waits (see `agent.model.WaitsForInput`); None: poll."""

    def read(self) -> Sequence[RecordT_co]:
        """What was logged since the last call; never blocks; OSError when the log cannot be read (`SourceAbsent`
        when there is no such log on this host)."""

    def close(self) -> None:
        """Release what the source holds open."""
