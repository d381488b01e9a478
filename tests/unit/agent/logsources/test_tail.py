"""`Tail`: whole lines appended to a file or FIFO since the last call, bounded per call (`behind`), across
rotation, truncation, a late-appearing file, `seek_end` before and after opening, and a line that never ends."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.logsources.tail import _MAX_PENDING, Tail


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


def test_a_missing_file_raises_file_not_found_and_is_picked_up_once_it_appears(tmp_path: Path) -> None:
    log = tmp_path / "late.log"
    tail = Tail(log, max_bytes=1024)
    with pytest.raises(FileNotFoundError):
        tail.read_lines()
    log.write_bytes(b"first\nsecond\n")
    assert tail.read_lines() == [b"first", b"second"]
    tail.close()


def test_a_partial_line_is_held_until_its_newline_arrives(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"one\ntw")
    tail = Tail(log, max_bytes=1024)
    assert tail.read_lines() == [b"one"]
    assert tail.read_lines() == []
    _append(log, b"o\n")
    assert tail.read_lines() == [b"two"]
    tail.close()


def test_seek_end_before_the_first_read_skips_the_history_when_the_file_opens(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"old\n")
    tail = Tail(log, max_bytes=1024)
    tail.seek_end()
    assert tail.read_lines() == []
    _append(log, b"new\n")
    assert tail.read_lines() == [b"new"]
    tail.close()


def test_seek_end_on_an_open_file_drops_the_pending_partial_line_and_the_unread_rest(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"a\npart")
    tail = Tail(log, max_bytes=1024)
    assert tail.read_lines() == [b"a"]
    _append(log, b"ial\nunread\n")
    tail.seek_end()
    _append(log, b"fresh\n")
    assert tail.read_lines() == [b"fresh"]
    tail.close()


def test_a_read_stops_at_max_bytes_with_behind_true_and_the_next_read_continues(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"".join(b"line%02d\n" % i for i in range(10)))  # 7 bytes each
    tail = Tail(log, max_bytes=21)
    assert tail.read_lines() == [b"line00", b"line01", b"line02"]
    assert tail.behind is True
    rest: list[bytes] = []
    for _ in range(10):
        rest += tail.read_lines()
        if not tail.behind:
            break
    assert rest == [b"line%02d" % i for i in range(3, 10)]
    assert tail.behind is False
    tail.close()


def test_a_rotated_file_is_drained_of_its_tail_then_the_new_file_is_read_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"a\n")
    tail = Tail(log, max_bytes=1024)
    assert tail.read_lines() == [b"a"]
    _append(log, b"b\nno newline")
    log.rename(tmp_path / "a.log.1")
    log.write_bytes(b"c\n")
    assert tail.read_lines() == [b"b", b"no newline", b"c"]
    assert tail.read_lines() == []
    tail.close()


def test_a_file_removed_without_replacement_is_drained_then_raises_until_it_returns(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"a\n")
    tail = Tail(log, max_bytes=1024)
    tail.read_lines()
    _append(log, b"last\n")
    log.unlink()
    assert tail.read_lines() == [b"last"]
    with pytest.raises(FileNotFoundError):
        tail.read_lines()
    log.write_bytes(b"back\n")
    assert tail.read_lines() == [b"back"]
    tail.close()


def test_a_file_truncated_in_place_is_followed_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_bytes(b"a long first line\n")
    tail = Tail(log, max_bytes=1024)
    tail.read_lines()
    with log.open("r+b") as f:
        f.truncate(0)
    _append(log, b"x\n")
    assert tail.read_lines() == [b"x"]
    tail.close()


def test_a_line_longer_than_the_pending_cap_is_cut_and_returned(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    runaway = b"x" * (_MAX_PENDING + 10)
    log.write_bytes(runaway)
    tail = Tail(log, max_bytes=1 << 20)
    assert tail.read_lines() == [runaway]
    _append(log, b"tail\n")
    assert tail.read_lines() == [b"tail"]
    tail.close()


def test_a_fifo_is_read_without_blocking_and_keeps_working_across_writers(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    tail = Tail(fifo, max_bytes=1024)
    assert tail.read_lines() == []  # no writer yet: nothing, and no blocking
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(writer, b"one\ntwo\npar")
    assert tail.read_lines() == [b"one", b"two"]
    os.write(writer, b"t\n")
    os.close(writer)
    assert tail.read_lines() == [b"part"]
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(writer, b"again\n")
    assert tail.read_lines() == [b"again"]
    os.close(writer)
    tail.close()


def test_seek_end_on_an_open_fifo_discards_what_is_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    tail = Tail(fifo, max_bytes=1024)
    tail.read_lines()
    writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.write(writer, b"old\n")
    tail.seek_end()
    os.write(writer, b"new\n")
    assert tail.read_lines() == [b"new"]
    os.close(writer)
    tail.close()
