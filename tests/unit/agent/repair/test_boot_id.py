"""The boot id is read below the host root; anything that is not one is a ValueError naming the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.repair.boot_id import read_boot_id

PATH = "/proc/sys/kernel/random/boot_id"


def host_with(tmp_path: Path, text: str | None) -> HostRoot:
    if text is not None:
        (tmp_path / "proc/sys/kernel/random").mkdir(parents=True)
        (tmp_path / "proc/sys/kernel/random/boot_id").write_text(text)
    return HostRoot(tmp_path)


def test_the_kernels_boot_id_is_read_below_the_host_root(tmp_path: Path) -> None:
    host = host_with(tmp_path, "5f0e6a3c-2c47-4f5e-9d0b-1e2f3a4b5c6d\n")
    assert read_boot_id(host, PATH) == "5f0e6a3c-2c47-4f5e-9d0b-1e2f3a4b5c6d"


def test_this_machines_own_boot_id_reads() -> None:
    assert len(read_boot_id(HostRoot(Path("/")), PATH)) == 36


@pytest.mark.parametrize(("text", "expected"), [(None, f"{PATH}: No such file"), ("", "not a boot id: ''"),
                                                ("a b\n", "not a boot id: 'a b'"), ("x" * 65, "not a boot id")],
                         ids=["missing", "empty", "space", "too-long"])
def test_what_is_not_a_boot_id_is_a_value_error_naming_the_path(tmp_path: Path, text: str | None,
                                                                 expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        read_boot_id(host_with(tmp_path, text), PATH)
