"""Pressure stall information: the file's grammar, an absent PSI, and its summary in messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.host import HostRoot
from agent.sensors.psi import PSILine, describe, parse_pressure, read_pressure

CPU = "some avg10=1.53 avg60=0.87 avg300=0.40 total=3127363\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


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
