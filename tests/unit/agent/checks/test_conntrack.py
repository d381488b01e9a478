"""Conntrack level and drops from fixture /proc files (including a missing module)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks.conntrack import CONDITION, Config, ConntrackCheck, parse_stat
from agent.host import HostRoot
from agent.model import Observation, Status

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)
# A 6.1 kernel's header; each CPU row repeats `entries` (the namespace's count) and has its own counters.
HEADER = ("entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop "
          "icmp_error  expect_new expect_create expect_delete search_restart")


def row(insert_failed: int = 0, drop: int = 0, early_drop: int = 0) -> str:
    values = [0x1f4, 0, 0, 0, 0x2a, 0, 0, 0, 0, insert_failed, drop, early_drop, 0, 0, 0, 0, 0x10]
    return " ".join(f"{v:08x}" for v in values)


def write(root: Path, *, count: int = 500, maximum: int = 262144, rows: tuple[str, ...] = (row(), row())) -> None:
    (root / "proc/sys/net/netfilter").mkdir(parents=True, exist_ok=True)
    (root / "proc/net/stat").mkdir(parents=True, exist_ok=True)
    (root / "proc/sys/net/netfilter/nf_conntrack_count").write_text(f"{count}\n")
    (root / "proc/sys/net/netfilter/nf_conntrack_max").write_text(f"{maximum}\n")
    (root / "proc/net/stat/nf_conntrack").write_text("\n".join((HEADER, *rows)) + "\n")


def observe(check: ConntrackCheck, now: dt.datetime = NOW) -> Observation:
    return asyncio.run(check.observe(now))


def status(observation: Observation) -> tuple[Status, str]:
    (report,) = observation.conditions
    assert report.type == CONDITION
    return report.status, report.reason


def test_without_the_conntrack_module_there_is_no_verdict(tmp_path: Path) -> None:
    (tmp_path / "proc/sys/net").mkdir(parents=True)

    assert observe(ConntrackCheck(Config(), HostRoot(tmp_path))).conditions == ()


@pytest.mark.parametrize(("count", "expected"), [
    (500, (Status.FALSE, "ConntrackHasRoom")),
    (235929, (Status.FALSE, "ConntrackHasRoom")),  # 89.99 %
    (235930, (Status.TRUE, "ConntrackTableNearFull")),  # 90.0 %
], ids=["low", "just-below-90", "at-90"])
def test_the_table_level_is_count_over_max(tmp_path: Path, count: int, expected: tuple[Status, str]) -> None:
    write(tmp_path, count=count)

    assert status(observe(ConntrackCheck(Config(), HostRoot(tmp_path)))) == expected


def test_drops_summed_over_cpus_rising_make_it_true_until_a_quiet_period(tmp_path: Path) -> None:
    write(tmp_path, rows=(row(drop=5), row(early_drop=1)))
    check = ConntrackCheck(Config(drop_quiet_period=10 * MINUTE), HostRoot(tmp_path))
    assert status(observe(check)) == (Status.FALSE, "ConntrackHasRoom")  # drops before the agent: a baseline
    write(tmp_path, rows=(row(drop=0x15), row(early_drop=1, insert_failed=2)))

    rose = observe(check, NOW + MINUTE)
    later = observe(check, NOW + 10 * MINUTE)
    quiet = observe(check, NOW + 11 * MINUTE)

    assert status(rose) == (Status.TRUE, "ConntrackDroppingPackets")
    assert rose.conditions[0].message.startswith("18 packets dropped")
    assert status(later) == (Status.TRUE, "ConntrackDroppingPackets")
    assert status(quiet) == (Status.FALSE, "ConntrackHasRoom")


@pytest.mark.parametrize(("text", "message"), [
    ("entries found new\n000001f4 0 0\n", "no drop, early_drop, insert_failed column"),
    (HEADER + "\n00000001 zz\n", "line 2 is not a row of hex counters"),
], ids=["old-header", "garbage-row"])
def test_an_unexpected_stat_file_is_an_error_naming_it(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_stat(text)


def test_unreadable_numbers_make_it_unknown(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "proc/sys/net/netfilter/nf_conntrack_max").write_text("")

    observation = observe(ConntrackCheck(Config(), HostRoot(tmp_path)))

    assert status(observation) == (Status.UNKNOWN, "BadSensorData")
    assert "nf_conntrack_max: '' is not a number" in observation.conditions[0].message


def test_validation_names_the_bad_fields() -> None:
    assert problems(Config(max_percent=0, drop_quiet_period=dt.timedelta(0))) == [
        "maxPercent: must be above 0 and at most 100, got 0", "dropQuietPeriod: must be positive, got 0s"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
