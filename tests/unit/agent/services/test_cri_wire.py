"""The CRI Version call's bytes: the request, and the reply read frame by frame within what RFC 9113 allows."""

from __future__ import annotations

import pytest

from agent.services.cri_wire import (
    ACK,
    CONTINUATION,
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    MAX_ACKS,
    MAX_REPLY_BYTES,
    MAX_REPLY_FRAMES,
    PADDED,
    PING,
    PREFACE,
    PUSH_PROMISE,
    RST_STREAM,
    SETTINGS,
    WINDOW_UPDATE,
    ProbeError,
    VersionReply,
    frame,
    hpack_int,
    parse_version,
    version_request,
)
from tests.unit.agent.services.cri_replies import GRPC_MESSAGE, STATUS_200, VERSION_RESPONSE, proto_string

SERVER_SETTINGS = frame(SETTINGS, 0, 0, b"\x00\x03\x00\x00\x00\x64")  # MAX_CONCURRENT_STREAMS=100
RESPONSE = frame(HEADERS, END_HEADERS, 1, STATUS_200)
# What containerd's gRPC server sends: its SETTINGS, a window update, the ACK of ours, a BDP ping, the answer.
GOOD_REPLY = (SERVER_SETTINGS + frame(WINDOW_UPDATE, 0, 0, (1 << 20).to_bytes(4, "big")) + frame(SETTINGS, ACK, 0)
              + frame(PING, 0, 0, b"pingpong") + RESPONSE + frame(DATA, 0, 1, GRPC_MESSAGE)
              + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x00"))
SETTINGS_ACK, PING_ACK = frame(SETTINGS, ACK, 0), frame(PING, ACK, 0, b"pingpong")


def read(reply: bytes, chunk: int | None = None) -> tuple[bytes, str | None]:
    """Feed `reply` in chunks of `chunk` bytes (all at once by default): what was sent back, and the answer."""
    reader, sent, answer = VersionReply(), b"", None
    step = chunk or max(len(reply), 1)
    for start in range(0, max(len(reply), 1), step):
        acks, answer = reader.feed(reply[start:start + step])
        sent += acks
        if answer is not None:
            break
    return sent, answer


def test_the_request_is_the_preface_our_settings_and_one_unary_call() -> None:
    request = version_request()
    assert request.startswith(PREFACE + frame(SETTINGS, 0, 0, b"\x00\x02\x00\x00\x00\x00"))  # ENABLE_PUSH=0
    assert request.endswith(frame(DATA, END_STREAM, 1, b"\x00\x00\x00\x00\x00"))


@pytest.mark.parametrize("chunk", [None, 1, 7], ids=["whole", "byte-by-byte", "odd-chunks"])
def test_a_good_reply_gives_the_runtime_and_acknowledges_its_settings_and_ping(chunk: int | None) -> None:
    assert read(GOOD_REPLY, chunk) == (SETTINGS_ACK + PING_ACK, "containerd v1.7.13")


def test_a_message_split_over_padded_data_frames_is_reassembled() -> None:
    first, rest = GRPC_MESSAGE[:7], GRPC_MESSAGE[7:]
    reply = (SERVER_SETTINGS + RESPONSE + frame(DATA, PADDED, 1, bytes((3,)) + first + bytes(3))
             + frame(DATA, END_STREAM, 1, rest))
    assert read(reply)[1] == "containerd v1.7.13"


def test_a_compressed_answer_is_success_without_details() -> None:
    assert read(SERVER_SETTINGS + RESPONSE + frame(DATA, 0, 1, b"\x01\x00\x00\x00\x02ab"))[1] == "runtime"


def test_headers_continued_in_a_continuation_frame_are_a_response() -> None:
    reply = (SERVER_SETTINGS + frame(HEADERS, 0, 1, STATUS_200) + frame(CONTINUATION, END_HEADERS, 1, b"\x00")
             + frame(DATA, 0, 1, GRPC_MESSAGE))
    assert read(reply)[1] == "containerd v1.7.13"


@pytest.mark.parametrize("reply", [b"HTTP/1.1 400 Bad Request\r\n\r\n", frame(PING, 0, 0, bytes(8)), SETTINGS_ACK],
                         ids=["http1", "ping-first", "settings-ack-first"])
def test_a_reply_that_does_not_begin_with_the_servers_settings_is_not_http2(reply: bytes) -> None:
    with pytest.raises(ProbeError, match="answered with something that is not HTTP/2"):
        read(reply)


@pytest.mark.parametrize(("reply", "fragment"), [
    (frame(PING, 0, 0, bytes(16384)), "sent a PING frame of 16384 octets, not 8 (FRAME_SIZE_ERROR)"),
    (frame(PING, 0, 0, bytes(7)), "sent a PING frame of 7 octets, not 8 (FRAME_SIZE_ERROR)"),
    (frame(SETTINGS, 0, 0, bytes(7)), "sent a SETTINGS frame of 7 octets (FRAME_SIZE_ERROR)"),
    (frame(SETTINGS, ACK, 0, bytes(6)), "sent a SETTINGS frame of 6 octets (FRAME_SIZE_ERROR)"),
    (b"\xff\xff\xff" + bytes((DATA, 0)) + bytes(4), "sent a frame of 16777215 octets, more than the 16384 allowed"),
    (frame(RST_STREAM, 0, 1, bytes(3)), "sent a RST_STREAM frame of 3 octets, not 4 (FRAME_SIZE_ERROR)"),
    (frame(RST_STREAM, 0, 1, (2).to_bytes(4, "big")), "reset the Version call (error code 2)"),
    (frame(GOAWAY, 0, 0, bytes(7)), "sent a GOAWAY frame of 7 octets (FRAME_SIZE_ERROR)"),
    (frame(GOAWAY, 0, 0, (1).to_bytes(4, "big") + (11).to_bytes(4, "big")), "sent GOAWAY (error code 11)"),
    (frame(PING, 0, 1, bytes(8)), "sent PING on stream 1 (PROTOCOL_ERROR)"),
    (frame(DATA, 0, 3, GRPC_MESSAGE), "sent DATA on stream 3 (PROTOCOL_ERROR)"),
    (frame(PUSH_PROMISE, END_HEADERS, 1, bytes(4)), "sent PUSH_PROMISE with push disabled"),
    (frame(DATA, 0, 1, GRPC_MESSAGE), "sent DATA before the response headers"),
    (frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200), "refused the Version call (trailers-only"),
    (frame(HEADERS, END_HEADERS | PADDED, 1, b"\x05" + STATUS_200), "sent a HEADERS frame padded past its end"),
    (frame(HEADERS, 0, 1, STATUS_200) + frame(PING, 0, 0, bytes(8)), "sent PING inside a header block"),
    (frame(CONTINUATION, END_HEADERS, 1, b"\x00"), "sent CONTINUATION after a complete header block"),
    (RESPONSE + frame(HEADERS, END_HEADERS, 1, b"\x00"), "sent a second header block without ending the stream"),
    (RESPONSE + frame(DATA, PADDED, 1, b"\xff" + GRPC_MESSAGE), "sent a DATA frame padded past its end"),
    (RESPONSE + frame(DATA, 0, 1, b"\x02" + GRPC_MESSAGE[1:]), "compression flag 2, not 0 or 1"),
    (RESPONSE + frame(DATA, 0, 1, b"\x00\x40\x00\x00\x00"), "announced a Version answer of 1073741824 bytes"),
    (RESPONSE + frame(DATA, END_STREAM, 1, GRPC_MESSAGE[:-1]), "ended the Version call without a whole answer"),
    (RESPONSE + frame(DATA, 0, 1, GRPC_MESSAGE[:-1]) + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x00"),
     "ended the Version call without a whole answer"),
], ids=["16k-ping", "short-ping", "settings-not-6n", "settings-ack-payload",
        "oversize-header-alone", "short-rst", "reset", "short-goaway", "goaway", "ping-on-stream", "data-on-stream-3",
        "push-promise", "data-before-headers", "trailers-only", "headers-overpadded", "continuation-interrupted",
        "stray-continuation", "second-response", "data-overpadded", "bad-compression-flag", "huge-message",
        "end-stream-mid-message", "trailers-mid-message"])
