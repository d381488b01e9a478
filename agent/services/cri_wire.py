"""One CRI `runtime.v1.RuntimeService/Version` call as bytes on an HTTP/2 connection (RFC 9113), with no I/O here.

The request: the preface, our SETTINGS (server push off), the HEADERS as HPACK literals without Huffman coding (any
decoder must accept them) and the DATA of one unary gRPC call. The reply is judged by its frames alone: a DATA
frame carrying a whole gRPC message on our stream is success; a trailers-only reply, RST_STREAM or GOAWAY is
failure. Response headers are never decoded, which spares an HPACK decoder.

The reader takes only what the protocol allows, and only so much of it: a frame longer than the 16 KiB we accept,
a PING that is not 8 octets, a SETTINGS payload not a multiple of 6 and the like end the probe (each is a
connection error in RFC 9113); it acknowledges at most a few SETTINGS and PINGs, and a reply of more frames or
bytes than a Version answer needs (a handful, a few hundred bytes) is a failure. So a server that floods, however
it floods, costs one read buffer and a few hundred bytes of acknowledgements, never more. Any violation is a
`ProbeError`; nothing else leaves `VersionReply.feed`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
FRAME_NAMES = ("DATA", "HEADERS", "PRIORITY", "RST_STREAM", "SETTINGS", "PUSH_PROMISE", "PING", "GOAWAY",
               "WINDOW_UPDATE", "CONTINUATION")
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY_FLAG = 0x1, 0x1, 0x4, 0x8, 0x20
ENABLE_PUSH = 0x2
MAX_FRAME = 16384  # the default SETTINGS_MAX_FRAME_SIZE; we never advertise more, so a longer frame is an error
FIXED_LENGTH = {PRIORITY: 5, RST_STREAM: 4, PING: 8, WINDOW_UPDATE: 4}  # RFC 9113 §6.3, §6.4, §6.7, §6.9
CONNECTION_FRAMES = (SETTINGS, PING, GOAWAY)  # stream 0 only
STREAM_FRAMES = (DATA, HEADERS, RST_STREAM, CONTINUATION)  # our stream 1 only: the server may open none
# A real Version reply (containerd, CRI-O) is about 8 frames and 300 bytes. These leave room for chatty servers
# and bound what a hostile one can make us read, buffer and write.
MAX_REPLY_FRAMES = 64
MAX_REPLY_BYTES = 64 * 1024
MAX_ACKS = 4  # of each of SETTINGS and PING; later ones go unanswered and count against the bounds above
MAX_MESSAGE = 4096  # a VersionResponse is four short strings
VERSION_PATH = "/runtime.v1.RuntimeService/Version"


class ProbeError(Exception):
    """The runtime did not answer properly; the message says how."""


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big") + payload


def hpack_int(value: int, prefix_bits: int) -> bytes:
    """RFC 7541 §5.1 integer with an N-bit prefix (first-byte flag bits left zero)."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes((value,))
    out = [limit]
    value -= limit
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _hpack_literal(name: str, value: str) -> bytes:
    """RFC 7541 §6.2.2 literal header field without indexing, new name, raw (non-Huffman) strings."""
    encoded = [s.encode() for s in (name, value)]
    return b"\x00" + b"".join(hpack_int(len(s), 7) + s for s in encoded)


def version_request() -> bytes:
    """Everything the client sends: preface, SETTINGS, the HEADERS and the DATA of one unary call."""
    headers = [(":method", "POST"), (":scheme", "http"), (":path", VERSION_PATH), (":authority", "localhost"),
               ("content-type", "application/grpc"), ("te", "trailers")]
    block = b"".join(_hpack_literal(n, v) for n, v in headers)
    message = b"\x00" + (0).to_bytes(4, "big")  # uncompressed, empty VersionRequest
    no_push = ENABLE_PUSH.to_bytes(2, "big") + (0).to_bytes(4, "big")  # so a PUSH_PROMISE is an error, not state
    return (PREFACE + frame(SETTINGS, 0, 0, no_push) + frame(HEADERS, END_HEADERS, 1, block)
            + frame(DATA, END_STREAM, 1, message))


