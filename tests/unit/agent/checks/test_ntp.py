"""NTPProblem: the kernel's sync state and the offset against configured servers or the time daemon's, with injected
sources and fixture host roots."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import ntplib
import pytest

from agent.bounds import field_problems
from agent.checks import ntp
from agent.checks.ntp import (
    CLOCK_STATES,
    STA_UNSYNC,
    TIME_ERROR,
    Config,
    KernelClock,
    NTPProblem,
    query_ntp,
    read_kernel_clock,
    split_server,
)
from agent.host import HostRoot
from agent.model import Check, CheckTiming, ConditionReport, Status
from agent.sensors.ntp_daemon_servers import DaemonServers

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
SYNCED = KernelClock(state=0, status=0x2001)  # TIME_OK, STA_PLL | STA_NANO
UNSYNCED = KernelClock(state=TIME_ERROR, status=STA_UNSYNC)
SERVERS = ("ntp-a.internal", "ntp-b.internal", "ntp-c.internal")
NO_DAEMON = HostRoot(Path("/nonexistent/nodemedic-test-host"))  # no time daemon file: the machine's own are not read


def by_server(answers: dict[str, float | Exception]) -> dict[str, float | Exception]:
    """{"a": 0.8} -> {"ntp-a.internal": 0.8}: short keys keep the tables readable."""
    return {f"ntp-{key}.internal": answer for key, answer in answers.items()}


class FakeSources:
    """The kernel clock and each server's answer (an offset in seconds or an exception), changeable mid-test.
    Servers not named answer +10 ms."""

    def __init__(self, clock: KernelClock | OSError = SYNCED, **answers: float | Exception) -> None:
        self.clock = clock
        self.answers: dict[str, float | Exception] = {**dict.fromkeys(SERVERS, 0.01), **by_server(answers)}
        self.asked: list[tuple[str, float]] = []
        self.threads: list[threading.Thread] = []

    def adjtimex(self) -> KernelClock:
        if isinstance(self.clock, OSError):
            raise self.clock
        return self.clock

    def query(self, server: str, timeout: float) -> float:
        self.asked.append((server, timeout))
        self.threads.append(threading.current_thread())
        answer = self.answers[server]
        if isinstance(answer, Exception):
            raise answer
        return answer


def make(fake: FakeSources, config: Config | None = None, host: HostRoot = NO_DAEMON) -> NTPProblem:
    return NTPProblem(config or Config(servers=SERVERS), host, adjtimex=fake.adjtimex, query=fake.query)


def observe(check: NTPProblem, now: dt.datetime = NOW) -> ConditionReport:
    obs = asyncio.run(check.observe(now))
    assert (obs.check, obs.at, obs.error, obs.events) == ("ntp", now, "", ())
    (report,) = obs.conditions
    return report


UNREACHABLE = {s: OSError(111, "Connection refused") for s in "abc"}


def test_the_check_has_the_shape_the_supervisor_runs() -> None:
    config = Config()
    check: Check = NTPProblem(config, HostRoot())
    assert (check.name, check.condition_types, check.timing) == ("ntp", ("NTPProblem",), config.timing)
    assert (config.servers, config.max_offset, config.timing.interval, config.kernel_sync) == (
        (), dt.timedelta(milliseconds=500), dt.timedelta(seconds=60), True)


@pytest.mark.parametrize(("clock", "answers", "reason"), [
    pytest.param(UNSYNCED, {}, "ClockUnsynchronized", id="kernel-unsynchronised"),
    pytest.param(KernelClock(state=0, status=STA_UNSYNC), {}, "ClockUnsynchronized", id="sta-unsync-alone"),
    pytest.param(KernelClock(state=TIME_ERROR, status=0), {}, "ClockUnsynchronized", id="time-error-alone"),
    pytest.param(SYNCED, {"a": 0.8}, "ClockOffsetTooLarge", id="node-behind-by-800ms"),
    pytest.param(SYNCED, {"a": -0.501}, "ClockOffsetTooLarge", id="node-ahead-by-501ms"),
    pytest.param(SYNCED, UNREACHABLE, "NTPServerUnreachable", id="no-server-answers"),
    pytest.param(SYNCED, {"a": float("nan"), "b": TimeoutError(), "c": float("inf")}, "NTPServerUnreachable",
                 id="no-usable-answer"),
])
def test_ntp_problem_turns_true_on_the_fault_and_false_once_it_is_gone(
        clock: KernelClock, answers: dict[str, float | Exception], reason: str) -> None:
    fake = FakeSources()
    check = make(fake)
    assert observe(check).status is Status.FALSE
    fake.clock, fake.answers = clock, {**fake.answers, **by_server(answers)}
    report = observe(check)
    assert (report.status, report.reason) == (Status.TRUE, reason)
    fake.clock, fake.answers = SYNCED, dict.fromkeys(SERVERS, 0.002)
    report = observe(check)
    assert (report.status, report.reason) == (Status.FALSE, "ClockSynchronized")


def test_servers_are_tried_in_order_until_one_answers_each_in_a_worker_thread() -> None:
    fake = FakeSources(a=OSError(101, "Network is unreachable"), b=0.125)
    report = observe(make(fake))
    assert fake.asked == [("ntp-a.internal", 2.0), ("ntp-b.internal", 2.0)]
    assert all(t is not threading.main_thread() for t in fake.threads)
    assert report.message == ("offset +125.0 ms against ntp-b.internal (limit 500 ms); "
                              "kernel clock state TIME_OK, STA_UNSYNC clear")


def test_the_reason_names_the_gravest_problem_and_the_message_every_one() -> None:
    fake = FakeSources(clock=UNSYNCED, a=-2.5)
    report = observe(make(fake))
    assert (report.status, report.reason) == (Status.TRUE, "ClockOffsetTooLarge")
    assert report.message == ("offset -2500.0 ms against ntp-a.internal (limit 500 ms); kernel clock is not "
                              "synchronised (kernel clock state TIME_ERROR, STA_UNSYNC set)")


def test_unreachable_servers_are_each_named_with_their_failure() -> None:
    fake = FakeSources(a=OSError(111, "Connection refused"), b=ntplib.NTPException("No response"),
                       c=ValueError("bad packet"))
    report = observe(make(fake))
    assert report.message.startswith("no NTP server answered (ntp-a.internal: [Errno 111] Connection refused; "
                                      "ntp-b.internal: No response; ntp-c.internal: bad packet)")


def test_without_servers_or_a_time_daemon_file_only_the_kernel_sync_state_is_judged() -> None:
    fake = FakeSources(clock=UNSYNCED)
    report = observe(make(fake, Config()))
    assert (report.status, report.reason, fake.asked) == (Status.TRUE, "ClockUnsynchronized", [])
    assert report.message == (
        "kernel clock is not synchronised (kernel clock state TIME_ERROR, STA_UNSYNC set); no time daemon "
        "configuration found (looked for /etc/chrony/chrony.conf, /etc/chrony.conf, /etc/ntpsec/ntp.conf, "
        "/etc/ntp.conf, /etc/systemd/timesyncd.conf and its drop-ins); kernel sync state only")


def chrony_host(root: Path, *servers: str) -> HostRoot:
    conf = root / "etc/chrony/chrony.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("".join(f"server {server} iburst\n" for server in servers))
    return HostRoot(root)


def test_without_servers_the_time_daemons_are_asked_and_named_in_the_message(tmp_path: Path) -> None:
    fake = FakeSources(a=OSError(101, "Network is unreachable"), b=0.125)
    report = observe(make(fake, Config(), chrony_host(tmp_path, "ntp-a.internal", "ntp-b.internal")))
    assert fake.asked == [("ntp-a.internal", 2.0), ("ntp-b.internal", 2.0)]
    assert (report.status, report.message) == (Status.FALSE, (
        "offset +125.0 ms against ntp-b.internal (limit 500 ms; from chrony /etc/chrony/chrony.conf); "
        "kernel clock state TIME_OK, STA_UNSYNC clear"))


def test_a_time_daemon_server_measuring_the_clock_wrong_is_a_problem(tmp_path: Path) -> None:
    fake = FakeSources(a=-0.9)
    report = observe(make(fake, Config(), chrony_host(tmp_path, "ntp-a.internal")))
    assert (report.status, report.reason) == (Status.TRUE, "ClockOffsetTooLarge")
    assert report.message.startswith("offset -900.0 ms against ntp-a.internal (limit 500 ms; from chrony ")


@pytest.mark.parametrize(("clock", "status", "reason"), [
    pytest.param(SYNCED, Status.FALSE, "ClockSynchronized", id="kernel-synchronised"),
    pytest.param(UNSYNCED, Status.TRUE, "ClockUnsynchronized", id="kernel-unsynchronised"),
])
def test_time_daemon_servers_that_do_not_answer_are_noted_and_the_kernel_state_decides(
        tmp_path: Path, clock: KernelClock, status: Status, reason: str) -> None:
    fake = FakeSources(clock=clock, **UNREACHABLE)
    report = observe(make(fake, Config(), chrony_host(tmp_path, "ntp-a.internal", "ntp-b.internal")))
    assert (report.status, report.reason) == (status, reason)
    refused = "[Errno 111] Connection refused"
    assert (f"no server from chrony /etc/chrony/chrony.conf answered (ntp-a.internal: {refused}; "
            f"ntp-b.internal: {refused}): the kernel's sync state decides") in report.message


def test_configured_servers_win_and_no_time_daemon_file_is_read(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def never(host: HostRoot) -> None:
        raise AssertionError("the time daemon's files were read")

    monkeypatch.setattr(ntp, "find_daemon_servers", never)
    fake = FakeSources()
    report = observe(make(fake, Config(servers=SERVERS[2:]), chrony_host(tmp_path, "ntp-a.internal")))
    assert (fake.asked, report.message) == ([("ntp-c.internal", 2.0)], (
        "offset +10.0 ms against ntp-c.internal (limit 500 ms); kernel clock state TIME_OK, STA_UNSYNC clear"))


def test_a_file_that_names_no_server_is_named_in_the_message(tmp_path: Path) -> None:
    report = observe(make(FakeSources(), Config(), chrony_host(tmp_path)))
    assert report.message == ("no NTP server in the time daemon configuration (read /etc/chrony/chrony.conf); "
                              "kernel sync state only; kernel clock state TIME_OK, STA_UNSYNC clear")


def test_only_the_time_daemon_servers_that_fit_the_timeout_are_tried_and_the_message_says_so(tmp_path: Path) -> None:
    fake = FakeSources(**UNREACHABLE)
    fake.answers.update({f"ntp-{key}.internal": 0.001 for key in "defg"})
    host = chrony_host(tmp_path, *(f"ntp-{key}.internal" for key in "abcdefg"))
    config = Config(timing=CheckTiming(interval=dt.timedelta(seconds=60), timeout=dt.timedelta(seconds=7)))
    report = observe(make(fake, config, host))
    assert [server for server, _ in fake.asked] == ["ntp-a.internal", "ntp-b.internal", "ntp-c.internal"]
    assert report.status is Status.FALSE
    assert ("only the first 3 of the 7 servers from chrony are tried (timing.timeout 7s / query_timeout 2s)"
            in report.message)


def test_time_daemon_servers_are_asked_at_most_every_16s_whatever_the_interval(tmp_path: Path) -> None:
    fake = FakeSources()
    every_5s = CheckTiming(interval=dt.timedelta(seconds=5), timeout=dt.timedelta(seconds=5))
    check = make(fake, Config(timing=every_5s), chrony_host(tmp_path, "ntp-a.internal"))
    for seconds in (0, 5, 10, 15):
        assert observe(check, NOW + dt.timedelta(seconds=seconds)).status is Status.FALSE
    assert len(fake.asked) == 1
    fake.answers["ntp-a.internal"] = 0.9
    assert observe(check, NOW + dt.timedelta(seconds=15.9)).reason == "ClockSynchronized"  # the last answer stands
    assert observe(check, NOW + dt.timedelta(seconds=16)).reason == "ClockOffsetTooLarge"
    assert observe(check, NOW - dt.timedelta(hours=1)).reason == "ClockOffsetTooLarge"  # a clock stepped back
    assert len(fake.asked) == 3


def test_a_changed_time_daemon_file_is_read_at_the_next_observation(tmp_path: Path) -> None:
    fake = FakeSources()
    check = make(fake, Config(), chrony_host(tmp_path, "ntp-a.internal"))
    assert "against ntp-a.internal" in observe(check).message
    chrony_host(tmp_path, "ntp-b.internal")
    report = observe(check, NOW + dt.timedelta(minutes=1))
    assert (fake.asked[-1][0], report.status) == ("ntp-b.internal", Status.FALSE)
    assert "against ntp-b.internal" in report.message  # a new source rewrites the message, same finding or not


def test_skipped_time_daemon_files_are_noted_in_the_message(tmp_path: Path) -> None:
    (tmp_path / "etc/chrony").mkdir(parents=True)
    (tmp_path / "etc/chrony/chrony.conf").write_bytes(b"\0\1\2")
    report = observe(make(FakeSources(), Config(), HostRoot(tmp_path)))
    assert report.status is Status.FALSE
    assert "skipped /etc/chrony/chrony.conf: not a text file; kernel sync state only" in report.message


@pytest.mark.parametrize(("clock", "status", "reason"), [
    pytest.param(SYNCED, Status.UNKNOWN, "BadSensorData", id="kernel-synchronised"),
    pytest.param(UNSYNCED, Status.TRUE, "ClockUnsynchronized", id="kernel-unsynchronised"),
])
def test_a_time_daemon_configuration_over_the_readers_bounds_leaves_its_servers_unknown(
        tmp_path: Path, clock: KernelClock, status: Status, reason: str) -> None:
    host = chrony_host(tmp_path, "ntp-a.internal")
    (tmp_path / "etc/chrony/chrony.conf").write_text("server ntp-a.internal\nconfdir" + " d" * 30_000 + "\n")
    fake = FakeSources(clock=clock)
    report = observe(make(fake, Config(), host))
    assert (report.status, report.reason, fake.asked) == (status, reason, [])
    assert ("the time daemon's NTP servers are unknown: its configuration was not read to the end "
            "(/etc/chrony/chrony.conf:2: more than 64 includes and directories to follow in one read)"
            in report.message)


def test_a_read_left_running_by_a_cancelled_observation_is_never_joined_by_a_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The read runs in an executor thread, which cancelling the observation (its timeout) cannot stop: a new read
    each interval beside it would pile threads up behind a slow host."""
    started, release = threading.Event(), threading.Event()
    reads: list[HostRoot] = []

    def slow(host: HostRoot) -> DaemonServers:
        reads.append(host)
        started.set()
        release.wait(timeout=60)
        return DaemonServers(daemon="chrony", servers=("ntp-a.internal",), files=("/etc/chrony.conf",))

    monkeypatch.setattr(ntp, "find_daemon_servers", slow)
    check = make(FakeSources(), Config())
    later = NOW + dt.timedelta(minutes=1)

    async def scenario() -> tuple[ConditionReport, ConditionReport]:
        first = asyncio.create_task(check.observe(NOW))
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 60)
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first
        (while_running,) = (await check.observe(later)).conditions
        release.set()
        deadline = time.monotonic() + 60
        while (after := (await check.observe(later)).conditions[0]).status is Status.UNKNOWN:
            assert time.monotonic() < deadline, "the first read never ended"
            await asyncio.sleep(0.01)
        return while_running, after

    while_running, after = asyncio.run(scenario())
    assert (while_running.status, while_running.reason) == (Status.UNKNOWN, "BadSensorData")
    assert while_running.message == (
        "the time daemon's NTP servers are unknown: the read of its configuration begun at 2024-05-01T12:00:00+00:00 "
        "has not ended; no other read is begun beside it; kernel clock state TIME_OK, STA_UNSYNC clear")
    assert after.message.startswith("offset +10.0 ms against ntp-a.internal (limit 500 ms; from chrony ")
    assert len(reads) == 2  # the first, and one more once it had ended


