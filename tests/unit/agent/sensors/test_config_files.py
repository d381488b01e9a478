"""ConfigFiles: each bound on work stops the read naming where and which bound; each path and directory is looked at
once per read, however often named. (The bounds on bytes are tested through the NTP reader that uses them.)"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.sensors.config_files import (
    MAX_ENTRIES_LISTED,
    MAX_FOLLOWED,
    MAX_LOOKUP_STEPS,
    MAX_SYMLINKS,
    PATH_MAX,
    ConfigFiles,
    OverBudget,
)


@pytest.fixture
def listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The directories os.scandir is asked to list, in order."""
    asked: list[str] = []
    scandir = os.scandir

    def counting(path: os.PathLike[str]) -> object:
        asked.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    yield asked


def tree(root: Path, directory: str, entries: int) -> None:
    (root / directory).mkdir(parents=True)
    for i in range(entries):
        (root / directory / f"{i:04}.conf").write_text("")


def test_following_more_than_the_bound_stops_the_read_naming_the_line(tmp_path: Path) -> None:
    files = ConfigFiles(HostRoot(tmp_path))
    files.follow("/etc/chrony.conf:3", MAX_FOLLOWED)
    with pytest.raises(OverBudget) as refused:
        files.follow("/etc/chrony.conf:4")
    assert str(refused.value) == (f"/etc/chrony.conf:4: more than {MAX_FOLLOWED} includes and directories to follow "
                                  "in one read")


def test_a_directory_named_many_times_is_listed_once(tmp_path: Path, listings: list[str]) -> None:
    tree(tmp_path, "etc/d", 3)
    (tmp_path / "etc/link").symlink_to("d")
    files = ConfigFiles(HostRoot(tmp_path))
    for _ in range(100):
        assert files.in_dirs(["/etc/d", "/etc/link", "/etc/d/../d"], ".conf") == [
            "/etc/d/0000.conf", "/etc/d/0001.conf", "/etc/d/0002.conf"]
    assert listings == [str(tmp_path / "etc/d")]


def test_a_file_asked_for_again_is_not_looked_up_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = ConfigFiles(HostRoot(tmp_path))
    looked: list[str] = []
    resolve = files._resolve

    def counted(host_path: str) -> Path:
        looked.append(host_path)
        return resolve(host_path)

    monkeypatch.setattr(files, "_resolve", counted)
    for _ in range(100):
        assert files.lines("/etc/missing.conf") is None
    assert looked == ["/etc/missing.conf"]


def test_listing_more_entries_than_the_bound_stops_the_read(tmp_path: Path) -> None:
    dirs = MAX_ENTRIES_LISTED // 1000 + 1
    for d in range(dirs):
        tree(tmp_path, f"etc/d{d}", 1000)
    files = ConfigFiles(HostRoot(tmp_path))
    files.follow("/etc/chrony.conf:1", dirs)
    with pytest.raises(OverBudget) as refused:
        files.in_dirs([f"/etc/d{d}" for d in range(dirs)], ".conf")
    assert str(refused.value) == (f"/etc/chrony.conf:1: more than {MAX_ENTRIES_LISTED} directory entries to list in "
                                  "one read")


def test_looking_up_more_path_components_than_the_bound_stops_the_read(tmp_path: Path) -> None:
    depth = 100
    (tmp_path / "/".join(["a"] * depth)).mkdir(parents=True)
    files = ConfigFiles(HostRoot(tmp_path))
    deep = "/" + "/".join(["a"] * depth)
    with pytest.raises(OverBudget) as refused:
        for i in range(MAX_LOOKUP_STEPS):  # each a missing file under `depth` directories: depth + 1 steps
            assert files.lines(f"{deep}/{i}.conf") is None
    assert i == MAX_LOOKUP_STEPS // (depth + 1)
    assert str(refused.value) == (f"{deep}/{i}.conf: more than {MAX_LOOKUP_STEPS} path lookup steps (components and "
                                  "symlinks) in one read")


def test_a_path_the_os_would_find_too_long_is_noted_and_not_looked_up(tmp_path: Path) -> None:
    files = ConfigFiles(HostRoot(tmp_path))
    long = "/etc/" + "x" * PATH_MAX
    assert files.lines(long) is None
    assert files.notes == [f"{long}: File name too long"]


def test_a_chain_of_symlinks_is_followed_to_the_os_s_bound_then_noted(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/target.conf").write_text("server ntp-a.internal\n")
    for i in range(MAX_SYMLINKS + 1):  # link i -> link i+1 -> ... -> target
        (tmp_path / f"etc/l{i}").symlink_to(f"l{i + 1}" if i < MAX_SYMLINKS else "target.conf")
    files = ConfigFiles(HostRoot(tmp_path))
    assert files.lines(f"/etc/l{1}") == ["server ntp-a.internal"]  # MAX_SYMLINKS hops
    assert files.lines("/etc/l0") is None  # one more
    assert files.notes == ["/etc/l0: Too many levels of symbolic links"]
