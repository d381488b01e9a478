"""Pressure stall information: the file's grammar, an absent PSI, the sustained window and the sticky message."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.model import ConditionReport, Status
from agent.sensors.psi import PSILine, StickyReport, Sustained, describe, parse_pressure, read_pressure

CPU = "some avg10=1.53 avg60=0.87 avg300=0.40 total=3127363\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def test_both_lines_are_read_and_the_full_line_is_optional() -> None:
    pressure = parse_pressure(CPU)
    assert pressure.some == PSILine(1.53, 0.87, 0.40, 3127363)
    assert pressure.full == PSILine(0.0, 0.0, 0.0, 0)
    assert parse_pressure(CPU.split("\n", maxsplit=1)[0]).full is None  # /proc/pressure/cpu before kernel 5.13


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("full avg10=0 avg60=0 avg300=0 total=0\n", "no 'some' line"),
    ("some avg10=1 avg60=1 avg300=1\n", "some: missing total"),
    ("some avg10=1 avg60=101 avg300=1 total=1\n", "some: avg60=101 is not a percentage"),
    ("some avg10=1 avg60=nan avg300=1 total=1\n", "some: avg60=nan is not a percentage"),
    ("some avg10=1 avg60=1 avg300=1 total=-1\n", "some: total=-1 is negative"),
    (CPU + CPU, "'some' line appears twice"),
    ("other avg10=1\n", "unexpected line 'other avg10=1'"),
])
def test_a_malformed_file_is_an_error_saying_what(text: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_pressure(text)
    assert str(err.value).startswith(message), err.value


def test_a_kernel_without_psi_is_none_and_bad_data_names_the_file(tmp_path: Path) -> None:
    host = HostRoot(tmp_path)
    assert read_pressure(host, "/proc/pressure/cpu") is None
    (tmp_path / "proc" / "pressure").mkdir(parents=True)
    (tmp_path / "proc" / "pressure" / "cpu").write_text("garbage\n")
    with pytest.raises(ValueError, match=r"^/proc/pressure/cpu: unexpected line"):
        read_pressure(host, "/proc/pressure/cpu")
    (tmp_path / "proc" / "pressure" / "cpu").write_text(CPU)
    pressure = read_pressure(host, "/proc/pressure/cpu")
    assert describe("cpu", pressure) == "cpu PSI some avg60=0.9% full avg60=0.0%"
    assert describe("cpu", None) == "cpu PSI unavailable"


def test_a_level_counts_once_it_held_for_the_window_and_a_mixed_window_keeps_the_state() -> None:
    sustained = Sustained(2 * MINUTE)
    assert sustained.update(True, NOW) is None  # no evidence yet: undecided
    assert sustained.update(True, NOW + MINUTE) is None
    assert sustained.update(True, NOW + 2 * MINUTE) is True
    assert sustained.update(False, NOW + 3 * MINUTE) is True  # below for a minute only
    sustained.interrupt()  # a bad reading: the run starts again, the state stays
    assert sustained.update(False, NOW + 4 * MINUTE) is True
    assert sustained.update(False, NOW + 6 * MINUTE) is False


def test_the_report_is_kept_while_its_finding_holds() -> None:
    sticky = StickyReport()
    first = ConditionReport("CPUPressure", Status.TRUE, "HighPSI", "some avg60=91.0%")
    assert sticky(first, (Status.TRUE, "HighPSI")) is first
    moved = ConditionReport("CPUPressure", Status.TRUE, "HighPSI", "some avg60=95.0%")
    assert sticky(moved, (Status.TRUE, "HighPSI")) is first  # the numbers moved, the finding did not
    cleared = ConditionReport("CPUPressure", Status.FALSE, "NoPressure", "some avg60=10.0%")
    assert sticky(cleared, (Status.FALSE, "NoPressure")) is cleared
