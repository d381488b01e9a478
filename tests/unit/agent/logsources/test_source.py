"""`agent.logsources.source` declares the `LogSource` protocol and `SourceAbsent` only (no behaviour of its own), so
this tests how its users read it: `SourceAbsent` is an `OSError` (a reader that only knows `except OSError` still
catches it), and the journal hub, the source that raises it, raises it for a host with no journal file."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.logsources.journal_hub import JournalHub
from agent.logsources.source import SourceAbsent


def test_source_absent_is_an_os_error_carrying_its_message() -> None:
    with pytest.raises(OSError, match="no journal here"):
        raise SourceAbsent("no journal here")


def test_a_journal_subscription_raises_source_absent_when_the_host_has_only_empty_journal_folders(
        tmp_path: Path) -> None:
    (tmp_path / "var/log/journal").mkdir(parents=True)  # what images without journald leave
    hub = JournalHub(tmp_path, libraries=("/nonexistent/libsystemd.so.0",))
    subscription = hub.subscribe("kubelet")
    subscription.seek_end()
    with pytest.raises(SourceAbsent, match="no journal"):
        subscription.read()
    subscription.close()
