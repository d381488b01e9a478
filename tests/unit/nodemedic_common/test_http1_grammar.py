"""The one HTTP/1.1 grammar both readers use accepts only ASCII numbers and whole lines: a latin-1 "²" (which
`str.isdigit()` takes) is no digit, a sign is no chunk size, a header line without a token name is refused."""

from __future__ import annotations

import pytest

from nodemedic_common.http1_grammar import CHUNK_SIZE, DIGITS, FIELD_LINE, STATUS_LINE, field_values


@pytest.mark.parametrize(("line", "ok"), [(b"HTTP/1.1 200 OK", True), (b"HTTP/1.0 404", True),
                                          (b"HTTP/1.1 \xb200 OK", False), (b"HTTP/1.1 20 OK", False),
                                          (b"HTTP/2 200 OK", False), (b"HTTP/1.1 099 x", False),
                                          (b"HTTP/1.1 200 OK\r", False), (b" HTTP/1.1 200", False)])
def test_a_status_line_is_three_ascii_digits_after_http_1(line: bytes, ok: bool) -> None:
    assert (STATUS_LINE.fullmatch(line) is not None) is ok


@pytest.mark.parametrize(("value", "ok"), [(b"0", True), (b"123", True), (b"\xb2", False), (b"-5", False),
                                           (b"+5", False), (b"1 2", False), (b"", False), (b"\xef\xbc\x91", False)])
def test_a_length_is_ascii_digits_only(value: bytes, ok: bool) -> None:
    assert (DIGITS.fullmatch(value) is not None) is ok


@pytest.mark.parametrize(("line", "size"), [(b"1a", "1a"), (b"0", "0"), (b"5;ext=1", "5"), (b"5 ; x", "5"),
                                            (b"-5", None), (b"0x5", None), (b"\xb2", None), (b"1" * 16, None)])
def test_a_chunk_size_is_hex_digits_with_an_optional_extension(line: bytes, size: str | None) -> None:
    found = CHUNK_SIZE.fullmatch(line)
    assert (found[1].decode() if found else None) == size


@pytest.mark.parametrize(("line", "field"), [(b"Content-Length: 5", (b"Content-Length", b"5")),
                                             (b"X:  a b  ", (b"X", b"a b")), (b"Bad Name: x", None),
                                             (b": x", None), (b"X: a\rb", None), (b"no colon", None)])
def test_a_field_line_is_a_token_a_colon_and_a_value_without_control_bytes(
        line: bytes, field: tuple[bytes, bytes] | None) -> None:
    found = FIELD_LINE.fullmatch(line)
    assert ((found[1], found[2]) if found else None) == field


def test_field_values_are_the_elements_of_every_field_of_that_name_in_lower_case() -> None:
    fields = [("connection", "Keep-Alive, Upgrade"), ("x", "close"), ("connection", " , CLOSE ")]
    assert field_values(fields, "connection") == ["keep-alive", "upgrade", "close"]
    assert field_values(fields, "transfer-encoding") == []
