from pathlib import Path

import pytest

from agent.host import HostRoot


@pytest.mark.parametrize(("written", "read"), [
    (b"btime 1700000000\n", "btime 1700000000\n"),
    (b"a\r\nb\rc\n", "a\nb\nc\n"),
    (b"x" * 200_000, "x" * 200_000),
], ids=["plain", "newlines-as-read-text-gives-them", "longer-than-one-read"])
def test_read_text_gives_what_path_read_text_gives(tmp_path: Path, written: bytes, read: str) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/file").write_bytes(written)

    assert HostRoot(tmp_path).read_text("/proc/file") == read == (tmp_path / "proc/file").read_text()


def test_read_text_raises_what_path_read_text_raises(tmp_path: Path) -> None:
    (tmp_path / "bad").write_bytes(b"\xff\xfe")
    with pytest.raises(FileNotFoundError):
        HostRoot(tmp_path).read_text("/missing")
    with pytest.raises(UnicodeDecodeError):
        HostRoot(tmp_path).read_text("/bad")
    with pytest.raises(IsADirectoryError):
        HostRoot(tmp_path).read_text("/")


def test_the_root_slash_reads_the_path_as_given() -> None:
    assert HostRoot().read_text("/proc/self/comm") == Path("/proc/self/comm").read_text()
