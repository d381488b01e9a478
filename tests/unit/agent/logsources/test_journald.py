"""The journald source against a real journal written by this machine's systemd-journald (tests/real_journal.py),
and node-problem-detector's own journald monitor files (tests/testdata/agent/npd/, byte for byte as shipped by
NPD) run unchanged through the log monitor."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.checks.logmonitor import LogMonitor
from agent.host import HostRoot
from agent.logsources.journald import JournalEntry, JournalReader, parse_entry
from agent.model import EventReport, Status
from agent.npd.logmonitor_config import load
from tests.real_journal import RealJournal
from tests.waiting import wait_until

NPD = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "npd"


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[RealJournal]:
    real = RealJournal(tmp_path / "host", tmp_path).start()
    try:
        yield real
    finally:
        real.stop()


def collect(reader: JournalReader, count: int) -> list[JournalEntry]:
    got: list[JournalEntry] = []

    def probe() -> bool:
        got.extend(reader.read())
        return len(got) >= count

    wait_until(probe, timeout=10, what=f"{count} journal entries")
    return got


@pytest.mark.parametrize(("line", "message"), [
    (b'{"MESSAGE":"Started kubelet.service.","__REALTIME_TIMESTAMP":"1700000000000000","__CURSOR":"s=1"}',
     "Started kubelet.service."),
    (b'{"MESSAGE":[104,105,255],"__REALTIME_TIMESTAMP":"1700000000000000"}', "hi\ufffd"),  # not UTF-8
    (b'{"MESSAGE":null,"__REALTIME_TIMESTAMP":"1700000000000000"}', None),  # a field over journalctl's size limit
    (b'{"MESSAGE":"no time"}', None),
    (b"Failed to open journal", None),
    (b'{"MESSAGE":"x","__REALTIME_TIMESTAMP":"999999999999999999999999"}', None),  # past any date: OverflowError
], ids=["text", "bytes", "null", "no-timestamp", "not-json", "past-any-date"])
def test_journalctl_json_lines_are_parsed(line: bytes, message: str | None) -> None:
    entry = parse_entry(line)

    assert (entry.message if entry else None) == message


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


def test_a_journalctl_that_dies_is_an_error_and_its_restart_neither_loses_nor_repeats(journal: RealJournal) -> None:
    reader = JournalReader(journal.root, identifiers=("kubelet",), restart_after=0)
    reader.seek_end()
    try:
        reader.read()
        journal.send("one", identifier="kubelet")
        assert [e.message for e in collect(reader, 1)] == ["one"]
        assert reader._proc is not None
        reader._proc.kill()
        journal.send("two", identifier="kubelet")

        with pytest.raises(OSError, match="journalctl exited with -9"):
            wait_until(lambda: reader.read() and False, timeout=10, what="journalctl's exit to be noticed")
        assert [e.message for e in collect(reader, 1)] == ["two"]
    finally:
        reader.close()


def test_a_missing_journal_directory_is_reported_with_journalctls_words(tmp_path: Path) -> None:
    reader = JournalReader(tmp_path, directory=tmp_path / "no-such-dir")
    try:
        with pytest.raises(OSError, match=r"journalctl exited with 1: .*no-such-dir"):
            wait_until(lambda: reader.read() and False, timeout=10, what="journalctl's exit")
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
