"""Fuzz: whatever a kubelet's or kube-proxy's healthz port sends, the probe's HTTP/1.1 reader (`read_answer`) raises
nothing but the probe's own failure (ProbeError), always asks for more bytes than it has (so the connection never
wakes it for nothing) and never more than its bound, and reports 200 only where the final answer's status line says
200: never from a non-200 answer behind interim ones, never with bytes past a known end (an answer sent ahead, a
surplus), and never another status for a prefix of the stream than for the whole. Inputs: streams built from real
answers (interim 1xx heads, then a final answer with a length, chunks, no body or a body to the connection's end,
then maybe answers or bytes nobody asked for), mutated byte-wise (digits swapped for latin-1 look-alikes, signs,
bytes dropped, doubled or inserted), and random bytes."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.services.http_answer import MAX_NEEDED, ProbeError, Read, read_answer
from tests.unit.fuzz.strategies import FUZZ

STATUSES = [200, 200, 204, 304, 101, 301, 404, 500, 503]
INTERIM = [b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 102 Processing\r\nX: y\r\n\r\n", b"HTTP/1.1 199 Hm\r\n\r\n"]
JUNK = [b"\xb2", b"\xb9", b"\xbc", b"-", b"+", b" ", b"\t", b"\r", b"\n", b"\r\n", b"\x00", b"0x", b"1_0", b"e",
        b"HTTP/1.1 200 OK\r\n\r\n", b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n", b"\xef\xbc\x91"]


@st.composite
def answers(draw: st.DrawFn) -> bytes:
    """A final answer as a server writes it: its status, framing, connection header and body."""
    status = draw(st.sampled_from(STATUSES))
    version = draw(st.sampled_from([b"1.1", b"1.1", b"1.0"]))
    body = draw(st.sampled_from([b"ok", b"", b"[-]etcd failed", b"x" * 100]))
    fields = draw(st.lists(st.sampled_from([b"Connection: close", b"Connection: keep-alive", b"X-Seen: 1",
                                            b"Content-Type: text/plain; charset=utf-8"]), max_size=2))
    framing = draw(st.sampled_from(["length", "length", "chunked", "none"]))
    if framing == "length":
        fields.append(b"Content-Length: %d" % len(body))
    elif framing == "chunked":
        fields.append(b"Transfer-Encoding: chunked")
        body = (b"%x\r\n%s\r\n" % (len(body), body) if body else b"") + b"0\r\n\r\n"
    head = b"HTTP/%s %d Reason\r\n" % (version, status) + b"".join(f + b"\r\n" for f in fields) + b"\r\n"
    return head + body


@st.composite
def streams(draw: st.DrawFn) -> bytes:
    """Interim answers, a final one, maybe more answers or bytes nobody asked for."""
    data = b"".join(draw(st.lists(st.sampled_from(INTERIM), max_size=2))) + draw(answers())
    return data + draw(st.sampled_from([b"", b"", b"xyz"]) | answers())


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with one to three byte-wise changes: a look-alike or sign inserted or put in place of a byte, a byte
    dropped or doubled, a run cut out."""
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.integers(0, 4))
        if kind == 0:
            data = data[:at] + draw(st.sampled_from(JUNK)) + data[at:]
        elif kind == 1:
            data = data[:at] + draw(st.sampled_from(JUNK)) + data[at + 1:]
        elif kind == 2:
            data = data[:at] + data[at + 1:]
        elif kind == 3:
            data = data[:at] + data[at:at + 1] * 2 + data[at + 1:]
        else:
            data = data[:at] + data[at + draw(st.integers(1, 40)):]
    return data


INPUTS = st.one_of(streams(), streams().flatmap(mutated), st.binary(max_size=300))
_STATUS_LINE = re.compile(rb"HTTP/1\.[01] ([0-9]{3})")
_BLANK = re.compile(rb"\r?\n\r?\n")


def final_status(data: bytes) -> int | None:
    """The oracle, read naively: interim heads end at their first empty line; the next status line is the final."""
    pos = 0
    while (status := _STATUS_LINE.match(data, pos)) is not None:
        code = int(status[1])
        if code >= 200 or code == 101:
            return code
        blank = _BLANK.search(data, pos)
        if blank is None:
            return None
        pos = blank.end()
    return None


# The reader costs microseconds; drawing a stream costs milliseconds: 2,000 examples keep this under ~30 s here.
@settings(FUZZ, max_examples=min(FUZZ.max_examples, 2000))
@given(data=INPUTS, ended=st.booleans(), cut=st.integers(0, 400))
def test_any_stream_is_one_answer_of_its_own_status_or_a_failed_probe(data: bytes, ended: bool, cut: int) -> None:
    try:
        read = read_answer(data, ended=ended)
    except ProbeError:
        read = None
    if isinstance(read, int):
        assert len(data) < read <= MAX_NEEDED, read
    elif isinstance(read, Read):
        assert read.answer.status == final_status(data), read
        assert read.used <= len(data)
        if read.answer.reusable:
            assert read.used == len(data), "bytes past a kept answer"
        # The same stream cut short reads as the same answer, or waits for more: never another answer.
        try:
            early = read_answer(data[:cut], ended=False)
        except ProbeError:
            return
        assert isinstance(early, int) or early.answer.status == read.answer.status, (early, read)
