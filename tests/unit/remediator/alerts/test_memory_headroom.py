"""MemoryHeadroom: the container's memory limit from either cgroup version, and one warning as the peak nears it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from remediator.alerts.memory_headroom import MIB, MemoryHeadroom, container_limit, peak_rss


def cgroup(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize(("files", "limit"), [
    ({"memory.max": "536870912\n"}, 512 * MIB),
    ({"memory.max": "max\n"}, None),
    ({"memory/memory.limit_in_bytes": "268435456\n"}, 256 * MIB),
    ({"memory/memory.limit_in_bytes": "9223372036854771712\n"}, None),  # v1's "no limit"
    ({"memory.max": "garbage"}, None),
    ({}, None),
], ids=["v2", "v2 max", "v1", "v1 unlimited", "not a number", "no cgroup"])
def test_the_limit_is_read_from_either_cgroup_version(tmp_path: Path, files: dict[str, str],
                                                      limit: int | None) -> None:
    assert container_limit(cgroup(tmp_path, files)) == limit


def test_the_peak_is_this_processs_own_in_bytes() -> None:
    held = bytearray(64 * MIB)  # noqa: F841 - held while measured
    assert peak_rss() >= 64 * MIB


def test_one_warning_when_the_peak_passes_four_fifths_of_the_limit(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    peaks = iter([399 * MIB, 400 * MIB, 480 * MIB])
    sizes = iter([(5000, 150_000)])  # asked for once: when the warning is written
    h = MemoryHeadroom(registry, logging.getLogger("test.headroom"), limit=500 * MIB, peak=lambda: next(peaks))
    assert registry.get_sample_value("nodemedic_memory_limit_bytes") == 500 * MIB
    h.after_cycle(lambda: next(sizes))
    assert caplog.records == []
    h.after_cycle(lambda: next(sizes))
    h.after_cycle(lambda: next(sizes))
    assert [(r.levelname, r.getMessage().split(":")[0], r.peak_mib, r.limit_mib, r.nodes, r.pods)  # type: ignore[attr-defined]
            for r in caplog.records] == [("WARNING", "memory near the container's limit", 400, 500, 5000, 150_000)]


def test_no_limit_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    registry = CollectorRegistry()
    MemoryHeadroom(registry, logging.getLogger("test.headroom"), limit=None, peak=lambda: 1 << 40).after_cycle(
        lambda: (1, 1))
    assert caplog.records == [] and registry.get_sample_value("nodemedic_memory_limit_bytes") == 0