def test_the_kernel_state_can_be_left_out_where_something_else_keeps_the_clock() -> None:
    fake = FakeSources(clock=OSError(1, "never asked"))
    report = observe(make(fake, Config(servers=SERVERS[:1], kernel_sync=False)))
    assert (report.status, report.message) == (Status.FALSE, "offset +10.0 ms against ntp-a.internal (limit 500 ms)")


def test_the_message_keeps_the_deciding_offset_so_the_node_is_not_rewritten_every_interval() -> None:
    fake = FakeSources(a=0.010)
    check = make(fake)
    first = observe(check)
    fake.answers["ntp-a.internal"] = 0.011
    assert observe(check) == first
    fake.answers["ntp-a.internal"] = 0.9
    assert observe(check).reason == "ClockOffsetTooLarge"


@pytest.mark.parametrize(("clock", "in_message"), [
    pytest.param(OSError(22, "adjtimex: Invalid argument"), "kernel clock state unreadable: [Errno 22]",
                 id="adjtimex-fails"),
    pytest.param(KernelClock(state=42, status=0), "adjtimex returned state 42", id="unknown-state"),
    pytest.param(KernelClock(state=-3, status=0), "adjtimex returned state -3", id="negative-state"),
    pytest.param(KernelClock(state=0, status=-1), "status -0x1", id="negative-status"),
])
def test_bad_kernel_clock_data_reports_unknown_with_the_cause(clock: KernelClock | OSError, in_message: str) -> None:
    report = observe(make(FakeSources(clock=clock), Config()))
    assert (report.status, report.reason) == (Status.UNKNOWN, "BadSensorData")
    assert in_message in report.message


