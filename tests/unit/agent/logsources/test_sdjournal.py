"""`sdjournal`: which libsystemd files are tried (the host's below its root, symlinks followed inside that root, then
the image's), the error naming every library that failed to load, the errno check on each call, and a `Journal`
opened on a folder with no journal files (this machine's own libsystemd) reading nothing and refusing use once
closed. Reading real entries is covered by test_journald.py."""

from __future__ import annotations

import errno
import os
import re
import sysconfig
from pathlib import Path

import pytest

from agent.logsources import sdjournal


def _multiarch() -> str:
    return sysconfig.get_config_var("MULTIARCH") or f"{os.uname().machine}-linux-gnu"


def test_candidates_with_no_host_library_is_only_the_images_soname(tmp_path: Path) -> None:
    assert sdjournal.candidates(tmp_path) == (sdjournal.SONAME,)


def test_candidates_lists_the_hosts_library_files_before_the_images(tmp_path: Path) -> None:
    first = tmp_path / "usr/lib" / _multiarch() / sdjournal.SONAME
    last = tmp_path / "usr/lib" / sdjournal.SONAME
    for path in (first, last):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert sdjournal.candidates(tmp_path) == (str(first), str(last), sdjournal.SONAME)


def test_candidates_follows_an_absolute_symlink_inside_the_host_root_not_on_this_machine(tmp_path: Path) -> None:
    real = tmp_path / "usr/lib/real/libsystemd.so.0.35.0"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"")
    link = tmp_path / "lib64" / sdjournal.SONAME
    link.parent.mkdir(parents=True)
    link.symlink_to("/usr/lib/real/libsystemd.so.0.35.0")  # absolute: the host's path, below the root here
    assert sdjournal.candidates(tmp_path) == (str(real), sdjournal.SONAME)


def test_candidates_follows_a_relative_symlink_to_its_file(tmp_path: Path) -> None:
    real = tmp_path / "usr/lib64/libsystemd.so.0.35.0"
    real.parent.mkdir(parents=True)
    real.write_bytes(b"")
    (tmp_path / "usr/lib64" / sdjournal.SONAME).symlink_to("libsystemd.so.0.35.0")
    assert sdjournal.candidates(tmp_path) == (str(real), sdjournal.SONAME)


def test_candidates_lists_one_path_once_even_when_two_folders_name_it(tmp_path: Path) -> None:
    library = tmp_path / "usr/lib" / sdjournal.SONAME
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    (tmp_path / "usr/lib64").mkdir()
    (tmp_path / "usr/lib64" / sdjournal.SONAME).symlink_to(f"/usr/lib/{sdjournal.SONAME}")
    assert sdjournal.candidates(tmp_path) == (str(library), sdjournal.SONAME)


def test_candidates_skips_a_dangling_symlink_and_a_symlink_loop(tmp_path: Path) -> None:
    folder = tmp_path / "usr/lib64"
    folder.mkdir(parents=True)
    (folder / sdjournal.SONAME).symlink_to("/nowhere/libsystemd.so.0")
    loop = tmp_path / "lib64"
    loop.mkdir()
    (loop / sdjournal.SONAME).symlink_to(sdjournal.SONAME)
    assert sdjournal.candidates(tmp_path) == (sdjournal.SONAME,)


def test_load_raises_os_error_naming_every_library_that_failed(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.so")
    not_elf = tmp_path / "garbage.so"
    not_elf.write_bytes(b"not a library")
    with pytest.raises(OSError, match=r"cannot load libsystemd\.so\.0 to read the journal") as caught:
        sdjournal.load((missing, str(not_elf)))
    assert missing in str(caught.value) and str(not_elf) in str(caught.value)


def test_load_with_nothing_to_try_says_so() -> None:
    with pytest.raises(OSError, match="no library to try"):
        sdjournal.load(())


def test_a_library_lacking_one_of_the_calls_is_refused_with_its_path() -> None:
    libc = "libc.so.6"  # loads, but has no sd_journal_* symbols
    with pytest.raises(OSError, match=r"libc\.so\.6: .*sd_journal_"):
        sdjournal.Libsystemd(libc)


def test_check_passes_a_non_negative_result_through_and_turns_a_negative_one_into_its_errno() -> None:
    assert sdjournal._check(3, "call") == 3
    with pytest.raises(OSError, match="call: No such file or directory") as caught:
        sdjournal._check(-errno.ENOENT, "call")
    assert caught.value.errno == errno.ENOENT


@pytest.fixture
def library() -> sdjournal.Libsystemd:
    try:
        return sdjournal.load(sdjournal.candidates(Path("/")))
    except OSError as e:  # pragma: no cover - the dev image ships libsystemd
        pytest.fail(f"this machine's libsystemd does not load: {e}")


def test_a_journal_on_a_folder_without_journal_files_has_no_next_entry(
        tmp_path: Path, library: sdjournal.Libsystemd) -> None:
    journal = sdjournal.Journal(library, tmp_path, os_root=False)
    journal.add_match("SYSLOG_IDENTIFIER", "kubelet")
    journal.set_data_threshold(1024)
    journal.seek_head()
    assert journal.next() is False
    journal.close()


def test_a_closed_journal_refuses_every_call_and_closes_twice_quietly(
        tmp_path: Path, library: sdjournal.Libsystemd) -> None:
    journal = sdjournal.Journal(library, tmp_path, os_root=False)
    journal.close()
    with pytest.raises(OSError, match="the journal is closed"):
        journal.next()
    with pytest.raises(OSError, match="the journal is closed"):
        journal.fd()
    journal.close()


def test_opening_a_journal_in_a_missing_folder_raises_its_errno_naming_the_folder(
        tmp_path: Path, library: sdjournal.Libsystemd) -> None:
    missing = tmp_path / "absent"
    with pytest.raises(FileNotFoundError, match=re.escape(f"cannot open the journal in {missing}: No such file")):
        sdjournal.Journal(library, missing, os_root=False)
