"""Kubelet health: `KubeletUnhealthy` and `FrequentKubeletRestart`.

`KubeletUnhealthy`: `GET healthz_url` (the kubelet's own healthz on 127.0.0.1:10248, as node-problem-detector's
health-checker) within `request_timeout`; anything but HTTP 200 is a failed probe. Debounce: True only after
`failure_threshold` failed probes in a row, so one slow answer during a kubelet garbage collection or a restart
does not mark the node; until then the last settled status is repeated (Unknown if none has settled yet, since
one failure says nothing yet), with the failure in the message. One successful probe makes it False at once.

`FrequentKubeletRestart` comes from `restarts.RestartMonitor` (the `proc` or `systemd` source, see there).

aiohttp is allowed here because HTTP is the check itself. One session (with its one keep-alive connection) serves
every probe for the agent's life, created at the first probe (it needs the running loop) and closed by `close()` at
shutdown: a session per probe cost a connector, a TCP handshake and a teardown every 10 s, the agent's largest idle
cost. A connection the kubelet closed while idle is retried once by aiohttp (GET is idempotent), so a stale
keep-alive connection never counts as a failed probe.
"""

from __future__ import annotations

import datetime as dt
import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agent.checks.restarts import CommandRunner, RestartConfig, RestartMonitor, run_command, validate_restarts
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from agent.reporting.aiohttp_lean import aiohttp
from nodemedic_common.durations import format_duration

UNHEALTHY = "KubeletUnhealthy"
FREQUENT_RESTART = "FrequentKubeletRestart"
# probed every 10 s like the health-checker; the timeout leaves room for a full request_timeout
TIMING = CheckTiming(interval=dt.timedelta(seconds=10), timeout=dt.timedelta(seconds=15))
RESTARTS = RestartConfig(process_names=("kubelet",), units=("kubelet",))


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=lambda: TIMING)
    healthz_url: str = "http://127.0.0.1:10248/healthz"
    request_timeout: dt.timedelta = dt.timedelta(seconds=10)
    failure_threshold: int = 3
    restarts: RestartConfig = field(default_factory=lambda: RESTARTS)


def validate(config: Config) -> list[str]:
    errors = config.timing.errors(timeout_within_interval=False)
    url = urlsplit(config.healthz_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        errors.append("healthz_url: must be an http:// or https:// URL with a host")
    if config.request_timeout <= dt.timedelta(0):
        errors.append("request_timeout: must be positive")
    elif config.request_timeout >= config.timing.timeout:
        errors.append(f"request_timeout: must be shorter than timing.timeout "
                      f"({format_duration(config.timing.timeout)})")
    if config.failure_threshold < 1:
        errors.append("failure_threshold: must be at least 1")
    return errors + validate_restarts(config.restarts)


class KubeletCheck:
    name = "kubelet"
    condition_types = (UNHEALTHY, FREQUENT_RESTART)

    def __init__(self, config: Config, host: HostRoot, *, run: CommandRunner = run_command,
                 clock_ticks: int | None = None) -> None:
        self.timing = config.timing
        self._config = config
        self._failures = 0  # failed probes in a row
        self._settled: Status = Status.UNKNOWN  # the last status the debounce decided
        self._context: ssl.SSLContext | None = None  # for an https healthz_url, built on first use
        self._session: aiohttp.ClientSession | None = None  # built at the first probe, closed by close()
        self._restarts = RestartMonitor(config.restarts, host, defaults=RESTARTS, condition_type=FREQUENT_RESTART,
                                        subject="kubelet", run=run, clock_ticks=clock_ticks)

    async def observe(self, now: dt.datetime) -> Observation:
        return Observation(self.name, now, conditions=(await self._health(), await self._restarts.observe(now)))

    async def close(self) -> None:
        """Release the probe's session and its keep-alive connection (see `HoldsResources`)."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _health(self) -> ConditionReport:
        url, threshold = self._config.healthz_url, self._config.failure_threshold
        failure = await self._probe()
        if failure is None:
            self._failures, self._settled = 0, Status.FALSE
            return ConditionReport(UNHEALTHY, Status.FALSE, "KubeletIsHealthy", f"{url} answers 200")
        self._failures += 1
        if self._failures >= threshold:
            # No running count here: a message that changed with every probe made every probe a status write.
            self._settled = Status.TRUE
            return ConditionReport(UNHEALTHY, Status.TRUE, "KubeletUnhealthy",
                                   f"GET {url}: {failure} ({threshold} or more failures in a row)")
        message = f"GET {url}: {failure} ({self._failures} failure(s) in a row, threshold {threshold})"
        reason = {Status.TRUE: "KubeletUnhealthy", Status.FALSE: "KubeletIsHealthy"}.get(self._settled,
                                                                                         "KubeletHealthUnknown")
        return ConditionReport(UNHEALTHY, self._settled, reason, message)

    def _tls(self) -> ssl.SSLContext | bool:
        """The system CA store for an https probe (see agent.reporting.aiohttp_lean: aiohttp's own default has none)."""
        if urlsplit(self._config.healthz_url).scheme != "https":
            return True  # plain http: no TLS at all
        if self._context is None:
            self._context = ssl.create_default_context()
        return self._context

    async def _probe(self) -> str | None:
        """None when healthy, else what went wrong (stable wording: it becomes the condition message)."""
        timeout = self._config.request_timeout
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1),
                                                  timeout=aiohttp.ClientTimeout(total=timeout.total_seconds()))
        try:
            async with self._session.get(self._config.healthz_url, allow_redirects=False, ssl=self._tls()) as response:
                if response.status == 200:
                    return None
                body = (await response.text(errors="replace")).strip()[:80]
                return f"HTTP {response.status}" + (f" {body!r}" if body else "")
        except TimeoutError:
            return f"no answer within {format_duration(timeout)}"
        except aiohttp.ClientError as exc:
            return f"{type(exc).__name__}: {exc}"