def test_a_found_problem_outweighs_an_unreadable_kernel_state() -> None:
    fake = FakeSources(clock=OSError(22, "Invalid argument"), a=3.0)
    report = observe(make(fake))
    assert (report.status, report.reason) == (Status.TRUE, "ClockOffsetTooLarge")
    assert "kernel clock state unreadable" in report.message


def test_the_real_kernel_clock_reads_without_privilege() -> None:
    clock = read_kernel_clock()
    assert 0 <= clock.state < len(CLOCK_STATES)
    assert clock.status >= 0


@contextlib.contextmanager
def ntp_server(offset: float, *, leap: int = 0, stratum: int = 2) -> Iterator[str]:
    """A one-shot NTP server on loopback whose clock runs `offset` seconds ahead of ours."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)

    def serve() -> None:
        try:
            data, peer = sock.recvfrom(256)
        except OSError:
            return
        request = ntplib.NTPPacket()
        request.from_data(data)
        reply = ntplib.NTPPacket(version=3, mode=4)
        reply.leap, reply.stratum = leap, stratum
        reply.orig_timestamp = request.tx_timestamp
        reply.recv_timestamp = reply.tx_timestamp = ntplib.system_to_ntp_time(time.time() + offset)
        sock.sendto(reply.to_data(), peer)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        thread.join()
        sock.close()


def test_the_default_query_measures_the_offset_of_a_real_ntp_exchange() -> None:
    with ntp_server(5.0) as server:
        assert query_ntp(server, 2.0) == pytest.approx(5.0, abs=0.5)


@pytest.mark.parametrize(("leap", "stratum", "error"), [
    pytest.param(3, 2, "not synchronised", id="server-unsynchronised"),
    pytest.param(0, 0, "kiss-of-death", id="kiss-of-death"),
])
def test_the_default_query_refuses_answers_that_prove_nothing(leap: int, stratum: int, error: str) -> None:
    with ntp_server(0.0, leap=leap, stratum=stratum) as server, pytest.raises(ntplib.NTPException, match=error):
        query_ntp(server, 2.0)


def test_the_default_query_runs_end_to_end_through_the_check() -> None:
    with ntp_server(-3.0) as server:
        check = NTPProblem(Config(servers=(server,), kernel_sync=False), HostRoot())
        report = observe(check)
    assert (report.status, report.reason) == (Status.TRUE, "ClockOffsetTooLarge")


@pytest.mark.parametrize(("server", "parsed"), [
    pytest.param("time.example.org", ("time.example.org", 123), id="host"),
    pytest.param("10.0.0.1:1123", ("10.0.0.1", 1123), id="host-and-port"),
    pytest.param("[2001:db8::1]:123", ("2001:db8::1", 123), id="bracketed-ipv6-and-port"),
    pytest.param("[2001:db8::1]", ("2001:db8::1", 123), id="bracketed-ipv6"),
    pytest.param("2001:db8::1", ("2001:db8::1", 123), id="bare-ipv6"),
])
def test_servers_may_name_a_port(server: str, parsed: tuple[str, int]) -> None:
    assert split_server(server) == parsed


@pytest.mark.parametrize(("config", "errors"), [
    pytest.param(Config(), [], id="defaults"),
    pytest.param(Config(servers=("a", "b", "c")), [], id="three-servers-fit-the-timeout"),
    pytest.param(Config(servers=("",)), ["servers[0]: '' has no valid host"], id="empty-server"),
    pytest.param(Config(servers=("ntp host",)), ["servers[0]: 'ntp host' has no valid host"], id="space-in-host"),
    pytest.param(Config(servers=("a:0",)), ["servers[0]: 'a:0' has an invalid port"], id="port-zero"),
    pytest.param(Config(servers=("a:ntp",)), ["servers[0]: 'a:ntp' has an invalid port"], id="port-name"),
    pytest.param(Config(servers=("[::1]x",)), ["servers[0]: '[::1]x' is not host, host:port or [ipv6]:port"],
                 id="junk-after-bracket"),
    pytest.param(Config(servers=("a", "a")), ["servers[1]: 'a' is listed twice, as servers[0] too"],
                 id="duplicate-server"),
    pytest.param(Config(max_offset=dt.timedelta(0)), ['maxOffset: must be positive, got 0s'], id="zero-offset"),
    pytest.param(Config(query_timeout=dt.timedelta(0)), ['queryTimeout: must be positive, got 0s'],
                 id="zero-query-timeout"),
    pytest.param(Config(servers=("a", "b", "c", "d", "e", "f")),
                 ['queryTimeout: 6 servers x 2s exceed timeout (10s)'], id="servers-outlast-the-timeout"),
    pytest.param(Config(query_timeout=dt.timedelta(seconds=11)),
                 ["queryTimeout: 11s exceeds timeout (10s): not even one of the time daemon's servers could be asked"],
                 id="time-daemon-server-outlasts-the-timeout"),
    pytest.param(Config(kernel_sync=False), ['servers: must name at least one server when kernelSync is false'],
                 id="nothing-to-check"),
    pytest.param(Config(timing=CheckTiming(interval=dt.timedelta(seconds=5), timeout=dt.timedelta(seconds=10))),
                 ['timeout: must not be longer than interval (5s), got 10s'], id="timeout-over-interval"),
    pytest.param(Config(servers=("a",), timing=CheckTiming(interval=dt.timedelta(seconds=5),
                                                           timeout=dt.timedelta(seconds=5))),
                 ["interval: must be at least 16s (NTP's shortest poll interval: every node asks every server), "
                  "got 5s"],
                 id="servers-polled-too-often"),
    pytest.param(Config(timing=CheckTiming(interval=dt.timedelta(seconds=5), timeout=dt.timedelta(seconds=5))),
                 [], id="kernel-state-only-may-be-read-often"),
])
def test_validate_reports_every_bad_field(config: Config, errors: list[str]) -> None:
    assert problems(config) == errors


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