def test_what_the_protocol_forbids_fails_the_probe(reply: bytes, fragment: str) -> None:
    with pytest.raises(ProbeError) as caught:
        read(SERVER_SETTINGS + reply)
    assert fragment in str(caught.value)


@pytest.mark.parametrize("flood", [
    frame(SETTINGS, 0, 0, bytes(6)), frame(PING, 0, 0, bytes(8)), frame(SETTINGS, 0, 0) + frame(PING, 0, 0, bytes(8)),
    frame(WINDOW_UPDATE, 0, 0, bytes(4)), frame(0xFA, 0, 0, bytes(16384)),
], ids=["settings", "pings", "both", "window-updates", "16k-unknown-frames"])
def test_a_flood_is_answered_a_few_times_then_fails_within_the_bounds(flood: bytes) -> None:
    reader = VersionReply()
    sent, fed = reader.feed(SERVER_SETTINGS)[0], 0
    with pytest.raises(ProbeError) as caught:
        while True:  # as much as the server will send: the reader must end it
            sent += reader.feed(flood)[0]
            fed += len(flood)
    assert "without answering the Version call" in str(caught.value)
    assert fed <= MAX_REPLY_BYTES and fed // len(flood) <= MAX_REPLY_FRAMES
    assert len(sent) <= MAX_ACKS * (len(SETTINGS_ACK) + len(PING_ACK))


def test_an_oversize_frame_fails_on_its_header_before_its_payload_comes() -> None:
    with pytest.raises(ProbeError, match="more than the 16384 allowed"):
        VersionReply().feed(SERVER_SETTINGS + (16385).to_bytes(3, "big") + bytes((0xFA, 0)) + bytes(4))


@pytest.mark.parametrize(("value", "prefix_bits", "encoded"), [
    (10, 5, bytes([10])),
    (1337, 5, bytes([31, 154, 10])),
    (42, 8, bytes([42])),
    (127, 7, bytes([127, 0])),
], ids=["fits-prefix", "rfc7541-c.1.2", "full-byte", "exactly-the-limit"])
def test_hpack_integers_follow_rfc_7541(value: int, prefix_bits: int, encoded: bytes) -> None:
    assert hpack_int(value, prefix_bits) == encoded


@pytest.mark.parametrize(("message", "fields"), [
    (VERSION_RESPONSE, {1: "0.1.0", 2: "containerd", 3: "v1.7.13", 4: "v1"}),
    (b"\x08\x96\x01" + proto_string(2, "crio"), {2: "crio"}),
    (proto_string(2, "containerd")[:-3], {2: "contain"}),
    (b"\x0d\x00\x00", {}),
], ids=["full", "skips-varints", "truncated", "unknown-wire-type"])
def test_version_answers_are_parsed_best_effort(message: bytes, fields: dict[int, str]) -> None:
    assert parse_version(message) == fields
