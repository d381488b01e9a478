"""The journald source (sd-journal in the agent's process) against a real journal written by this machine's
systemd-journald (tests/real_journal.py), and node-problem-detector's own journald monitor files
(tests/testdata/agent/npd/, byte for byte as shipped by NPD) run unchanged through the log monitor."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import errno
import json
import select
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.checks.logmonitor import LogMonitor
from agent.host import HostRoot
from agent.logsources import sdjournal
from agent.logsources.journald import MAX_FIELD, JournalEntry, JournalReader
from agent.model import EventReport, Status
from agent.npd.logmonitor_config import load
from tests.real_journal import RealJournal
from tests.waiting import wait_until

NPD = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "npd"


@contextlib.contextmanager
def kubelet_reader(journal: RealJournal, **options: Any) -> Iterator[JournalReader]:
    """A reader of the kubelet's entries from the journal's end (what was there read and dropped); closed after."""
    reader = JournalReader(journal.root, identifiers=("kubelet",), **options)
    reader.seek_end()
    try:
        reader.read()
        yield reader
    finally:
        reader.close()


def collect(reader: JournalReader, count: int) -> list[JournalEntry]:
    got: list[JournalEntry] = []

    def probe() -> bool:
        got.extend(reader.read())
        return len(got) >= count

    wait_until(probe, timeout=10, what=f"{count} journal entries")
    return got


def test_entries_of_the_wanted_identifiers_are_read_as_they_are_logged(journal: RealJournal) -> None:
    reader = JournalReader(journal.root, identifiers=("kubelet",))
    reader.seek_end()
    try:
        assert reader.read() == []
        journal.send("E0501 12:00:00.000000 1234 kuberuntime_manager.go:1] OCI runtime create failed",
                     identifier="kubelet", _SYSTEMD_UNIT="kubelet.service")
        journal.send("Started Kubernetes kubelet.", identifier="systemd")

        (entry,) = collect(reader, 1)
        assert reader.fileno() is not None
    finally:
        reader.close()

    assert entry.identifier == "kubelet" and entry.message.endswith("OCI runtime create failed")
    assert abs(entry.at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)


def test_history_is_skipped_from_the_end_or_replayed_from_a_start_time(journal: RealJournal) -> None:
    journal.send("before the agent", identifier="kubelet")
    wait_until(lambda: "before the agent" in _all(journal), timeout=10, what="the first entry on disk")
    from_end = JournalReader(journal.root, identifiers=("kubelet",))
    from_end.seek_end()
    replay = JournalReader(journal.root, identifiers=("kubelet",))
    replay.start_at(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
    try:
        assert [e.message for e in collect(replay, 1)] == ["before the agent"]
        assert from_end.read() == []
        journal.send("after", identifier="kubelet")
        assert [e.message for e in collect(from_end, 1)] == ["after"]
    finally:
        from_end.close()
        replay.close()


def test_an_error_while_reading_is_raised_and_the_reopening_neither_loses_nor_repeats(
        journal: RealJournal, monkeypatch: pytest.MonkeyPatch) -> None:
    with kubelet_reader(journal, restart_after=0) as reader:
        journal.send("one", identifier="kubelet")
        assert [e.message for e in collect(reader, 1)] == ["one"]
        real_next, failures = sdjournal.Journal.next, [OSError(errno.EIO, "sd_journal_next: Input/output error")]

        def failing_next(self: sdjournal.Journal) -> bool:
            if failures:
                raise failures.pop()
            return real_next(self)

        monkeypatch.setattr(sdjournal.Journal, "next", failing_next)
        journal.send("two", identifier="kubelet")
        journal.send("three", identifier="kubelet")

        with pytest.raises(OSError, match=r"reading the journal in .* failed: sd_journal_next: Input/output error"):
            reader.read()
        assert reader.fileno() is None
        assert [e.message for e in collect(reader, 2)] == ["two", "three"]


def test_rotated_files_are_followed_without_losing_an_entry(journal: RealJournal) -> None:
    with kubelet_reader(journal) as reader:
        journal.send("before the rotation", identifier="kubelet")
        got = collect(reader, 1)
        journal.rotate()
        journal.send("after the rotation", identifier="kubelet")
        fd = reader.fileno()
        assert fd is not None
        wait_until(lambda: select.select([fd], [], [], 0)[0], timeout=10, what="the descriptor to announce it")
        got += collect(reader, 1)

    assert [e.message for e in got] == ["before the rotation", "after the rotation"]


def test_the_descriptor_wakes_for_new_entries_and_is_quiet_once_they_are_read(journal: RealJournal) -> None:
    with kubelet_reader(journal) as reader:
        fd = reader.fileno()
        assert fd is not None
        journal.send("wake up", identifier="kubelet")
        wait_until(lambda: select.select([fd], [], [], 0)[0], timeout=10, what="the descriptor to be readable")
        assert [e.message for e in collect(reader, 1)] == ["wake up"]
        assert select.select([fd], [], [], 0)[0] == []


def test_fields_that_are_not_utf8_or_too_long_are_read_replaced_and_cut(journal: RealJournal) -> None:
    with kubelet_reader(journal) as reader:
        journal.send(b"hi\xff", identifier="kubelet")
        journal.send("x" * (MAX_FIELD + 1000), identifier="kubelet")
        short, long = collect(reader, 2)

    assert short.message == "hi\ufffd"
    assert long.message == "x" * MAX_FIELD


def test_a_backlog_is_read_at_most_max_entries_per_call(journal: RealJournal) -> None:
    reader = JournalReader(journal.root, identifiers=("kubelet",), max_entries=2)
    reader.start_at(dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1))
    for i in range(5):
        journal.send(f"line {i}", identifier="kubelet")
    wait_until(lambda: "line 4" in _all(journal), timeout=10, what="five entries on disk")
    try:
        calls = [reader.read() for _ in range(3)]
        behind = reader.behind
        rest = reader.read()
    finally:
        reader.close()

    assert [len(c) for c in calls] == [2, 2, 1] and not behind and rest == []


def test_a_missing_journal_directory_is_an_error_that_names_it(tmp_path: Path) -> None:
    reader = JournalReader(tmp_path, directory=tmp_path / "no-such-dir")
    try:
        with pytest.raises(OSError, match=r"cannot open the journal in .*no-such-dir: No such file or directory"):
            reader.read()
        assert reader.fileno() is None
    finally:
        reader.close()


def test_a_libsystemd_that_does_not_load_is_an_error_that_names_each_library_tried(journal: RealJournal) -> None:
    reader = JournalReader(journal.root, libraries=(str(journal.root / "libsystemd.so.0"), "libnosuch.so.0"))
    try:
        with pytest.raises(OSError, match=r"cannot load libsystemd.so.0 to read the journal: .*libsystemd.so.0.*"
                                          r"libnosuch.so.0"):
            reader.read()
    finally:
        reader.close()


def test_the_hosts_own_libsystemd_is_tried_before_the_images(tmp_path: Path) -> None:
    multiarch = sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu"
    lib = tmp_path / "usr" / "lib" / multiarch
    lib.mkdir(parents=True)
    (lib / "libsystemd.so.0.35.0").write_bytes(b"")
    (lib / "libsystemd.so.0").symlink_to(f"/usr/lib/{multiarch}/libsystemd.so.0.35.0")  # absolute: the host's

    assert sdjournal.candidates(tmp_path) == (str(lib / "libsystemd.so.0.35.0"), "libsystemd.so.0")


def test_a_host_root_without_a_libsystemd_is_read_with_the_images(journal: RealJournal) -> None:
    reader = JournalReader(journal.root)  # the fixture's root holds no library: this machine's plays the image's
    reader.seek_end()
    try:
        reader.read()
        assert reader.library == "libsystemd.so.0"
    finally:
        reader.close()


def test_npds_systemd_monitor_runs_unchanged_on_a_real_journal(journal: RealJournal) -> None:
    monitor = LogMonitor(load(NPD / "systemd-monitor.json"), host=HostRoot(journal.root))
    events: list[EventReport] = []
    try:
        asyncio.run(monitor.observe(dt.datetime.now(dt.UTC)))
        journal.send("Started Kubernetes kubelet.", identifier="systemd")
        journal.send("Starting containerd.service - containerd container runtime...", identifier="systemd")
        journal.send("Stopping kubelet.service - kubelet: The Kubernetes Node Agent...", identifier="systemd")
        journal.send("Started Kubernetes kubelet.", identifier="kubelet")  # not systemd's line: another source
        journal.send("Starting docker.service...", identifier="systemd")

        def probe() -> bool:
            events.extend(asyncio.run(monitor.observe(dt.datetime.now(dt.UTC))).events)
            return len(events) >= 3

        wait_until(probe, timeout=10, what="three events from systemd-monitor.json")
    finally:
        asyncio.run(monitor.close())

    assert [(e.reason, e.message) for e in events] == [
        ("KubeletStart", "Started Kubernetes kubelet."),
        ("ContainerdStart", "Starting containerd.service - containerd container runtime..."),
        ("DockerStart", "Starting docker.service..."),
    ]


def test_npds_docker_monitor_sets_its_condition_from_the_journal(journal: RealJournal) -> None:
    monitor = LogMonitor(load(NPD / "docker-monitor.json"), host=HostRoot(journal.root))
    try:
        asyncio.run(monitor.observe(dt.datetime.now(dt.UTC)))
        journal.send('Handler for GET /containers/json returned error: readlink /var/lib/docker/overlay2/l: invalid '
                     'argument', identifier="dockerd")

        found = wait_until(lambda: asyncio.run(monitor.observe(dt.datetime.now(dt.UTC))).conditions, timeout=10,
                           what="CorruptDockerOverlay2")
    finally:
        asyncio.run(monitor.close())

    assert [(c.type, c.status, c.reason) for c in found] == [
        ("CorruptDockerOverlay2", Status.TRUE, "CorruptDockerOverlay2")]


def _all(journal: RealJournal) -> str:
    import subprocess  # noqa: PLC0415 - only this helper shells out

    out = subprocess.run(["journalctl", "--root", str(journal.root), "--output=json", "--no-pager"],
                         capture_output=True, check=False).stdout
    return " ".join(json.loads(line).get("MESSAGE", "") or "" for line in out.splitlines() if line.strip())
