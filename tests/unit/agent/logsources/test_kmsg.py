"""The kernel log source: the /dev/kmsg record format, and reading regular files, FIFOs and the real device."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.logsources.kmsg import KmsgReader, KmsgRecord, parse_kmsg

TESTDATA = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "logmonitor"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        pytest.param("6,1,0,-;Linux version 6.1.0", KmsgRecord(6, 0, 1, 0, "-", "Linux version 6.1.0"), id="plain"),
        pytest.param("3,17,123456789,-;EXT4-fs error (device sda1): x\n",
                     KmsgRecord(3, 0, 17, 123456789, "-", "EXT4-fs error (device sda1): x"), id="trailing-newline"),
        pytest.param("4,2,1500,-,caller=T1;ACPI: ok", KmsgRecord(4, 0, 2, 1500, "-", "ACPI: ok"),
                     id="extra-header-fields"),
        pytest.param("12,4,2500,c;from user space", KmsgRecord(4, 1, 4, 2500, "c", "from user space"),
                     id="facility-user-and-cont-flag"),
        pytest.param("6,5,0,-;a;b", KmsgRecord(6, 0, 5, 0, "-", "a;b"), id="semicolon-in-message"),
        pytest.param("6,5,0,-;", KmsgRecord(6, 0, 5, 0, "-", ""), id="empty-message"),
        pytest.param(r"6,1,0,-;path \x5cx41 tab\x09end", KmsgRecord(6, 0, 1, 0, "-", "path \\x41 tab\tend"),
                     id="escapes-backslash-and-tab"),
        pytest.param(r"6,1,0,-;caf\xc3\xa9", KmsgRecord(6, 0, 1, 0, "-", "café"), id="escaped-utf8"),
        pytest.param(r"6,1,0,-;bad \xff byte", KmsgRecord(6, 0, 1, 0, "-", "bad \ufffd byte"), id="escaped-invalid"),
        pytest.param(" SUBSYSTEM=scsi", None, id="continuation"),
        pytest.param(" DEVICE=+scsi:0:0:0:0", None, id="continuation-device"),
        pytest.param("", None, id="empty"),
        pytest.param("hello world", None, id="no-header"),
        pytest.param("6,1,0;message", None, id="too-few-fields"),
        pytest.param("x,1,0,-;message", None, id="priority-not-a-number"),
        pytest.param("-6,1,0,-;message", None, id="negative-priority"),
        pytest.param("6, 1,0,-;message", None, id="space-in-number"),
        pytest.param("6,1,0,-", None, id="no-semicolon"),
    ],
)
def test_parse_kmsg_reads_records_and_rejects_garbage(line: str, expected: KmsgRecord | None) -> None:
    assert parse_kmsg(line) == expected


def test_kmsg_reader_reads_a_sample_file_skipping_dictionary_and_garbage_lines(tmp_path: Path) -> None:
    reader = KmsgReader(TESTDATA / "kmsg-sample.txt")

    records = reader.read()

    assert [(r.seq, r.message) for r in records] == [
        (1, "Linux version 5.15.0-91-generic (buildd@lcy02-amd64-045) #101-Ubuntu SMP"),
        (2, "ACPI: \\_SB_.PCI0: _OSC failed"),
        (3, "sd 0:0:0:0: [sda] tag#0 été café"),
        (4, "user space wrote this"),
    ]
    assert reader.read() == []


def test_kmsg_reader_returns_only_appended_records_and_holds_a_partial_line(tmp_path: Path) -> None:
    log = tmp_path / "kmsg"
    log.write_text("6,1,0,-;first\n")
    reader = KmsgReader(log)
    assert [r.message for r in reader.read()] == ["first"]

    with log.open("a") as f:
        f.write("6,2,1,-;second\n6,3,2,-;thi")
    assert [r.message for r in reader.read()] == ["second"]

    with log.open("a") as f:
        f.write("rd\n")
    assert [r.message for r in reader.read()] == ["third"]
    assert reader.read() == []


def test_kmsg_reader_starts_over_when_the_file_is_truncated_or_replaced(tmp_path: Path) -> None:
    log = tmp_path / "kmsg"
    log.write_text("6,1,0,-;one\n6,2,0,-;two\n")
    reader = KmsgReader(log)
    reader.read()

    log.write_text("6,3,0,-;new\n")  # shorter than what we read: truncated in place
    assert [r.message for r in reader.read()] == ["new"]

    replacement = tmp_path / "kmsg.new"
    replacement.write_text("6,4,0,-;replaced one\n6,5,0,-;replaced two\n")
    replacement.replace(log)
    assert [r.message for r in reader.read()] == ["replaced one", "replaced two"]


def test_kmsg_reader_seek_end_skips_the_history(tmp_path: Path) -> None:
    log = tmp_path / "kmsg"
    log.write_text("6,1,0,-;old\n")
    reader = KmsgReader(log)
    reader.seek_end()
    assert reader.read() == []

    with log.open("a") as f:
        f.write("6,2,0,-;new\n")
    assert [r.message for r in reader.read()] == ["new"]


def test_a_missing_file_raises_on_read_and_is_picked_up_once_it_exists(tmp_path: Path) -> None:
    log = tmp_path / "kmsg"
    reader = KmsgReader(log)
    with pytest.raises(FileNotFoundError):
        reader.read()

    log.write_text("6,1,0,-;hello\n")
    assert [r.message for r in reader.read()] == ["hello"]


def test_kmsg_reader_reads_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "kmsg"
    os.mkfifo(fifo)
    reader = KmsgReader(fifo)
    assert reader.read() == []  # no writer yet: nothing, and no block

    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.write(writer, b"6,1,0,-;one\n SUBSYSTEM=x\n6,2,0,-;tw")
        assert [r.message for r in reader.read()] == ["one"]
        assert reader.read() == []
        os.write(writer, b"o\n")
        assert [r.message for r in reader.read()] == ["two"]
    finally:
        os.close(writer)
        reader.close()


def test_kmsg_reader_bounds_one_read_and_reports_that_it_is_behind(tmp_path: Path) -> None:
    log = tmp_path / "kmsg"
    log.write_text("".join(f"6,{n},0,-;line {n:04d}\n" for n in range(100)))
    reader = KmsgReader(log, max_bytes=200)

    first = reader.read()
    assert 0 < len(first) < 100
    assert reader.behind
    rest: list[KmsgRecord] = []
    while reader.behind:
        rest += reader.read()
    assert [r.seq for r in first + rest] == list(range(100))


def test_kmsg_reader_reads_a_character_device_until_eagain() -> None:
    reader = KmsgReader(Path("/dev/null"))  # a character device whose read() returns nothing
    assert reader.read() == []
    reader.close()


def test_kmsg_reader_reads_the_real_kernel_log_one_record_per_read() -> None:
    # Fails rather than skips: the agent reads this device on every node, so the tests need it too.
    assert os.access("/dev/kmsg", os.R_OK), "/dev/kmsg is not readable: run the tests as root or with CAP_SYSLOG"
    reader = KmsgReader(Path("/dev/kmsg"))
    try:
        records = reader.read()
        while reader.behind:
            records += reader.read()
        assert records, "the kernel ring buffer is never empty after boot"
        seqs = [r.seq for r in records]
        assert seqs == sorted(seqs)
        assert all(r.facility >= 0 and 0 <= r.priority <= 7 for r in records)

        reader.seek_end()
        assert reader.read() == []
    finally:
        reader.close()


def test_the_kmsg_device_offers_its_descriptor_to_wait_on_and_a_file_does_not(tmp_path: Path) -> None:
    device = KmsgReader(Path("/dev/kmsg"))
    fixture = tmp_path / "kmsg"
    fixture.write_text("6,1,100,-;hello\n")
    tail = KmsgReader(fixture)
    try:
        device.seek_end()
        device.read()
        tail.read()

        assert device.fileno() is not None
        assert tail.fileno() is None
    finally:
        device.close()
        tail.close()
