"""Fuzz: whatever the API server's address sends (a proxy, a man in the middle, a broken server), the client's
HTTP/1.1 reader (nodemedic_common/http1_client.py) raises nothing but its own failures (ProtocolError, Closed,
LineTooLong, BodyTooLong: the client turns each into an ApiError), reads the final answer's own status (never one of
an interim answer, never one sent after), and leaves a connection the pool would reuse only when every byte it was
sent belongs to that one answer and the server did not close it. Inputs: the healthz fuzz's streams (real answers
with interim heads, every framing, answers or bytes sent ahead) mutated byte-wise, and random bytes; each fed whole,
with or without the connection's end after it."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from nodemedic_common.http1_client import BodyTooLong, ProtocolError, _answer
from nodemedic_common.http1_connection import Closed, Http1Connection, LineTooLong
from tests.unit.fuzz.strategies import FUZZ
from tests.unit.fuzz.test_healthz_answers import INPUTS, final_status
from tests.unit.nodemedic_common.test_http1_connection import FakeTransport

FAILURES = (ProtocolError, Closed, LineTooLong, BodyTooLong)


async def read(data: bytes, closed: bool) -> tuple[int, bytes, bool]:
    conn = Http1Connection()
    conn.connection_made(FakeTransport())
    conn.data_received(data)
    if closed:
        conn.eof_received()
    conn.read_seconds = 0.01  # a stream not closed and not whole: the wait ends (TimeoutError, as a deadline would)
    answer = await _answer(conn, head_only=False)
    body = await answer.read(1 << 16)
    return answer.status, body, answer.ended and answer.keep_alive and conn.usable


@settings(FUZZ, max_examples=min(FUZZ.max_examples, 2000))
@given(data=INPUTS, closed=st.booleans())
def test_any_stream_is_its_final_answer_or_a_failure_of_the_client_and_reused_only_when_nothing_is_left(
        data: bytes, closed: bool) -> None:
    try:
        status, _, reusable = asyncio.run(read(data, closed))
    except (*FAILURES, TimeoutError):
        return
    assert status == final_status(data)
    if reusable:
        assert not closed, "a connection the server closed"
