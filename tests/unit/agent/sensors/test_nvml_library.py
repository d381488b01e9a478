"""The host's NVML library found below the host root, links followed as the host would."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.sensors.nvml_library import DEFAULT_LIBRARY_DIRS, LIBRARY, find_library, load_binding


def test_the_first_directory_holding_the_library_wins(tmp_path: Path) -> None:
    host = HostRoot(tmp_path)
    assert find_library(host, DEFAULT_LIBRARY_DIRS) is None  # no driver: a few stats, no import
    for directory in ("usr/lib64", "usr/local/nvidia/lib64"):
        (tmp_path / directory).mkdir(parents=True)
        (tmp_path / directory / LIBRARY).write_bytes(b"")
    assert find_library(host, ("/usr/lib", "/usr/local/nvidia/lib64/", "/usr/lib64")) == (
        tmp_path / "usr/local/nvidia/lib64" / LIBRARY)


def test_an_absolute_link_is_followed_below_the_host_root(tmp_path: Path) -> None:
    (tmp_path / "opt/driver").mkdir(parents=True)
    (tmp_path / "opt/driver" / LIBRARY).write_bytes(b"")
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib" / LIBRARY).symlink_to(f"/opt/driver/{LIBRARY}")  # absolute on the host
    assert find_library(HostRoot(tmp_path), ("/usr/lib",)) == tmp_path / "opt/driver" / LIBRARY


def test_a_file_that_is_no_library_cannot_be_bound(tmp_path: Path) -> None:
    import pynvml  # noqa: PLC0415 - the binding's state is checked around the failed load

    fake = tmp_path / LIBRARY
    fake.write_text("not an ELF file")
    with pytest.raises(OSError):
        load_binding(fake)
    assert pynvml.nvmlLib is None  # nothing half-bound for the next look
