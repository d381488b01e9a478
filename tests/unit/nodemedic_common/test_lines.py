"""Watch lines with an explicit bound: any split of the stream gives the same lines; a line over the bound raises
LineTooLong after reading at most the bound and one chunk."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nodemedic_common.lines import LineTooLong, bounded_lines
from tests.unit.fuzz.strategies import FUZZ


async def _chunks(parts: list[bytes], read: list[int]) -> AsyncIterator[bytes]:
    for p in parts:
        read.append(len(p))
        yield p


def lines(parts: list[bytes], limit: int, read: list[int] | None = None) -> list[bytes]:
    """Drives the generator by hand: nothing in it waits, and 10,000 event loops would make the fuzz slow."""
    agen = bounded_lines(_chunks(parts, read if read is not None else []), limit)
    out: list[bytes] = []
    while True:
        step = agen.__anext__()
        try:
            step.send(None)
        except StopIteration as done:
            out.append(done.value)
        except StopAsyncIteration:
            return out


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@FUZZ
@given(body=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=6),
       trailing=st.booleans(), cuts=st.lists(st.integers(0, 400), max_size=8))
def test_any_split_of_the_stream_gives_the_lines_it_holds(body: list[bytes], trailing: bool, cuts: list[int]) -> None:
    data = b"\n".join(body) + (b"\n" if trailing and body else b"")
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    assert lines(split(data, cuts), limit=40) == expected


def test_a_one_mebibyte_line_passes_a_bound_above_it() -> None:
    big = b"x" * (1 << 20)
    parts = [b'{"a":1}\n' + big[:100_000], big[100_000:] + b"\n", b'{"b":2}\n']
    assert lines(parts, limit=16 << 20) == [b'{"a":1}', big, b'{"b":2}']


def test_a_line_over_the_bound_raises_after_reading_at_most_the_bound_and_one_chunk() -> None:
    read: list[int] = []
    parts = [b"ok\n"] + [b"y" * 1000] * 100 + [b"\n"]
    with pytest.raises(LineTooLong, match="longer than 0 MiB"):
        lines(parts, limit=4096, read=read)
    assert sum(read) <= 4096 + 1000 + 3
