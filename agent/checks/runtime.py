"""Container runtime health: `ContainerRuntimeUnhealthy` and `FrequentContainerRuntimeRestart`.

Health signal: the first CRI socket among `sockets` that exists (under the host root) must answer a gRPC
`runtime.v1.RuntimeService/Version` call within `probe_timeout`. That is what `crictl version` does, and it proves
more than a connect: the runtime's gRPC server is serving and its CRI plugin is loaded. The call is spoken with
the standard library: HTTP/2 framing by hand, request headers as HPACK literals without Huffman coding (any
decoder must accept them), and the reply judged by its frames alone — a DATA frame carrying a gRPC message on
our stream is success; a trailers-only reply, RST_STREAM or GOAWAY is failure. The response headers are never
decoded, which spares an HPACK decoder. The answer is parsed for the runtime's name and version for the message.
One failed probe is enough (as node-problem-detector's health-checker): a runtime that cannot answer a Version
call within seconds cannot start pods either. Not the runtime's fault, so Unknown rather than True: the agent may
not open the socket, or host root + socket path exceed the 107 bytes a unix socket address holds.

Restart frequency comes from `restarts.RestartMonitor` (see there for the `proc` and `systemd` sources).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from agent.bounds import ZERO, Bounds, bounded, normal_absolute_path
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.services.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command
from nodemedic_common.durations import format_duration

UNHEALTHY = "ContainerRuntimeUnhealthy"
FREQUENT_RESTART = "FrequentContainerRuntimeRestart"

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS, PADDED = 0x1, 0x1, 0x4, 0x8
MAX_FRAME = 16384  # the default SETTINGS_MAX_FRAME_SIZE; we never advertise more
MAX_UNIX_PATH = 107  # sizeof(sockaddr_un.sun_path) - 1 on Linux
VERSION_PATH = "/runtime.v1.RuntimeService/Version"
RESTARTS = RestartConfig(process_names=("containerd", "crio"), units=("containerd", "crio"))


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    sockets: tuple[str, ...] = bounded(("/run/containerd/containerd.sock", "/var/run/crio/crio.sock"),
                                       Bounds(not_empty=True, form=normal_absolute_path))
    probe_timeout: dt.timedelta = bounded(dt.timedelta(seconds=5), Bounds(above=ZERO, shorter_than="timing.timeout"))
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)


class ProbeError(Exception):
    """The runtime did not answer properly; the message says how."""


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return len(payload).to_bytes(3, "big") + bytes((kind, flags)) + stream.to_bytes(4, "big") + payload


def _hpack_int(value: int, prefix_bits: int) -> bytes:
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
    return b"\x00" + b"".join(_hpack_int(len(s), 7) + s for s in encoded)


def version_request() -> bytes:
    """Everything the client sends: preface, empty SETTINGS, the HEADERS and the DATA of one unary call."""
    headers = [(":method", "POST"), (":scheme", "http"), (":path", VERSION_PATH), (":authority", "localhost"),
               ("content-type", "application/grpc"), ("te", "trailers")]
    block = b"".join(_hpack_literal(n, v) for n, v in headers)
    message = b"\x00" + (0).to_bytes(4, "big")  # uncompressed, empty VersionRequest
    return (PREFACE + _frame(SETTINGS, 0, 0) + _frame(HEADERS, END_HEADERS, 1, block)
            + _frame(DATA, END_STREAM, 1, message))


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


async def probe(path: Path) -> str:
    """Call Version on the CRI socket at `path`; the runtime's "name version" on success, ProbeError otherwise."""
    try:
        reader, writer = await asyncio.open_unix_connection(str(path))
    except PermissionError:  # our privileges, not the runtime's health: the caller reports Unknown
        raise
    except OSError as exc:
        raise ProbeError(f"cannot connect: {exc.strerror or exc}") from exc
    try:
        return await _call_version(reader, writer)
    except (asyncio.IncompleteReadError, ConnectionError) as exc:
        raise ProbeError("closed the connection without answering") from exc
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


