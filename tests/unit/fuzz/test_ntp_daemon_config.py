"""Fuzz: whatever a node's time daemon files say and however its directories are laid out, the reader never raises,
never names the node itself as a server, and its work stays within its bounds (counted in system calls, not timed),
with the shipped bounds and with bounds small enough that every example can reach them."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.checks.ntp import split_server
from agent.host import HostRoot
from agent.sensors import config_files
from agent.sensors.loopback_host import inet_aton, reaches_this_node
from agent.sensors.ntp_daemon_servers import find_daemon_servers
from tests.unit.fuzz.strategies import FUZZ

# A tree is built on disk for every example (tens of files, some of 100 KiB): a hundredth of the shared example count
# keeps this test within its ~30 s.
TREES = settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 100))

DIRS = ["/etc", "/etc/chrony", "/etc/chrony/conf.d", "/etc/chrony/sources.d", "/etc/ntpsec", "/etc/ntp",
        "/run/chrony-dhcp", "/etc/systemd", "/etc/systemd/timesyncd.conf.d", "/usr/lib/systemd/timesyncd.conf.d", "/d"]
MAIN = ["/etc/chrony/chrony.conf", "/etc/chrony.conf", "/etc/ntpsec/ntp.conf", "/etc/ntp.conf",
        "/etc/systemd/timesyncd.conf", "/usr/lib/systemd/timesyncd.conf"]
names = st.one_of(st.sampled_from(["a.conf", "b.conf", "x.sources", "chrony.conf", "ntp.conf", "timesyncd.conf",
                                   ".hidden.conf", "d", "conf.d", "..", "."]),
                  st.text("abcd.*?[]-", min_size=1, max_size=6))
paths = st.one_of(st.sampled_from(MAIN + DIRS),
                  st.builds(lambda d, n: f"{d}/{n}", st.sampled_from(DIRS), names),
                  names, st.builds("/".join, st.lists(names, min_size=1, max_size=40)),
                  st.builds(lambda n, k: "/".join([n] * k), st.sampled_from(["a", ".", "..", "d"]),
                            st.integers(1, 2100)))  # around PATH_MAX
hosts = st.one_of(st.sampled_from(["127.0.0.1", "0x7f.1", "2130706433", "127.1", "0177.0.0.1", "::ffff:127.0.0.1",
                                   "localhost.", "ntp.localhost", "0", "::", "::1%lo", "128.0.0.1", "0x80.1",
                                   "ntp.example.org", "2001:db8::1", "fe80::1%eth0", "bad!host", "[::1]"]),
                  st.text("0123456789abcdefx.:%", min_size=1, max_size=20))
TARGETS = DIRS + [f"{d}/*.conf" for d in DIRS] + MAIN
words = st.one_of(paths, st.sampled_from(TARGETS), hosts,
                  st.sampled_from(["iburst", "noselect", "port", "123", "0", "-4", "-6", "#", "="]))
directives = st.sampled_from(["server", "pool", "peer", "include", "confdir", "sourcedir", "includefile", "NTP=",
                              "FallbackNTP=", "[Time]", "refclock", "#", "!"])
includes = st.builds(lambda d, ws: " ".join([d, *ws]),
                     st.sampled_from(["include", "confdir", "sourcedir", "includefile"]),
                     st.lists(st.sampled_from(TARGETS), min_size=1, max_size=8))
lines = st.one_of(
    includes, includes,  # twice as likely: following includes is where the work is
    st.builds(lambda d, ws: " ".join([d, *ws]), directives, st.lists(words, max_size=6)),
    st.builds(lambda d, w, k: " ".join([d] + [w] * k), directives, st.sampled_from(["d", "*.conf", "/d", "a.conf"]),
              st.integers(1, 40_000)),  # one line past the byte bound
    st.text(max_size=40))
texts = st.one_of(st.lists(lines, min_size=1, max_size=12).map("\n".join),
                  st.builds(lambda d, w, k: f"{d} {w}\n" * k, directives, st.sampled_from(["d/*.conf", "a.conf", "d"]),
                            st.integers(1, 8000)))  # the same line again and again
entries = st.tuples(st.one_of(st.sampled_from(MAIN), paths),
                    st.sampled_from(["file", "file", "file", "dir", "link", "fifo", "many"]), texts, paths)
BOUNDS = ("MAX_FOLLOWED", "MAX_LOOKUP_STEPS", "MAX_ENTRIES_LISTED", "MAX_FILES", "MAX_DIR_ENTRIES")
tight_bounds = st.fixed_dictionaries({"MAX_FOLLOWED": st.integers(0, 12), "MAX_LOOKUP_STEPS": st.integers(0, 80),
                                      "MAX_ENTRIES_LISTED": st.integers(0, 40), "MAX_FILES": st.integers(0, 6),
                                      "MAX_DIR_ENTRIES": st.integers(0, 12)})


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="fuzz-ntp-") as d:
        yield Path(d)


def build(root: Path, host_path: str, kind: str, text: str, target: str) -> None:
    """One entry of a host tree; whatever the OS refuses (a name too long, a parent that is a file) is left out."""
    path = root / host_path.lstrip("/")
    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "file":  # O_NONBLOCK: a FIFO an earlier entry made there must not wait for a reader
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK)
            with os.fdopen(fd, "wb") as f:
                f.write(text.encode(errors="surrogateescape"))
        elif kind == "dir":
            path.mkdir()
        elif kind == "link":
            path.symlink_to(target)
        elif kind == "fifo":
            os.mkfifo(path)
        else:  # a directory of many entries
            path.mkdir()
            for i in range(20):
                (path / f"{i}.conf").write_text(text[:100], errors="surrogateescape")


class Work:
    """The system calls the reader makes to find paths and list directories, counted while it runs."""

    def __init__(self) -> None:
        self.lstats = self.listed = 0
        self._lstat, self._scandir = os.lstat, os.scandir

    def lstat(self, path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        self.lstats += 1
        return self._lstat(path, *args, **kwargs)

    def scandir(self, path: Any) -> Iterator[os.DirEntry[str]]:
        work = self

        class Counted:
            def __init__(self) -> None:
                self._it = work._scandir(path)

            def __enter__(self) -> Counted:
                return self

            def __exit__(self, *exc: object) -> None:
                self._it.close()

            def __iter__(self) -> Iterator[os.DirEntry[str]]:
                for entry in self._it:
                    work.listed += 1
                    yield entry

        return Counted()  # type: ignore[return-value]


@TREES
@given(main=st.sampled_from(MAIN), text=texts, tree=st.lists(entries, max_size=14),
       tight=st.one_of(st.none(), tight_bounds))
def test_the_reader_never_raises_and_its_work_stays_within_its_bounds(
        scratch: Path, main: str, text: str, tree: list[tuple[str, str, str, str]],
        tight: dict[str, int] | None) -> None:
    root = Path(tempfile.mkdtemp(dir=scratch))
    try:
        for entry in [(main, "file", text, ""), *tree]:  # a daemon's main file first, so most trees are read
            build(root, *entry)
        bounds = tight or {name: getattr(config_files, name) for name in BOUNDS}
        work = Work()
        with contextlib.ExitStack() as patches:
            for name, value in bounds.items():
                patches.enter_context(mock.patch.object(config_files, name, value))
            patches.enter_context(mock.patch.object(os, "lstat", work.lstat))
            patches.enter_context(mock.patch.object(os, "scandir", work.scandir))
            found = find_daemon_servers(HostRoot(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    assert work.lstats <= bounds["MAX_LOOKUP_STEPS"]
    assert work.listed <= bounds["MAX_ENTRIES_LISTED"] + 1  # the entry that went over is counted, then refused
    assert len(found.read) <= bounds["MAX_FILES"]
    assert not (found.servers and found.refused)
    for server in found.servers:
        host, _ = split_server(server)  # the check reads every server it is given
        assert not reaches_this_node(host.strip("[]"))


@settings(FUZZ, max_examples=max(1, FUZZ.max_examples // 5))  # a pure function: 2,000 examples in ~10 s
@given(text=st.one_of(st.text("0123456789abcdefxX.", max_size=24),
                      st.builds(".".join, st.lists(st.one_of(
                          st.integers(0, 2**33).map(str), st.integers(0, 2**33).map(hex),
                          st.integers(0, 2**33).map(lambda n: f"0{n:o}")), min_size=1, max_size=5))))
def test_ipv4_is_read_as_the_c_library_reads_it(text: str) -> None:
    try:
        expected = socket.inet_aton(text)
    except OSError:
        assert inet_aton(text) is None
    else:
        assert (address := inet_aton(text)) is not None and address.packed == expected