def parse_version(message: bytes) -> dict[int, str]:
    """Protobuf string fields of a VersionResponse (2 = runtime_name, 3 = runtime_version); best effort."""
    fields: dict[int, str] = {}
    pos = 0

    def varint() -> int:
        nonlocal pos
        result, shift = 0, 0
        while True:
            byte = message[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return result

    try:
        while pos < len(message):
            key = varint()
            if key & 7 == 2:
                length = varint()
                fields[key >> 3] = message[pos:pos + length].decode(errors="replace")
                pos += length
            elif key & 7 == 0:
                varint()
            else:  # VersionResponse has only strings; anything else means we cannot read on
                break
    except IndexError:
        pass
    return fields


def _unpadded(kind: int, flags: int, payload: bytes) -> bytes:
    """DATA's or HEADERS' payload without its pad length, padding and (HEADERS) priority fields (§6.1, §6.2)."""
    skip = 5 if kind == HEADERS and flags & PRIORITY_FLAG else 0
    if flags & PADDED:
        if not payload or payload[0] + 1 + skip > len(payload):
            raise ProbeError(f"sent a {FRAME_NAMES[kind]} frame padded past its end (PROTOCOL_ERROR)")
        return payload[1 + skip:len(payload) - payload[0]]
    if skip > len(payload):
        raise ProbeError(f"sent a {FRAME_NAMES[kind]} frame too short for its priority (FRAME_SIZE_ERROR)")
    return payload[skip:]


def _check_frame(kind: int, flags: int, stream: int, payload: bytes, *, continuing: bool) -> None:
    """What RFC 9113 forbids of a frame whatever our stream's state: its length, its stream, its place."""
    name = FRAME_NAMES[kind] if kind < len(FRAME_NAMES) else f"type {kind}"
    if continuing and (kind != CONTINUATION or stream != 1):  # §6.10: nothing may come between
        raise ProbeError(f"sent {name} inside a header block (PROTOCOL_ERROR)")
    if kind in FIXED_LENGTH and len(payload) != FIXED_LENGTH[kind]:
        raise ProbeError(f"sent a {name} frame of {len(payload)} octets, not {FIXED_LENGTH[kind]} (FRAME_SIZE_ERROR)")
    bad_settings = kind == SETTINGS and (len(payload) % 6 or (flags & ACK and payload))  # §6.5: 6-octet entries
    if bad_settings or (kind == GOAWAY and len(payload) < 8):
        raise ProbeError(f"sent a {name} frame of {len(payload)} octets (FRAME_SIZE_ERROR)")
    if (kind in CONNECTION_FRAMES and stream != 0) or (kind in STREAM_FRAMES and stream != 1):
        raise ProbeError(f"sent {name} on stream {stream} (PROTOCOL_ERROR)")


@dataclass
class VersionReply:
    """The server's side of the call, read as it arrives: `feed` each chunk read from the socket."""

    _buffer: bytearray = field(default_factory=bytearray)
    _frames: int = 0
    _bytes: int = 0
    _acks: dict[int, int] = field(default_factory=lambda: {SETTINGS: 0, PING: 0})
    _responded: bool = False  # the response's HEADERS came
    _continuing: bool = False  # a header block on stream 1 awaits its CONTINUATION
    _message: bytearray = field(default_factory=bytearray)  # stream 1's DATA so far, padding taken off
    _whole: bool = False  # _message holds a whole gRPC message

    def feed(self, data: bytes) -> tuple[bytes, str | None]:
        """Read the whole frames so far: what to send back (acknowledgements), and the runtime's "name version"
        once a whole gRPC message has come. A frame split across chunks waits for its rest."""
        self._buffer += data
        out = b""
        while len(self._buffer) >= 9:
            length, kind, flags = int.from_bytes(self._buffer[:3], "big"), self._buffer[3], self._buffer[4]
            stream = int.from_bytes(self._buffer[5:9], "big") & 0x7FFFFFFF
            self._check_header(length, kind, flags)
            if len(self._buffer) < 9 + length:
                break
            payload = bytes(self._buffer[9:9 + length])
            del self._buffer[:9 + length]
            out += self._read(kind, flags, stream, payload)
            if self._whole:
                return out, self._answer()
        return out, None

    def _check_header(self, length: int, kind: int, flags: int) -> None:
        """What a frame's header alone shows, before its payload is waited for."""
        if self._frames == 0 and (kind != SETTINGS or flags & ACK):  # §3.4: the server's preface is SETTINGS
            raise ProbeError("answered with something that is not HTTP/2")
        if length > MAX_FRAME:
            raise ProbeError(f"sent a frame of {length} octets, more than the {MAX_FRAME} allowed (FRAME_SIZE_ERROR)")
        if self._frames + 1 > MAX_REPLY_FRAMES or self._bytes + 9 + length > MAX_REPLY_BYTES:
            raise ProbeError(f"sent more than {MAX_REPLY_FRAMES} frames or {MAX_REPLY_BYTES // 1024} KiB without "
                             "answering the Version call")

    def _read(self, kind: int, flags: int, stream: int, payload: bytes) -> bytes:
        """One whole frame: the acknowledgement it calls for, if any; ProbeError for what RFC 9113 forbids."""
        self._frames += 1
        self._bytes += 9 + len(payload)
        _check_frame(kind, flags, stream, payload, continuing=self._continuing)
        if kind == SETTINGS:
            return b"" if flags & ACK else self._ack(SETTINGS, b"")
        if kind == PING:
            return b"" if flags & ACK else self._ack(PING, payload)
        if kind == GOAWAY:
            raise ProbeError(f"sent GOAWAY (error code {int.from_bytes(payload[4:8], 'big')})")
        if kind == PUSH_PROMISE:
            raise ProbeError("sent PUSH_PROMISE with push disabled (PROTOCOL_ERROR)")
        if kind == RST_STREAM:
            raise ProbeError(f"reset the Version call (error code {int.from_bytes(payload, 'big')})")
        if kind in (HEADERS, CONTINUATION):
            self._header_block(kind, flags, payload)
        elif kind == DATA:
            self._data(flags, payload)
        return b""  # PRIORITY, WINDOW_UPDATE and unknown types: nothing to do (§5.5)

    def _ack(self, kind: int, payload: bytes) -> bytes:
        self._acks[kind] += 1
        return frame(kind, ACK, 0, payload) if self._acks[kind] <= MAX_ACKS else b""

    def _header_block(self, kind: int, flags: int, payload: bytes) -> None:
        if kind == CONTINUATION and not self._continuing:
            raise ProbeError("sent CONTINUATION after a complete header block (PROTOCOL_ERROR)")
        if kind == HEADERS:
            _unpadded(kind, flags, payload)
            if flags & END_STREAM and not self._responded:
                raise ProbeError("refused the Version call (trailers-only gRPC error; is the CRI plugin enabled?)")
            if flags & END_STREAM:
                raise ProbeError("ended the Version call without a whole answer")
            if self._responded and not flags & END_STREAM:  # §8.1: after the response, only trailers may come
                raise ProbeError("sent a second header block without ending the stream (PROTOCOL_ERROR)")
            self._responded = True
        self._continuing = not flags & END_HEADERS

    def _data(self, flags: int, payload: bytes) -> None:
        if not self._responded:
            raise ProbeError("sent DATA before the response headers (PROTOCOL_ERROR)")
        self._message += _unpadded(DATA, flags, payload)
        if len(self._message) >= 5:
            if self._message[0] > 1:
                raise ProbeError(f"sent a gRPC message with compression flag {self._message[0]}, not 0 or 1")
            size = int.from_bytes(self._message[1:5], "big")
            if size > MAX_MESSAGE:
                raise ProbeError(f"announced a Version answer of {size} bytes, more than {MAX_MESSAGE}")
            self._whole = len(self._message) >= 5 + size
        if flags & END_STREAM and not self._whole:
            raise ProbeError("ended the Version call without a whole answer")

    def _answer(self) -> str:
        size = int.from_bytes(self._message[1:5], "big")
        fields = parse_version(bytes(self._message[5:5 + size])) if self._message[0] == 0 else {}  # 1: compressed
        return " ".join(f for f in (fields.get(2), fields.get(3)) if f) or "runtime"
