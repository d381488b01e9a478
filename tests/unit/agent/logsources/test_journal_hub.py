"""One journal reader for every journald monitor, against a real journal written by this machine's systemd-journald
(tests/real_journal.py): entries reach the monitors whose identifier logged them, each from its own start."""

from __future__ import annotations

import datetime as dt
import os
import select
import subprocess
from pathlib import Path

import pytest

from agent.logsources.journal_hub import JournalHub, JournalSubscription
from agent.logsources.journald import JournalEntry
from agent.logsources.source import SourceAbsent
from tests.real_journal import RealJournal
from tests.waiting import wait_until


def my_journals() -> int:
    """Journals this test process holds open: sd-journal's inotify descriptors (one per open journal)."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(fd) == "anon_inode:inotify"
        except OSError:
            continue
    return count


def my_journal_files() -> int:
    return sum(os.readlink(fd).endswith((".journal", ".journal~")) for fd in Path("/proc/self/fd").iterdir()
               if fd.is_symlink())


def on_disk(journal: RealJournal) -> str:
    out = subprocess.run(["journalctl", "--root", str(journal.root), "--output=cat", "--no-pager"],
                         capture_output=True, check=False).stdout
    return out.decode("utf-8", "replace")


def collect(subscription: JournalSubscription, count: int, into: list[JournalEntry]) -> None:
    def probe() -> bool:
        into.extend(subscription.read())
        return len(into) >= count
    wait_until(probe, timeout=10, what=f"{count} journal entries for {subscription.identifier}")


def test_every_monitor_reads_its_own_identifier_through_one_reader(journal: RealJournal) -> None:
    hub = JournalHub(journal.root)
    kubelet, systemd = hub.subscribe("kubelet"), hub.subscribe("systemd")
    kubelet.seek_end()
    assert kubelet.read() == [] and my_journals() == 0  # systemd's monitor has not said where it starts
    systemd.seek_end()
    try:
        assert kubelet.read() == [] and my_journals() == 1
        journal.send("PLEG is not healthy", identifier="kubelet")
        journal.send("Failed to start foo.service.", identifier="systemd")
        journal.send("unrelated", identifier="sshd")
        got_kubelet: list[JournalEntry] = []
        got_systemd: list[JournalEntry] = []
        collect(kubelet, 1, got_kubelet)
        collect(systemd, 1, got_systemd)
        assert my_journals() == 1
    finally:
        kubelet.close()
        assert my_journals() == 1  # the other monitor still reads
        systemd.close()
    assert my_journals() == 0 and my_journal_files() == 0
    assert [e.message for e in got_kubelet] == ["PLEG is not healthy"]
    assert [e.message for e in got_systemd] == ["Failed to start foo.service."]


def test_the_reader_starts_at_the_earliest_history_and_each_monitor_keeps_its_own_start(journal: RealJournal) -> None:
    journal.send("old kubelet line", identifier="kubelet")
    wait_until(lambda: "old kubelet line" in on_disk(journal), timeout=10, what="the old line on disk")
    hub = JournalHub(journal.root)
    replaying, from_now = hub.subscribe("kubelet"), hub.subscribe("kubelet")
    replaying.start_at(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
    from_now.seek_end()
    try:
        replayed: list[JournalEntry] = []
        collect(replaying, 1, replayed)
        assert from_now.read() == []  # history before its own start is not its
        journal.send("new kubelet line", identifier="kubelet")
        fresh: list[JournalEntry] = []
        collect(from_now, 1, fresh)
        collect(replaying, 2, replayed)
    finally:
        replaying.close()
        from_now.close()
    assert [e.message for e in replayed] == ["old kubelet line", "new kubelet line"]
    assert [e.message for e in fresh] == ["new kubelet line"]


def test_entries_waiting_for_a_monitor_make_its_descriptor_readable(journal: RealJournal) -> None:
    hub = JournalHub(journal.root)
    first, second = hub.subscribe("kubelet"), hub.subscribe("kubelet")
    first.seek_end()
    second.seek_end()
    try:
        first.read()
        journal.send("line", identifier="kubelet")
        got: list[JournalEntry] = []
        collect(first, 1, got)  # pumped by the first: the second's copy waits in its queue
        fd = second.fileno()
        assert fd is not None and fd != first.fileno()
        assert select.select([fd], [], [], 0)[0] == [fd]
        assert [e.message for e in second.read()] == ["line"]
        assert second.fileno() == first.fileno()
    finally:
        first.close()
        second.close()


def test_a_backlog_left_at_the_readers_bound_keeps_the_descriptor_readable(journal: RealJournal) -> None:
    hub = JournalHub(journal.root, max_entries=2)
    kubelet = hub.subscribe("kubelet")
    kubelet.start_at(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
    for i in range(3):
        journal.send(f"line {i}", identifier="kubelet")
    wait_until(lambda: "line 2" in on_disk(journal), timeout=10, what="three lines on disk")
    try:
        first = kubelet.read()
        fd = kubelet.fileno()
        assert fd is not None and select.select([fd], [], [], 0)[0] == [fd]  # no file change will say so
        rest = kubelet.read()
        assert kubelet.fileno() == hub.fileno()
    finally:
        kubelet.close()
    assert [e.message for e in first + rest] == ["line 0", "line 1", "line 2"]


@pytest.mark.parametrize("folders", [(), ("var/log/journal",), ("var/log/journal/0123abcd", "run/log/journal")],
                         ids=["no-folder", "empty-folder", "machine-folder-without-files"])
def test_a_host_without_a_journal_opens_no_reader(tmp_path: Path, folders: tuple[str, ...]) -> None:
    for folder in folders:
        (tmp_path / folder).mkdir(parents=True)
    hub = JournalHub(tmp_path)
    subscription = hub.subscribe("kubelet")
    subscription.seek_end()
    with pytest.raises(SourceAbsent, match="no journal"):
        subscription.read()
    assert my_journals() == 0 and subscription.fileno() is None
    subscription.close()
