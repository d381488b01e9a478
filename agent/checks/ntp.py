"""NTPProblem: the node's clock is wrong, or nothing keeps it right.

Two sources, both injectable for tests:
- the kernel's own sync state, from `adjtimex(2)` with no modes set (a read; needs no privilege and no host
  path, since a container shares the host's kernel clock). `STA_UNSYNC` in the status, or the clock state
  `TIME_ERROR`, means no time daemon is disciplining the clock.
- the offset measured against NTP servers with ntplib, tried in order until one answers. Each query is a blocking
  socket call, so it runs in a thread; a cancelled check leaves at most one query to finish within its
  `query_timeout`. Configured `servers` are used as given, and no file is read.

The default server list is empty, meaning "the servers the node's own time daemon uses": chrony's, ntpd's or
systemd-timesyncd's configuration under the host root (`ntp_daemon_servers`), named in the message. Most nodes sit
behind egress rules that block public NTP, and the daemon's servers are the ones its node reaches. Even so, such a
server that does not answer is only noted, never NTPServerUnreachable: the daemon may keep time by other means
(chrony on a PTP hardware clock, with its distribution's pool lines left unreachable), the kernel's sync state
already says whether it does, and a check that says NTPServerUnreachable on every node of a fleet teaches people to
ignore it. When no file names a server, only the kernel's sync state is judged, and the message says so. When
its files ask for more work than the reader's bounds allow, or a read left running by a cancelled observation has
not ended (one read at a time), the daemon's servers are unknown: Unknown unless the kernel's state is a problem.
Only the first timing.timeout // query_timeout of the daemon's servers are tried, so the check ends before the
supervisor cancels it, and the message says when some were left out. Validation cannot hold an interval under 16 s
against servers it does not know yet, so they are asked at most every MIN_QUERY_INTERVAL; in between, the last
answer stands.

True when any problem is found; the reason names the gravest one: ClockOffsetTooLarge (the clock is measurably
wrong), then ClockUnsynchronized (it may drift), then NTPServerUnreachable (it could not be verified).
"""

from __future__ import annotations

import asyncio
import ctypes
import datetime as dt
import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import ntplib

from agent.bounds import POSITIVE, Bounds, FieldProblem, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.sensors.ntp_daemon_servers import LOOKED_FOR, DaemonServers, find_daemon_servers
from nodemedic_common.durations import below_floor, format_duration

CONDITION = "NTPProblem"

STA_UNSYNC = 0x0040  # <linux/timex.h>: clock unsynchronised
TIME_ERROR = 5  # adjtimex return value: clock not synchronised
CLOCK_STATES = ("TIME_OK", "TIME_INS", "TIME_DEL", "TIME_OOP", "TIME_WAIT", "TIME_ERROR")


MIN_QUERY_INTERVAL = dt.timedelta(seconds=16)  # NTP's minpoll (2^4 s); pools rate-limit faster clients

Measured = tuple[str, float] | list[str]  # (server, offset) from the first that answered, else each one's failure


def _server(text: str) -> str | None:
    try:
        split_server(text)
    except ValueError as e:
        return str(e)
    return None


