"""A component's own healthz, probed with a debounce: shared by the kubelet and kube-proxy checks.

`GET url` within `request_timeout`; anything but HTTP 200 is a failed probe, and `failure_threshold` of them in a row
turn `<Subject>Unhealthy` True (`agent/verdicts/debounce.py`).

Pace (`HealthzProbe.paced`): while the status is settled (healthy, or unhealthy already) a probe runs on the check's
interval, the agent's 30 s grid, where it wakes for every other check anyway; from a failed probe until the streak is
decided, every `recheck_interval` (5 s). So `<Subject>Unhealthy` turns True at most interval + (threshold - 1) x
recheck_interval after the component stops answering (30 + 2 x 5 = 40 s, plus the last probe's time), and the
probe never wakes the agent on its own while nothing is wrong. (Every 10 s it had cost the agent four wake-ups a
minute of their own, a third of its idle CPU, half of it on a machine whose caches another process keeps cold.)

The GET is HTTP/1.1 spoken over an asyncio connection of its own, as the runtime check speaks its CRI call with the
standard library: a probe needs one request line and the answer's status line, and a client library's request
machinery (session, connector, tracing, cookie jar) cost more than the probe itself on every run. The answer is read
by `http_answer.py` (only what HTTP/1.1 allows; interim 1xx answers passed over; bytes past the answer fail the
probe) from a `probe_connection.py` connection (one answer per request, dropped on any byte nobody asked for). One
keep-alive connection serves every probe while the server keeps it (an answer with a length and without
`Connection: close`); a connection the server closed while idle, or that was sent something while idle, is replaced
by a new one, and a probe whose kept connection closes just as it asks asks once more on a new one, so a stale
keep-alive connection never counts as a failed probe. No redirect is followed (a 3xx is a failed probe), and no
proxy: healthz is a node-local endpoint.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import ssl
from dataclasses import dataclass, field
from urllib.parse import SplitResult, urlsplit

from agent.bounds import AT_LEAST_ONE, POSITIVE, ZERO, Bounds, bounded
from agent.model import MIN_INTERVAL, CheckTiming, ConditionReport
from agent.services.http_answer import MESSAGE_BODY, Answer, ProbeError
from agent.services.probe_connection import Closed, ProbeConnection
from agent.verdicts.debounce import FailureDebounce
from nodemedic_common.durations import format_duration
from nodemedic_common.inputs import quoted


@dataclass(frozen=True)
class ProbeTiming(CheckTiming):
    """A probe's timing: its timeout may run past its interval (a long request timeout only delays the next probe,
    and a probe's answer is no sample that goes stale)."""

    timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), POSITIVE)


def _healthz_url(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"must be an http:// or https:// URL with a host, got {quoted(url)}"
    if not url.isascii():
        return "must be ASCII (percent-encode other characters)"
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number in 0-65535
    except ValueError:
        return "the port must be a number from 0 to 65535"
    return None


# The bounds of the settings every healthz-probing check has (kubelet, kube-proxy).
HEALTHZ_URL = Bounds(form=_healthz_url)
REQUEST_TIMEOUT = Bounds(above=ZERO, shorter_than="timing.timeout")
RECHECK_INTERVAL = Bounds(at_least=MIN_INTERVAL, why="findings reach the Node at most once a second",
                          not_longer_than="timing.interval")


@dataclass(frozen=True)
class ProbeSettings:
    """The settings every check that probes a component's healthz has, flat in its config (kubelet, kube-proxy): a
    check's Config extends them with its `healthz_url` and its own fields."""

    # the timeout leaves room for a full request_timeout
    timing: CheckTiming = field(default_factory=lambda: ProbeTiming(interval=dt.timedelta(seconds=30),
                                                                    timeout=dt.timedelta(seconds=15)))
    request_timeout: dt.timedelta = bounded(dt.timedelta(seconds=10), REQUEST_TIMEOUT)
    failure_threshold: int = bounded(3, AT_LEAST_ONE)
    recheck_interval: dt.timedelta = bounded(dt.timedelta(seconds=5), RECHECK_INTERVAL)

    def probe(self, subject: str, url: str) -> HealthzProbe:
        return HealthzProbe(subject, url, request_timeout=self.request_timeout,
                            failure_threshold=self.failure_threshold, recheck_interval=self.recheck_interval)


class HealthzProbe:
    def __init__(self, subject: str, url: str, *, request_timeout: dt.timedelta, failure_threshold: int,
                 recheck_interval: dt.timedelta) -> None:
        self.condition_type = f"{subject}Unhealthy"
        self._url = url
        self._parts = urlsplit(url)
        self._request = _request(self._parts)
        self._request_timeout = request_timeout
        self._recheck_interval = recheck_interval
        self._debounce = FailureDebounce(subject, self.condition_type, failure_threshold)
        self._context: ssl.SSLContext | None = None  # for an https url, built on first use
        self._connection: ProbeConnection | None = None  # kept alive between probes, closed by close()

    def paced(self, timing: CheckTiming) -> CheckTiming:
        """The check's `timing`, its interval shortened to `recheck_interval` while a failure waits for its
        confirmation."""
        if self._debounce.confirming:
            return dataclasses.replace(timing, interval=self._recheck_interval)
        return timing

    async def report(self) -> ConditionReport:
        return self._debounce.report(await self.probe(), ok=f"{self._url} answers 200", target=f"GET {self._url}")

    async def close(self) -> None:
        """Release the keep-alive connection."""
        self._drop()

    def tls(self) -> ssl.SSLContext | None:
        """The system CA store for an https probe; None for plain http (no TLS at all)."""
        if self._parts.scheme != "https":
            return None
        if self._context is None:
            self._context = ssl.create_default_context()
        return self._context

    async def probe(self) -> str | None:
        """None when healthy, else what went wrong (stable wording: it becomes the condition message)."""
        timeout = self._request_timeout
        try:
            async with asyncio.timeout(timeout.total_seconds()):
                answer = await self._exchange()
        except TimeoutError:
            self._drop()
            return f"no answer within {format_duration(timeout)}"
        except Closed:
            self._drop()
            return "the connection closed before the whole answer came"
        except (OSError, ProbeError) as exc:
            self._drop()
            return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if not answer.reusable:
            self._drop()
        if answer.status == 200:
            return None
        body = answer.body[:MESSAGE_BODY].decode(errors="replace").strip()
        return f"HTTP {answer.status}" + (f" {body!r}" if body else "")

    async def _exchange(self) -> Answer:
        connection = self._connection
        if connection is not None and connection.usable:
            try:
                return await connection.ask(self._request)
            except (ConnectionError, Closed):
                pass  # closed by the server while idle (or just as we asked): once more on a new connection
        self._drop()
        parts, context = self._parts, self.tls()
        connection = self._connection = await ProbeConnection.open(
            parts.hostname or "", parts.port or (443 if context is not None else 80), context)
        return await connection.ask(self._request)

    def _drop(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _request(parts: SplitResult) -> bytes:
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.netloc.rpartition("@")[2]  # the Host header never carries credentials
    return (f"GET {target} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: nodemedic-agent\r\nAccept: */*\r\n\r\n"
            .encode("ascii", errors="strict"))
