"""NVML's answers, distrusted: any exception from a call is `Failed` with its words (NVML's "absent" codes are
UNSUPPORTED), a count or yes/no of another shape is `Failed` naming the call and quoting the answer, and a driver's
text is put into a message as one printable line."""

from __future__ import annotations

from typing import Any

import pynvml
import pytest

from agent.sensors.nvml_answers import UNSUPPORTED, Failed, ask, counter, field, flag, printable, shown, words


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


def _raise(exc: BaseException) -> Any:
    raise exc


def test_nvml_errors_are_unsupported_for_the_absent_codes_and_failed_with_the_code_otherwise() -> None:
    def nvmlDeviceGetX(code: int) -> Any:
        raise pynvml.NVMLError(code)
    assert ask(pynvml, nvmlDeviceGetX, pynvml.NVML_ERROR_NOT_SUPPORTED) is UNSUPPORTED
    assert ask(pynvml, nvmlDeviceGetX, pynvml.NVML_ERROR_GPU_IS_LOST) == Failed("nvmlDeviceGetX: GPU is lost", 15)


@pytest.mark.parametrize(("exc", "why"), [
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
     "_raise: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    (_Unprintable(), "_raise: _Unprintable: _Unprintable"),
    (ValueError("line\nbreak\x1b[31m"), "_raise: ValueError: line?break?[31m"),
])
def test_any_other_exception_is_failed_in_one_printable_line(exc: Exception, why: str) -> None:
    assert ask(pynvml, _raise, exc) == Failed(why)  # before: anything but NVMLError went out of the check


def test_a_structure_field_that_raises_when_read_is_failed() -> None:
    class Info:
        @property
        def busId(self) -> str:
            return b"\xff".decode()
    assert field("nvmlDeviceGetPciInfo", Info(), "busId") == Failed(
        "nvmlDeviceGetPciInfo: its busId unreadable: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte")
    assert isinstance(field("nvmlDeviceGetPciInfo", object(), "busId"), Failed)


@pytest.mark.parametrize("answer", [0, 1, 2**64 - 1])
def test_counts_from_zero_below_two_to_the_64_are_counts(answer: int) -> None:
    assert counter("c", answer) == answer


@pytest.mark.parametrize("answer", [-1, 2**64, True, 1.0, "1", None, [1]])
def test_anything_else_is_no_count(answer: object) -> None:
    assert counter("c", answer) == Failed(f"c: answered {answer!r}, not a count")


def test_flags_are_0_or_1_and_failures_pass_through() -> None:
    assert (flag("f", 0), flag("f", 1), flag("f", UNSUPPORTED)) == (False, True, UNSUPPORTED)
    assert flag("f", 2) == Failed("f: answered 2, not 0 or 1")
    assert flag("f", Failed("lost")) == Failed("lost")


def test_text_is_one_line_of_printable_characters_clipped() -> None:
    assert printable("a\nb\u202ec", 10) == "a?b?c"
    assert printable("x" * 100, 10) == "x" * 9 + "…"
    assert shown("GPU-\n") == "'GPU-\\n'"
    assert words(_Unprintable()) == "_Unprintable"