@dataclass(frozen=True)
class Config:
    # Once a minute: ntpd never polls a server more often than every 64 s, and public pools ask for the same.
    timing: CheckTiming = field(default_factory=lambda: CheckTiming(interval=dt.timedelta(seconds=60)))
    # "host", "host:port" or "[v6]:port"; empty = kernel sync state only
    servers: tuple[str, ...] = bounded((), Bounds(form=_server, distinct_by=str))
    max_offset: dt.timedelta = bounded(dt.timedelta(milliseconds=500), POSITIVE)
    query_timeout: dt.timedelta = bounded(dt.timedelta(seconds=2), POSITIVE)  # per server
    kernel_sync: bool = True  # False on nodes whose clock is kept by other means (e.g. PTP without NTP flags)

    def related_problems(self) -> list[FieldProblem]:
        problems = []
        timeout, asked = self.timing.timeout, self.query_timeout * max(1, len(self.servers))
        # Servers are tried in turn; if all time out the check must still finish before the supervisor cancels it.
        if self.servers and asked > timeout:
            problems.append(FieldProblem(("query_timeout",), f"{len(self.servers)} servers x "
                                         f"{format_duration(self.query_timeout)} exceed timeout "
                                         f"({format_duration(timeout)})"))
        elif asked > timeout:  # no servers: the time daemon's are asked, one at least
            problems.append(FieldProblem(("query_timeout",), f"{format_duration(self.query_timeout)} exceeds timeout "
                                         f"({format_duration(timeout)}): not even one of the time daemon's servers "
                                         "could be asked"))
        if not self.kernel_sync and not self.servers:
            problems.append(FieldProblem(("servers",), "must name at least one server when kernelSync is false"))
        if self.servers and (problem := below_floor(self.timing.interval, MIN_QUERY_INTERVAL,
                                                    "NTP's shortest poll interval: every node asks every server")):
            problems.append(FieldProblem(("timing", "interval"), problem))
        return problems


@dataclass(frozen=True)
class KernelClock:
    state: int  # adjtimex's return value: one of CLOCK_STATES
    status: int  # STA_* flags

    @property
    def synchronized(self) -> bool:
        return not self.status & STA_UNSYNC and self.state != TIME_ERROR


class _Timeval(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long))


class _Timex(ctypes.Structure):
    """`struct timex` of <sys/timex.h> (glibc and musl agree on Linux), trailing padding included."""

    _fields_ = (
        ("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
        ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long), ("status", ctypes.c_int),
        ("constant", ctypes.c_long), ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
        ("time", _Timeval), ("tick", ctypes.c_long), ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long),
        ("shift", ctypes.c_int), ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long), ("calcnt", ctypes.c_long),
        ("errcnt", ctypes.c_long), ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int), ("_padding", ctypes.c_int * 11),
    )


def read_kernel_clock() -> KernelClock:
    """adjtimex(2) on a zeroed struct (modes = 0: read only). Raises OSError when the call fails."""
    libc = ctypes.CDLL(None, use_errno=True)  # the C library already loaded into this process
    timex = _Timex()
    state = libc.adjtimex(ctypes.byref(timex))
    if state == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"adjtimex: {os.strerror(err)}")
    return KernelClock(state=state, status=timex.status)


def query_ntp(server: str, timeout: float) -> float:
    """The clock offset in seconds against one server (positive: the node is behind). Raises on any failure."""
    host, port = split_server(server)
    # An explicit port: ntplib's default "ntp" needs /etc/services, which slim images lack.
    stats = ntplib.NTPClient().request(host, version=3, port=port, timeout=timeout)
    if stats.leap == 3:  # RFC 5905: the server itself is unsynchronised; its time proves nothing
        raise ntplib.NTPException(f"{server} is not synchronised (leap indicator 3)")
    if stats.stratum == 0:  # a kiss-of-death packet (rate limited or denied), not a time answer
        raise ntplib.NTPException(f"{server} refused the query (kiss-of-death)")
    return float(stats.offset)