async def _call_version(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> str:
    writer.write(version_request())
    await writer.drain()
    data, first = b"", True
    while True:
        header = await reader.readexactly(9)
        length, kind, flags = int.from_bytes(header[:3], "big"), header[3], header[4]
        stream = int.from_bytes(header[5:], "big") & 0x7FFFFFFF
        # RFC 9113 §3.4: the server's preface is a SETTINGS frame; an HTTP/1 answer fails one of these
        if length > MAX_FRAME or (first and kind != SETTINGS):
            raise ProbeError("answered with something that is not HTTP/2")
        first = False
        payload = await reader.readexactly(length)
        if kind == SETTINGS and not flags & ACK:
            writer.write(_frame(SETTINGS, ACK, 0))
        elif kind == PING and not flags & ACK:
            writer.write(_frame(PING, ACK, 0, payload))
        elif kind == GOAWAY:
            raise ProbeError(f"sent GOAWAY (error code {int.from_bytes(payload[4:8], 'big')})")
        elif kind == RST_STREAM and stream == 1:
            raise ProbeError(f"reset the Version call (error code {int.from_bytes(payload[:4], 'big')})")
        elif kind == DATA and stream == 1:
            if flags & PADDED and payload:  # pad length byte, data, padding
                payload = payload[1:len(payload) - payload[0]]
            data += payload
            size = int.from_bytes(data[1:5], "big")
            if len(data) >= 5 + size:  # one whole length-prefixed gRPC message
                fields = parse_version(data[5:5 + size]) if data[0] == 0 else {}  # 1 = compressed: no details
                return " ".join(f for f in (fields.get(2), fields.get(3)) if f) or "runtime"
        elif kind == HEADERS and stream == 1 and flags & END_STREAM and not data:
            raise ProbeError("refused the Version call (trailers-only gRPC error; is the CRI plugin enabled?)")


class ContainerRuntimeCheck:
    name = "runtime"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host
        self._restarts = RestartMonitor(config.restarts, host, defaults=RESTARTS, condition_type=FREQUENT_RESTART,
                                        subject="container runtime", run=run, clock_ticks=clock_ticks)

    async def observe(self, now: dt.datetime) -> Observation:
        return Observation(self.name, now, conditions=(await self._health(), await self._restarts.observe(now)))

    async def _health(self) -> ConditionReport:
        socket = self._find_socket()
        if socket is None:
            return ConditionReport(UNHEALTHY, Status.TRUE, "ContainerRuntimeSocketMissing",
                                   f"no CRI socket at {', '.join(self._config.sockets)}")
        host_path, path = socket
        if len(os.fsencode(path)) > MAX_UNIX_PATH:  # a long --host-root, not the runtime's fault
            return ConditionReport(UNHEALTHY, Status.UNKNOWN, "ContainerRuntimeHealthUnknown",
                                   f"{path} is too long for a unix socket address ({MAX_UNIX_PATH} bytes)")
        timeout = self._config.probe_timeout
        try:
            async with asyncio.timeout(timeout.total_seconds()):
                runtime = await probe(path)
        except TimeoutError:
            message = f"{host_path} did not answer a CRI Version call within {format_duration(timeout)}"
        except PermissionError as exc:
            return ConditionReport(UNHEALTHY, Status.UNKNOWN, "ContainerRuntimeHealthUnknown",
                                   f"the agent may not connect to {host_path}: {exc.strerror or exc}")
        except ProbeError as exc:
            message = f"{host_path}: {exc}"
        else:
            return ConditionReport(UNHEALTHY, Status.FALSE, "ContainerRuntimeIsHealthy",
                                   f"{runtime} answers CRI Version on {host_path}")
        return ConditionReport(UNHEALTHY, Status.TRUE, "ContainerRuntimeUnhealthy", message)

    def _find_socket(self) -> tuple[str, Path] | None:
        for host_path in self._config.sockets:
            try:
                path = self._host.resolve(host_path)
                if stat.S_ISSOCK(path.stat().st_mode):
                    return host_path, path
            except OSError:  # absent, or a dangling link: try the next candidate
                continue
        return None
