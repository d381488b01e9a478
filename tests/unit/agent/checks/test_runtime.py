"""Container runtime health against a real unix-socket server in the test, and restart counting from systemd."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import shutil
import socket
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agent.bounds import field_problems
from agent.checks import runtime
from agent.checks.runtime import FREQUENT_RESTART, UNHEALTHY, Config, ContainerRuntimeCheck
from agent.host import HostRoot
from agent.model import ConditionReport, Observation, Status
from agent.services.cri_wire import (
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PADDED,
    PING,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    VERSION_PATH,
    frame,
)
from agent.services.restarts import CommandError, RestartConfig
from tests.unit.agent.services.cri_replies import GRPC_MESSAGE, STATUS_200

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)
CONTAINERD = "/run/containerd/containerd.sock"
FAST = dt.timedelta(milliseconds=300)  # probe timeout for the hanging server: the test waits this long, no more
HANG_GUARD = 10  # seconds: a probe that outlives its timeout this long fails the test instead of hanging it


# Servers that never read and write without end (until the client goes): each frame repeated.
FLOODS = {"flood-16k-pings": frame(PING, 0, 0, bytes(16384)) + frame(SETTINGS, 0, 0),
          "flood-pings": frame(PING, 0, 0, bytes(8)) + frame(SETTINGS, 0, 0),
          "flood-settings": frame(SETTINGS, 0, 0, bytes(6)),
          "oversize": b"\xff\xff\xff" + bytes((PING, 0)) + bytes(4) + bytes(65536)}


def decode_literals(block: bytes) -> dict[str, str]:
    """Decode the client's header block: literal fields without indexing, raw strings shorter than 127 bytes."""
    headers, pos = {}, 0
    while pos < len(block):
        assert block[pos] == 0x00, "expected a literal header field without indexing, new name"
        pos += 1
        strings = []
        for _ in range(2):
            length = block[pos]
            assert length < 0x7F, "no Huffman coding and short strings"
            strings.append(block[pos + 1:pos + 1 + length].decode())
            pos += 1 + length
        headers[strings[0]] = strings[1]
    return headers


