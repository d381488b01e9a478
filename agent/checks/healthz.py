"""A component's own healthz, probed with a debounce: shared by the kubelet and kube-proxy checks.

`GET url` within `request_timeout`; anything but HTTP 200 is a failed probe, and `failure_threshold` of them in a row
turn `<Subject>Unhealthy` True (`agent/checks/debounce.py`).

aiohttp is allowed here because HTTP is the check itself. One session (with its one keep-alive connection) serves
every probe for the agent's life, created at the first probe (it needs the running loop) and closed by `close()` at
shutdown: a session per probe cost a connector, a TCP handshake and a teardown every 10 s, the agent's largest idle
cost. A connection the server closed while idle is retried once by aiohttp (GET is idempotent), so a stale
keep-alive connection never counts as a failed probe.
"""

from __future__ import annotations

import datetime as dt
import ssl
from urllib.parse import urlsplit

from agent.checks.debounce import FailureDebounce
from agent.model import ConditionReport
from agent.reporting.aiohttp_lean import aiohttp
from nodemedic_common.durations import format_duration


def validate_probe(url: str, request_timeout: dt.timedelta, check_timeout: dt.timedelta,
                   failure_threshold: int) -> list[str]:
    errors = []
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        errors.append("healthz_url: must be an http:// or https:// URL with a host")
    if request_timeout <= dt.timedelta(0):
        errors.append("request_timeout: must be positive")
    elif request_timeout >= check_timeout:
        errors.append(f"request_timeout: must be shorter than timing.timeout ({format_duration(check_timeout)})")
    if failure_threshold < 1:
        errors.append("failure_threshold: must be at least 1")
    return errors


class HealthzProbe:
    def __init__(self, subject: str, url: str, *, request_timeout: dt.timedelta, failure_threshold: int) -> None:
        self.condition_type = f"{subject}Unhealthy"
        self._url = url
        self._request_timeout = request_timeout
        self._debounce = FailureDebounce(subject, self.condition_type, failure_threshold)
        self._context: ssl.SSLContext | None = None  # for an https url, built on first use
        self._session: aiohttp.ClientSession | None = None  # built at the first probe, closed by close()

    async def report(self) -> ConditionReport:
        return self._debounce.report(await self.probe(), ok=f"{self._url} answers 200", target=f"GET {self._url}")

    async def close(self) -> None:
        """Release the session and its keep-alive connection."""
        if self._session is not None:
            await self._session.close()
            self._session = None

    def tls(self) -> ssl.SSLContext | bool:
        """The system CA store for an https probe (see agent.reporting.aiohttp_lean: aiohttp's own default has none)."""
        if urlsplit(self._url).scheme != "https":
            return True  # plain http: no TLS at all
        if self._context is None:
            self._context = ssl.create_default_context()
        return self._context

    async def probe(self) -> str | None:
        """None when healthy, else what went wrong (stable wording: it becomes the condition message)."""
        timeout = self._request_timeout
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1),
                                                  timeout=aiohttp.ClientTimeout(total=timeout.total_seconds()))
        try:
            async with self._session.get(self._url, allow_redirects=False, ssl=self.tls()) as response:
                if response.status == 200:
                    return None
                body = (await response.text(errors="replace")).strip()[:80]
                return f"HTTP {response.status}" + (f" {body!r}" if body else "")
        except TimeoutError:
            return f"no answer within {format_duration(timeout)}"
        except aiohttp.ClientError as exc:
            return f"{type(exc).__name__}: {exc}"
