"""The text log file source: tailing a file across rotation, truncation and disappearance."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.logsources.filelog import FileLogReader


def test_file_log_reader_tails_lines_and_holds_a_partial_line(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("Jan  1 00:00:01 node kernel: one\n")
    reader = FileLogReader(log)
    assert reader.read() == ["Jan  1 00:00:01 node kernel: one"]

    with log.open("a") as f:
        f.write("two\nthr")
    assert reader.read() == ["two"]
    with log.open("a") as f:
        f.write("ee\n")
    assert reader.read() == ["three"]


def test_file_log_reader_follows_rename_rotation_without_losing_the_old_files_tail(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("a\n")
    reader = FileLogReader(log)
    assert reader.read() == ["a"]

    with log.open("a") as f:
        f.write("b\nunfinished")  # written just before logrotate renamed the file
    log.rename(tmp_path / "kern.log.1")
    log.write_text("c\n")

    assert reader.read() == ["b", "unfinished", "c"]
    assert reader.read() == []


def test_file_log_reader_restarts_after_copytruncate(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("first line that is long\n")
    reader = FileLogReader(log)
    reader.read()

    log.write_text("")
    assert reader.read() == []
    with log.open("a") as f:
        f.write("after truncation\n")
    assert reader.read() == ["after truncation"]


def test_file_log_reader_drains_a_vanished_file_once_then_raises(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_text("a\n")
    reader = FileLogReader(log)
    reader.read()
    with log.open("a") as f:
        f.write("last words\n")
    log.unlink()

    assert reader.read() == ["last words"]
    with pytest.raises(FileNotFoundError):
        reader.read()


def test_file_log_reader_decodes_invalid_utf8_with_replacement(tmp_path: Path) -> None:
    log = tmp_path / "kern.log"
    log.write_bytes(b"ok \xff\n")
    assert FileLogReader(log).read() == ["ok \ufffd"]