class FakeRuntime:
    """A CRI socket that answers like a gRPC server, or misbehaves the way `mode` says."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.request_headers: dict[str, str] = {}
        self.client_acked_settings = False

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            if self.mode == "close":
                return
            if self.mode == "http1":
                writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            if self.mode == "deaf":  # neither reads nor writes
                await asyncio.Event().wait()
            if self.mode in FLOODS:
                writer.write(frame(SETTINGS, 0, 0))
                with contextlib.suppress(ConnectionError):
                    while True:
                        writer.write(FLOODS[self.mode] * 8)
                        await writer.drain()
            assert await reader.readexactly(len(PREFACE)) == PREFACE
            if self.mode == "hang":
                await reader.read()  # until the client gives up and closes
                return
            writer.write(frame(SETTINGS, 0, 0, b"\x00\x03\x00\x00\x00\x64"))  # MAX_CONCURRENT_STREAMS=100
            while True:  # read the client's frames up to the end of its request
                header = await reader.readexactly(9)
                payload = await reader.readexactly(int.from_bytes(header[:3], "big"))
                if header[3] == HEADERS:
                    self.request_headers = decode_literals(payload)
                if header[3] == SETTINGS and header[4] & 1:
                    self.client_acked_settings = True
                if header[3] == DATA and header[4] & END_STREAM:
                    break
            writer.write(self.answer())
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while True:  # until the client closes; its SETTINGS ACK may come after its request
                    header = await reader.readexactly(9)
                    await reader.readexactly(int.from_bytes(header[:3], "big"))
                    self.client_acked_settings |= header[3] == SETTINGS and bool(header[4] & 1)
        finally:
            writer.close()

    def answer(self) -> bytes:
        if self.mode == "ok":
            return (frame(HEADERS, END_HEADERS, 1, STATUS_200) + frame(PING, 0, 0, bytes(8))
                    + frame(DATA, 0, 1, GRPC_MESSAGE) + frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x00"))
        if self.mode == "split-padded":  # the message in two DATA frames, the first one padded
            first, rest = GRPC_MESSAGE[:7], GRPC_MESSAGE[7:]
            return (frame(HEADERS, END_HEADERS, 1, STATUS_200)
                    + frame(DATA, PADDED, 1, bytes((3,)) + first + bytes(3)) + frame(DATA, END_STREAM, 1, rest))
        if self.mode == "trailers-only":
            return frame(HEADERS, END_HEADERS | END_STREAM, 1, STATUS_200)
        if self.mode == "reset":
            return frame(RST_STREAM, 0, 1, (2).to_bytes(4, "big"))
        assert self.mode == "goaway"
        return frame(GOAWAY, 0, 0, (1).to_bytes(4, "big") + (11).to_bytes(4, "big"))


@pytest.fixture
def root() -> Iterator[Path]:
    # not tmp_path: a unix socket path must fit in 108 bytes, and pytest's temporary paths can be long
    path = Path(tempfile.mkdtemp(prefix="nm-", dir="/tmp"))
    yield path
    shutil.rmtree(path)


def health(root: Path, mode: str | None, config: Config | None = None, host_socket: str = CONTAINERD,
           ) -> tuple[ConditionReport, FakeRuntime]:
    """One observation of a runtime that behaves as `mode` says (None: no server at all)."""
    fake = FakeRuntime(mode or "")

    async def main() -> Observation:
        check = ContainerRuntimeCheck(config or Config(probe_timeout=FAST), HostRoot(root))
        if mode is None:
            return await check.observe(NOW)
        path = root / host_socket.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        server = await asyncio.start_unix_server(fake.handle, path=str(path))
        async with server, asyncio.timeout(HANG_GUARD):
            return await check.observe(NOW)

    observation = asyncio.run(main())
    assert [c.type for c in observation.conditions] == list(ContainerRuntimeCheck.condition_types)
    return next(c for c in observation.conditions if c.type == UNHEALTHY), fake


def test_a_runtime_that_answers_the_cri_version_call_is_healthy(root: Path) -> None:
    report, fake = health(root, "ok")
    assert (report.status, report.reason) == (Status.FALSE, "ContainerRuntimeIsHealthy")
    assert report.message == f"containerd v1.7.13 answers CRI Version on {CONTAINERD}"
    assert fake.request_headers == {":method": "POST", ":scheme": "http", ":path": VERSION_PATH,
                                    ":authority": "localhost", "content-type": "application/grpc", "te": "trailers"}
    assert fake.client_acked_settings


def test_a_version_answer_split_over_padded_data_frames_is_reassembled(root: Path) -> None:
    report, _ = health(root, "split-padded")
    assert report.message.startswith("containerd v1.7.13 answers")


@pytest.mark.parametrize(("mode", "fragment"), [
    ("hang", "did not answer a CRI Version call within 300ms"),
    ("close", "closed the connection without answering"),
    ("http1", "answered with something that is not HTTP/2"),
    ("trailers-only", "refused the Version call"),
    ("reset", "reset the Version call (error code 2)"),
    ("goaway", "sent GOAWAY (error code 11)"),
], ids=["hangs", "closes", "speaks-http1", "grpc-error", "resets-stream", "goes-away"])
def test_a_runtime_that_does_not_answer_properly_is_unhealthy(root: Path, mode: str, fragment: str) -> None:
    report, _ = health(root, mode)
    assert (report.status, report.reason) == (Status.TRUE, "ContainerRuntimeUnhealthy")
    assert report.message.startswith(f"{CONTAINERD}: " if mode != "hang" else CONTAINERD)
    assert fragment in report.message


@pytest.mark.parametrize(("mode", "fragment"), [
    ("flood-16k-pings", "sent a PING frame of 16384 octets, not 8 (FRAME_SIZE_ERROR)"),
    ("flood-pings", "sent more than 64 frames or 64 KiB without answering the Version call"),
    ("flood-settings", "sent more than 64 frames or 64 KiB without answering the Version call"),
    ("oversize", "sent a frame of 16777215 octets, more than the 16384 allowed (FRAME_SIZE_ERROR)"),
], ids=["16k-pings", "pings", "settings", "oversize-frame"])
def test_a_server_that_floods_and_never_reads_fails_the_probe_and_its_socket_is_closed(
        root: Path, monkeypatch: pytest.MonkeyPatch, mode: str, fragment: str) -> None:
    sockets = record_client_sockets(monkeypatch)
    report, _ = health(root, mode, Config())  # the default 5 s timeout: the flood, not the timeout, ends it
    assert (report.status, report.reason) == (Status.TRUE, "ContainerRuntimeUnhealthy")
    assert report.message == f"{CONTAINERD}: {fragment}"
    assert [s.fileno() for s in sockets] == [-1]


def test_a_probe_whose_writes_the_server_never_reads_still_ends_at_its_timeout(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sockets = record_client_sockets(monkeypatch)
    monkeypatch.setattr(runtime, "version_request", lambda: bytes(8 << 20))  # more than any socket buffer holds
    report, _ = health(root, "deaf")
    assert report.message == f"{CONTAINERD} did not answer a CRI Version call within 300ms"
    assert [s.fileno() for s in sockets] == [-1]


def record_client_sockets(monkeypatch: pytest.MonkeyPatch) -> list[socket.socket]:
    """The probe's connections, as they are opened: each one's socket, to see it closed afterwards."""
    sockets: list[socket.socket] = []
    connect = asyncio.open_unix_connection

    async def recording(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await connect(path)
        sockets.append(writer.get_extra_info("socket"))
        return reader, writer

    monkeypatch.setattr(asyncio, "open_unix_connection", recording)
    return sockets


def test_a_missing_socket_is_unhealthy_and_a_socket_nobody_listens_on_too(root: Path) -> None:
    report, _ = health(root, None)
    assert (report.status, report.reason) == (Status.TRUE, "ContainerRuntimeSocketMissing")

    stale = root / CONTAINERD.lstrip("/")
    stale.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(stale))  # a socket file left behind by a dead runtime
    report, _ = health(root, None)
    assert report.status is Status.TRUE
    assert "cannot connect: Connection refused" in report.message


def test_a_socket_the_agent_may_not_open_is_unknown_not_unhealthy(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def denied(path: str) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(asyncio, "open_unix_connection", denied)  # root ignores socket modes, so fake the refusal
    report, _ = health(root, "ok")
    assert (report.status, report.reason) == (Status.UNKNOWN, "ContainerRuntimeHealthUnknown")
    assert report.message == f"the agent may not connect to {CONTAINERD}: Permission denied"


def test_a_host_root_too_long_for_a_socket_address_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = tmp_path / ("x" * 100)
    (deep / "run/containerd").mkdir(parents=True)
    monkeypatch.chdir(deep / "run/containerd")  # bind by a relative name: the absolute path is too long
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind("containerd.sock")
    report = asyncio.run(ContainerRuntimeCheck(Config(), HostRoot(deep)).observe(NOW)).conditions[0]
    assert (report.status, report.reason) == (Status.UNKNOWN, "ContainerRuntimeHealthUnknown")
    assert report.message.endswith("is too long for a unix socket address (107 bytes)")


def test_the_runtime_recovers_when_it_answers_again(root: Path) -> None:
    assert health(root, "hang")[0].status is Status.TRUE
    (root / CONTAINERD.lstrip("/")).unlink()
    assert health(root, "ok")[0].status is Status.FALSE


def test_crio_is_found_through_an_absolute_var_run_link_that_stays_under_the_host_root(root: Path) -> None:
    (root / "var").mkdir()
    (root / "var/run").symlink_to("/run")  # as on Ubuntu; followed naively it would leave the host root
    report, _ = health(root, "ok", host_socket="/run/crio/crio.sock")
    assert report.status is Status.FALSE
    assert report.message.endswith("on /var/run/crio/crio.sock")
    assert HostRoot(root).resolve("/var/run/../run/crio/crio.sock") == root / "run/crio/crio.sock"


class FakeSystemctl:
    """`systemctl show` output per call; an exception instance is raised instead."""

    def __init__(self) -> None:
        self.output: str | Exception = ""
        self.calls: list[list[str]] = []

    def set(self, containerd: int, crio: str = "not-found") -> None:
        self.output = f"LoadState=loaded\nNRestarts={containerd}\n\nLoadState={crio}\nNRestarts=0\n"

    async def __call__(self, argv: Sequence[str]) -> str:
        self.calls.append(list(argv))
        if isinstance(self.output, Exception):
            raise self.output
        return self.output


def restart_check(root: Path, systemctl: FakeSystemctl) -> ContainerRuntimeCheck:
    config = Config(restarts=RestartConfig(source="systemd"))  # no units: the check's own, containerd and crio
    return ContainerRuntimeCheck(config, HostRoot(root), run=systemctl)


def restarts(check: ContainerRuntimeCheck, now: dt.datetime) -> ConditionReport:
    observation = asyncio.run(check.observe(now))
    return next(c for c in observation.conditions if c.type == FREQUENT_RESTART)


def test_nrestarts_rising_five_times_within_twenty_minutes_is_frequent_and_ages_out(root: Path) -> None:
    systemctl = FakeSystemctl()
    check = restart_check(root, systemctl)
    systemctl.set(7)
    assert restarts(check, NOW).status is Status.FALSE  # restarts before the agent started are a baseline
    assert systemctl.calls[0] == ["systemctl", "show", "--property=LoadState,NRestarts", "--", "containerd", "crio"]
    systemctl.set(9)
    assert restarts(check, NOW + MINUTE).status is Status.FALSE
    systemctl.set(12)
    report = restarts(check, NOW + 2 * MINUTE)
    assert (report.status, report.reason) == (Status.TRUE, "FrequentContainerRuntimeRestart")
    assert report.message == "container runtime restarted 5 time(s) in the last 20m0s (limit 5)"
    assert restarts(check, NOW + 21 * MINUTE).status is Status.TRUE  # the last three are still inside
    report = restarts(check, NOW + 23 * MINUTE)
    assert (report.status, report.reason) == (Status.FALSE, "NoFrequentContainerRuntimeRestart")


def test_a_counter_reset_is_a_new_baseline(root: Path) -> None:
    systemctl = FakeSystemctl()
    check = restart_check(root, systemctl)
    for minute, count in enumerate((4, 0, 2)):
        systemctl.set(count)
        report = restarts(check, NOW + minute * MINUTE)
    assert report.message.startswith("container runtime restarted 2 time(s)")


@pytest.mark.parametrize(("output", "fragment"), [
    ("LoadState=not-found\nNRestarts=0\n\nLoadState=not-found\nNRestarts=0\n", "none of the units containerd, crio"),
    ("LoadState=loaded\nNRestarts=[not set]\n", "no NRestarts number"),
    ("LoadState=loaded\n", "no NRestarts number"),
    (FileNotFoundError(2, "No such file or directory", "systemctl"), "No such file or directory"),
    (CommandError("systemctl exited with 1: Failed to connect to bus"), "Failed to connect to bus"),
], ids=["no-unit-loaded", "garbage-count", "old-systemd", "no-systemctl", "no-bus"])
def test_unusable_systemd_answers_make_the_restart_condition_unknown(
        root: Path, output: str | Exception, fragment: str) -> None:
    systemctl = FakeSystemctl()
    systemctl.output = output
    report = restarts(restart_check(root, systemctl), NOW)
    assert (report.status, report.reason) == (Status.UNKNOWN, "RestartsUnknown")
    assert fragment in report.message


@pytest.mark.parametrize(("config", "errors"), [
    (Config(), []),
    (Config(sockets=()), ["sockets: must not be empty"]),
    (Config(sockets=("run/containerd.sock",)), ["sockets[0]: must be an absolute path without a trailing slash, . or "
                                                ".., got 'run/containerd.sock'"]),
    (Config(probe_timeout=dt.timedelta(0)), ['probeTimeout: must be positive, got 0s']),
    (Config(probe_timeout=dt.timedelta(seconds=10)), ['probeTimeout: must be shorter than timeout (10s), got 10s']),
    (Config(restarts=RestartConfig(source="journal", process_names=("containerd",))),
     ["restarts.source: must be one of proc, systemd, got 'journal'"]),
    (Config(restarts=RestartConfig(process_names=("/usr/bin/containerd",))),
     ["restarts.processNames[0]: must be a plain name, got '/usr/bin/containerd'"]),
    (Config(restarts=RestartConfig(process_names=("crio",), max_restarts=0, window=dt.timedelta(0))),
     ['restarts.maxRestarts: must be at least 1, got 0',
      'restarts.window: must be positive, got 0s']),
], ids=["defaults", "no-sockets", "relative-socket", "zero-probe-timeout", "probe-timeout-too-long",
        "unknown-source", "path-as-process-name", "bad-threshold-and-window"])
def test_validate_reports_each_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