def split_server(server: str) -> tuple[str, int]:
    """"host" / "host:port" / "[2001:db8::1]:123" / bare IPv6 -> (host, port). Raises ValueError."""
    host, port = server, "123"
    if server.startswith("["):
        host, sep, rest = server[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            raise ValueError(f"{server!r} is not host, host:port or [ipv6]:port")
        port = rest[1:] or port
    elif server.count(":") == 1:
        host, port = server.split(":")
    if not host or any(c.isspace() for c in host):
        raise ValueError(f"{server!r} has no valid host")
    if not port.isdecimal() or not 0 < int(port) < 65536:
        raise ValueError(f"{server!r} has an invalid port")
    return host, int(port)


class NTPProblem:
    name = "ntp"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot, *,
                 adjtimex: Callable[[], KernelClock] = read_kernel_clock,
                 query: Callable[[str, float], float] = query_ntp) -> None:
        self.timing = config.timing
        self._config = config
        self._host = host  # where the time daemon's files are, when no servers are configured
        self._adjtimex = adjtimex
        self._query = query
        self._last: tuple[object, ConditionReport] | None = None  # (finding, report) for _keep_message
        self._last_query: tuple[dt.datetime, tuple[str, ...], Measured] | None = None  # (when, servers, result)
        self._reading: tuple[dt.datetime, asyncio.Future[DaemonServers]] | None = None  # the last read: (began, it)

    async def observe(self, now: dt.datetime) -> Observation:
        problems: list[tuple[str, str]] = []  # (reason, message), gravest first once sorted
        unknown: list[str] = []
        notes: list[str] = []
        context: object = ()  # what the message says besides the finding: where the servers came from
        if self._config.servers:
            self._judge_offset(await self._measure(self._config.servers), problems, notes)
        else:
            context = await self._judge_daemon_servers(now, problems, unknown, notes)
        if self._config.kernel_sync:
            self._judge_kernel(problems, unknown, notes)
        if problems:
            problems.sort(key=lambda p: _GRAVITY.index(p[0]))
            message = "; ".join([m for _, m in problems] + unknown + notes)
            report = ConditionReport(CONDITION, Status.TRUE, problems[0][0], message)
            key: object = (report.status, tuple(reason for reason, _ in problems), context)
        elif unknown:
            report = ConditionReport(CONDITION, Status.UNKNOWN, "BadSensorData", "; ".join(unknown + notes))
            key = (report.status, tuple(unknown), context)
        else:
            report = ConditionReport(CONDITION, Status.FALSE, "ClockSynchronized", "; ".join(notes))
            key = (report.status, context)
        return Observation(self.name, now, (self._keep_message(report, key),))

    def _keep_message(self, report: ConditionReport, key: object) -> ConditionReport:
        """The offset changes every query; re-sending it would PATCH the Node every interval (the reporter writes
        on any change). Keep the report made when the finding (`key`) last changed; its figures are the deciding
        ones. (psi.StickyReport does this for the pressure checks; a PSI import here would mislead.)"""
        if self._last is not None and key == self._last[0]:
            return self._last[1]
        self._last = (key, report)
        return report

    async def _judge_daemon_servers(self, now: dt.datetime, problems: list[tuple[str, str]], unknown: list[str],
                                    notes: list[str]) -> object:
        """The offset against the servers of the node's own time daemon. Returns what the message says about them,
        so a changed file rewrites it."""
        found = await self._read_daemon_servers(now)
        if isinstance(found, str):
            unknown.append(found)
            return found
        remarks = [f"skipped {_listed(found.notes, '; ')}"] if found.notes else []
        if found.refused:
            unknown.append(f"the time daemon's NTP servers are unknown: its configuration was not read to the end "
                           f"({found.refused})")
            notes.extend(remarks)
            return found
        if not found.servers:
            notes.extend([f"no NTP server in the time daemon configuration (read {_listed(found.read)})" if found.read
                          else f"no time daemon configuration found (looked for {LOOKED_FOR})", *remarks,
                          "kernel sync state only"])
            return found
        fit = self._config.timing.timeout // self._config.query_timeout  # each may time out: all within timing.timeout
        if len(found.servers) > fit:
            remarks.insert(0, f"only the first {fit} of the {len(found.servers)} servers from {found.daemon} are tried "
                              f"(timing.timeout {format_duration(self._config.timing.timeout)} / query_timeout "
                              f"{format_duration(self._config.query_timeout)})")
        origin = f"from {found.daemon} {_listed(found.files)}"
        result = await self._measure_at_most_every_minpoll(now, found.servers[:fit])
        if isinstance(result, list):
            notes.append(f"no server {origin} answered ({'; '.join(result)}): the kernel's sync state decides")
        else:
            self._judge_offset(result, problems, notes, origin=origin)
        notes.extend(remarks)
        return found, isinstance(result, list)

    async def _read_daemon_servers(self, now: dt.datetime) -> DaemonServers | str:
        """find_daemon_servers in an executor thread, or why it is not read. Nothing stops the thread once it runs,
        so when an observation is cancelled (its timeout) the read is left to end on its own, and no second read
        starts while it runs: reads never pile up, whatever the files make each cost."""
        # Read again at every observation rather than cached by mtime: a few small files, within fixed bounds, and
        # telling a change by stat would take as many calls, plus every confdir's (a new file changes no mtime of
        # the files already seen).
        if self._reading is not None and not self._reading[1].done():
            return (f"the time daemon's NTP servers are unknown: the read of its configuration begun at "
                    f"{self._reading[0].isoformat(timespec='seconds')} has not ended; no other read is begun beside "
                    "it")
        reading = asyncio.get_running_loop().run_in_executor(None, find_daemon_servers, self._host)
        reading.add_done_callback(_retrieve)  # a read left running may fail with no one awaiting it: no log noise
        self._reading = (now, reading)
        return await asyncio.shield(reading)  # cancelled, the observation leaves the read running, and known

    async def _measure_at_most_every_minpoll(self, now: dt.datetime, servers: tuple[str, ...]) -> Measured:
        """`_measure`, or its last result while that is younger than MIN_QUERY_INTERVAL: validation holds only
        configured servers to it. A clock stepped back (`now` before the last query) asks again."""
        if (last := self._last_query) and last[1] == servers and dt.timedelta(0) <= now - last[0] < MIN_QUERY_INTERVAL:
            return last[2]
        result = await self._measure(servers)
        self._last_query = (now, servers, result)
        return result

    async def _measure(self, servers: tuple[str, ...]) -> Measured:
        """(server, offset) from the first server that answers, else one failure line per server."""
        loop = asyncio.get_running_loop()
        timeout = self._config.query_timeout.total_seconds()
        failures: list[str] = []
        for server in servers:
            try:
                offset = await loop.run_in_executor(None, functools.partial(self._query, server, timeout))
            except (OSError, ntplib.NTPException, ValueError) as e:
                failures.append(f"{server}: {str(e) or type(e).__name__}")
                continue
            if not math.isfinite(offset):
                failures.append(f"{server}: answered with an unusable offset {offset}")
                continue
            return server, offset
        return failures

    def _judge_offset(self, result: Measured, problems: list[tuple[str, str]], notes: list[str], *,
                      origin: str = "") -> None:
        if isinstance(result, list):
            problems.append(("NTPServerUnreachable", f"no NTP server answered ({'; '.join(result)})"))
            return
        server, offset = result
        limit = self._config.max_offset.total_seconds()
        bounds = "; ".join(filter(None, (f"limit {limit * 1000:g} ms", origin)))
        text = f"offset {offset * 1000:+.1f} ms against {server} ({bounds})"
        if abs(offset) > limit:
            problems.append(("ClockOffsetTooLarge", text))
        else:
            notes.append(text)

    def _judge_kernel(self, problems: list[tuple[str, str]], unknown: list[str], notes: list[str]) -> None:
        try:
            clock = self._adjtimex()
        except OSError as e:
            unknown.append(f"kernel clock state unreadable: {e}")
            return
        if not 0 <= clock.state < len(CLOCK_STATES) or clock.status < 0:
            unknown.append(f"kernel clock state unreadable: adjtimex returned state {clock.state}, "
                           f"status {clock.status:#x}")
            return
        unsync = "set" if clock.status & STA_UNSYNC else "clear"
        text = f"kernel clock state {CLOCK_STATES[clock.state]}, STA_UNSYNC {unsync}"
        if clock.synchronized:
            notes.append(text)
        else:
            problems.append(("ClockUnsynchronized", f"kernel clock is not synchronised ({text})"))


_GRAVITY = ("ClockOffsetTooLarge", "ClockUnsynchronized", "NTPServerUnreachable")


def _retrieve(reading: asyncio.Future[DaemonServers]) -> None:
    if not reading.cancelled():
        reading.exception()


def _listed(items: tuple[str, ...], separator: str = ", ", most: int = 3) -> str:
    """At most `most` items, then how many more: a message names a few files, not a whole directory."""
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return separator.join(items[:most]) + more

