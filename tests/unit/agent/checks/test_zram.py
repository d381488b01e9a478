"""zram fill level, from fixture /sys/block/zram*."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from agent.bounds import field_problems
from agent.checks import zram
from agent.host import HostRoot
from agent.sensors.idle import IDLE_INTERVAL

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)
MIB = 1 << 20


def zram_device(root: Path, name: str, stored: int, size: int) -> None:
    device = root / "sys/block" / name
    device.mkdir(parents=True, exist_ok=True)
    (device / "disksize").write_text(f"{size}\n")
    # orig_data_size compr_data_size mem_used_total mem_limit mem_used_max same_pages pages_compacted huge_pages
    (device / "mm_stat").write_text(f"{stored:>16} {stored // 3:>16} {stored // 3:>16} 0 {stored // 3:>16} 12 0 0\n")


def test_zram_over_the_threshold_is_reported_once_per_crossing(tmp_path: Path) -> None:
    zram_device(tmp_path, "zram0", 600 * MIB, 1024 * MIB)
    zram_device(tmp_path, "zram1", 100 * MIB, 1024 * MIB)
    (tmp_path / "sys/block/sda").mkdir()
    check = zram.ZramCheck(zram.Config(max_percent=50), HostRoot(tmp_path))

    first = asyncio.run(check.observe(NOW))
    again = asyncio.run(check.observe(NOW))
    zram_device(tmp_path, "zram0", 100 * MIB, 1024 * MIB)
    asyncio.run(check.observe(NOW))
    zram_device(tmp_path, "zram0", 700 * MIB, 1024 * MIB)
    crossed = asyncio.run(check.observe(NOW))

    assert [e.message for e in first.events] == ["zram0 holds 600 MiB of 1024 MiB (59%, threshold 50%)"]
    assert again.events == ()
    assert [e.reason for e in crossed.events] == [zram.EVENT]


def test_a_node_without_zram_or_with_an_unset_device_reports_nothing_and_looks_again_only_every_idle_interval(
        tmp_path: Path) -> None:
    zram_device(tmp_path, "zram0", 0, 0)
    check = zram.ZramCheck(zram.Config(), HostRoot(tmp_path))

    assert asyncio.run(check.observe(NOW)).events == ()
    assert check.timing.interval == IDLE_INTERVAL
    assert asyncio.run(zram.ZramCheck(zram.Config(), HostRoot(tmp_path / "none")).observe(NOW)).events == ()
    zram_device(tmp_path, "zram0", 900 * MIB, 1024 * MIB)  # set up later: seen at the next look, at its own pace
    assert [e.reason for e in asyncio.run(check.observe(NOW)).events] == [zram.EVENT]
    assert check.timing == zram.Config().timing


def test_validation_names_the_bad_fields() -> None:
    assert problems(zram.Config(max_percent=0)) == ["maxPercent: must be above 0 and at most 100, got 0"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
