"""Fuzz: whatever a CRI socket sends back to the runtime probe's Version call, in whatever chunks, the reply reader
either gives an answer or refuses with `ProbeError` (which the check reports as ContainerRuntimeUnhealthy); never
another exception. It answers only when a DATA frame on our stream carried a whole gRPC message (checked here by a
reader that knows nothing of the protocol's rules), and it acknowledges only a few frames however many come.
Inputs: random bytes, random frame streams, and mutants of a real reply (frames dropped, repeated, reordered,
bytes changed, a random frame put in)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agent.services.cri_wire import (
    ACK,
    DATA,
    END_HEADERS,
    END_STREAM,
    HEADERS,
    MAX_ACKS,
    PADDED,
    PING,
    SETTINGS,
    WINDOW_UPDATE,
    ProbeError,
    VersionReply,
    frame,
)
from tests.unit.fuzz.strategies import FUZZ

MESSAGE = b"\x00\x00\x00\x00\x0e" + b"\x12\x0acontainerd" + b"\x1a\x00"
GOOD = [frame(SETTINGS, 0, 0, b"\x00\x03\x00\x00\x00\x64"), frame(WINDOW_UPDATE, 0, 0, (1 << 20).to_bytes(4, "big")),
        frame(SETTINGS, ACK, 0), frame(PING, 0, 0, b"pingpong"), frame(HEADERS, END_HEADERS, 1, b"\x88"),
        frame(DATA, PADDED, 1, b"\x02" + MESSAGE[:6] + b"\x00\x00"), frame(DATA, 0, 1, MESSAGE[6:]),
        frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x00")]
ACKS_AT_MOST = MAX_ACKS * (len(frame(SETTINGS, ACK, 0)) + len(frame(PING, ACK, 0, bytes(8))))

# Frames of any type (the ten defined and a few unknown), flags and stream, with payloads of the lengths that
# matter (empty, the fixed ones, a gRPC message header) or any.
random_frames = st.builds(
    frame, st.integers(0, 12), st.integers(0, 255), st.sampled_from([0, 1, 1, 2, 3, 0x7FFFFFFF]),
    st.one_of(st.binary(max_size=40), st.sampled_from([b"", bytes(4), bytes(5), bytes(6), bytes(8), MESSAGE]),
              st.binary(min_size=5, max_size=5).map(lambda head: head + bytes(8))))


@st.composite
def mutated_reply(draw: st.DrawFn) -> bytes:
    """The good reply with one to four changes: a frame dropped, repeated, swapped or put in; a byte changed."""
    frames = list(GOOD)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(frames) - 1))
        kind = draw(st.integers(0, 4))
        if kind == 0 and len(frames) > 1:
            del frames[at]
        elif kind == 1:
            frames.insert(at, frames[at] * draw(st.integers(1, 80)))
        elif kind == 2:
            other = draw(st.integers(0, len(frames) - 1))
            frames[at], frames[other] = frames[other], frames[at]
        elif kind == 3:
            frames.insert(at, draw(random_frames))
        else:
            raw = bytearray(frames[at])
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
            frames[at] = bytes(raw)
    return b"".join(frames)


REPLIES = st.one_of(mutated_reply(), st.lists(random_frames, max_size=12).map(lambda fs: GOOD[0] + b"".join(fs)),
                    st.binary(max_size=200), st.binary(max_size=200).map(lambda tail: GOOD[0] + tail))


def carries_a_grpc_message_on_stream_1(reply: bytes) -> bool:
    """Whether DATA frames on stream 1, in order, padding taken off, add up to a whole gRPC message somewhere."""
    data, pos = b"", 0
    while pos + 9 <= len(reply):
        length, kind, flags = int.from_bytes(reply[pos:pos + 3], "big"), reply[pos + 3], reply[pos + 4]
        stream = int.from_bytes(reply[pos + 5:pos + 9], "big") & 0x7FFFFFFF
        payload = reply[pos + 9:pos + 9 + length]
        if len(payload) < length:
            return False
        if kind == DATA and stream == 1:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]] if payload and payload[0] < len(payload) else b""
            data += payload
            if len(data) >= 5 and len(data) >= 5 + int.from_bytes(data[1:5], "big"):
                return True
        pos += 9 + length
    return False


@FUZZ
@given(reply=REPLIES, chunk=st.integers(1, 300))
def test_any_reply_is_answered_or_refused_and_only_a_grpc_message_is_an_answer(reply: bytes, chunk: int) -> None:
    reader, sent, answer = VersionReply(), b"", None
    try:
        for start in range(0, len(reply), chunk):  # as the socket may cut it: frames split anywhere
            acks, answer = reader.feed(reply[start:start + chunk])
            sent += acks
            if answer is not None:
                break
    except ProbeError:
        pass
    assert len(sent) <= ACKS_AT_MOST
    if answer is not None:
        assert carries_a_grpc_message_on_stream_1(reply), answer


def test_the_unmutated_reply_is_an_answer() -> None:
    assert VersionReply().feed(b"".join(GOOD))[1] == "containerd"
    assert carries_a_grpc_message_on_stream_1(b"".join(GOOD))
