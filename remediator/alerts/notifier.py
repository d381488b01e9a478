"""Notifications to webhooks, Slack and Alertmanager: every remediation goes out to each configured sink.

Each sink has its own bounded queue and worker task, so a slow or dead sink never delays another, and
`notify()` never blocks the control loop: when a sink's queue is full the alert is dropped for that sink and
counted. A worker delivers its alerts one at a time, in order. 5xx, 429, connection errors and timeouts are
retried with exponential back-off and full jitter (each wait is uniform in [0, cap], the cap doubling from
initial_backoff up to max_backoff; a longer Retry-After, up to max_backoff, is honoured). Any other non-2xx
answer is a rejection and is not retried: the same body would be refused again.

Per sink, every alert handed to `notify()` ends as exactly one of sent | failed | rejected | dropped in
`nodemedic_notifications_total`; dropped means never delivered because the queue was full or the notifier
closed before it went out.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

import aiohttp
from prometheus_client import CollectorRegistry, Counter, Gauge

from nodemedic_common.redaction import redact
from nodemedic_common.tasks import keep
from remediator import __version__
from remediator.alerts.alert import Alert
from remediator.alerts.formats import FORMATS, Format
from remediator.policy.notifications import Notifications, SinkConfig

_ERROR_BODY_LIMIT = 512  # bytes of a refusal's body worth keeping in the log line
_MAX_DOUBLINGS = 60  # 2**60 x any sane initial back-off is past any max_backoff; keeps the float finite

Sleep = Callable[[float], Awaitable[object]]
Jitter = Callable[[float, float], float]  # (low, high) -> a value in [low, high], like random.uniform


class Result(StrEnum):
    SENT = "sent"
    FAILED = "failed"  # retryable errors until max_attempts ran out
    REJECTED = "rejected"  # a non-retryable answer, e.g. 400
    DROPPED = "dropped"  # never attempted to the end: queue full, or the notifier closed


@dataclass(frozen=True)
class _Answer:
    status: int | None  # None: no HTTP answer at all (connection error, timeout)
    error: str = ""
    retry_after: float | None = None

    @property
    def delivered(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status == 429 or self.status >= 500


@dataclass
class _Sink:
    name: str
    config: SinkConfig
    format: Format
    url: str
    headers: dict[str, str]
    queue: asyncio.Queue[Alert]
    worker: asyncio.Task[None] | None = None


def _build_sinks(config: Notifications) -> list[_Sink]:
    if config.queue_size < 1:
        raise ValueError(f"notifications.queueSize {config.queue_size}: must be at least 1")
    sinks: list[_Sink] = []
    for i, sink in enumerate(config.sinks):
        where = f"notifications.sinks[{i}]"
        if sink.type not in FORMATS:
            raise ValueError(f"{where}.type {sink.type!r}: must be one of {', '.join(FORMATS)}")
        if sink.max_attempts < 1:
            raise ValueError(f"{where}.maxAttempts {sink.max_attempts}: must be at least 1")
        name = sink.name or sink.type
        if any(s.name == name for s in sinks):
            raise ValueError(f"{where}.name {name!r}: used by another sink; give each sink a distinct name")
        fmt = FORMATS[sink.type]
        sinks.append(_Sink(
            name=name, config=sink, format=fmt, url=fmt.endpoint(sink.url),
            headers={"User-Agent": f"nodemedic/{__version__}", **dict(sink.headers)},
            queue=asyncio.Queue(maxsize=config.queue_size),
        ))
    return sinks


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds; the HTTP-date form is ignored (the regular back-off applies)."""
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class Notifier:
    def __init__(self, config: Notifications, *, cluster: str, registry: CollectorRegistry, log: logging.Logger,
                 session_factory: Callable[[], aiohttp.ClientSession] = aiohttp.ClientSession,
                 sleep: Sleep = asyncio.sleep, jitter: Jitter = random.uniform) -> None:
        self._sinks = _build_sinks(config)
        self._cluster, self.log = cluster, log
        self._session_factory, self._sleep, self._jitter = session_factory, sleep, jitter
        self._session: aiohttp.ClientSession | None = None
        self._started = self._closed = False
        self._retiring: set[asyncio.Task[None]] = set()
        self._outcomes = Counter("nodemedic_notifications_total", "Notifications by sink and final result",
                                 ["sink", "result"], registry=registry)
        self._attempts = Counter("nodemedic_notification_attempts_total", "HTTP requests made to notification sinks",
                                 ["sink"], registry=registry)
        self._depth = Gauge("nodemedic_notification_queue_depth", "Notifications waiting in a sink's queue",
                            ["sink"], registry=registry)
        for sink in self._sinks:
            self._declare_series(sink)

    def _declare_series(self, sink: _Sink) -> None:
        # every series exists from the start, so rate() and absent() behave
        for result in Result:
            self._outcomes.labels(sink.name, result)
        self._attempts.labels(sink.name)
        self._depth.labels(sink.name).set(sink.queue.qsize())

    def notify(self, alert: Alert) -> None:
        """Queue `alert` for every sink; never blocks, never raises."""
        for sink in self._sinks:
            if self._closed:
                self._count(sink, Result.DROPPED)
                self.log.warning("notification dropped, notifier closed", extra=self._fields(sink, alert))
                continue
            try:
                sink.queue.put_nowait(alert)
            except asyncio.QueueFull:
                self._count(sink, Result.DROPPED)
                self.log.warning("notification dropped, queue full",
                                  extra=self._fields(sink, alert, queue_size=sink.queue.maxsize))
            else:
                self._depth.labels(sink.name).set(sink.queue.qsize())

    async def start(self) -> None:
        """Start one worker per sink; alerts notified before this are waiting in the queues and go out now."""
        if self._closed or self._started:
            raise RuntimeError("Notifier.start() called twice or after close()")
        self._started = True
        for sink in self._sinks:
            self._start_worker(sink)

    def _start_worker(self, sink: _Sink) -> None:
        if self._session is None:
            self._session = self._session_factory()
        sink.worker = asyncio.create_task(self._run(sink), name=f"notify-{sink.name}")

    def reconfigure(self, config: Notifications, *, drain_timeout: float = 5.0) -> None:
        """Apply a reloaded policy's sinks without losing alerts. A sink whose settings did not change keeps its
        queue and worker; a changed or removed one delivers what it already queued under its old settings (for up
        to `drain_timeout` seconds, in the background) and then stops. Raises ValueError on a bad config, leaving
        the current sinks as they are."""
        fresh = _build_sinks(config)
        if self._closed:
            return
        unchanged = {s.name: s for s in self._sinks}  # what is left in it at the end is retired
        sinks: list[_Sink] = []
        added: list[str] = []
        for sink in fresh:
            current = unchanged.get(sink.name)
            if current is not None and current.config == sink.config and current.queue.maxsize == sink.queue.maxsize:
                sinks.append(unchanged.pop(sink.name))
                continue
            sinks.append(sink)
            added.append(sink.name)
            self._declare_series(sink)
        retired = list(unchanged.values())
        self._sinks = sinks
        for sink in sinks:
            if self._started and sink.worker is None:
                self._start_worker(sink)
        for sink in retired:
            keep(self._retiring, self._retire(sink, drain_timeout))
        if added or retired:
            self.log.info("notification sinks reconfigured", extra={
                "sinks": [s.name for s in sinks], "started": added, "retired": [s.name for s in retired]})

    async def _retire(self, sink: _Sink, drain_timeout: float) -> None:
        if sink.worker is not None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(drain_timeout):
                    await sink.queue.join()
        await self._stop_sink(sink)

    async def _stop_sink(self, sink: _Sink) -> None:
        """Cancel the sink's worker; whatever it had not sent is counted as dropped."""
        if sink.worker is not None:
            sink.worker.cancel()
            await asyncio.gather(sink.worker, return_exceptions=True)
        while not sink.queue.empty():
            self._count(sink, Result.DROPPED)
            sink.queue.get_nowait()
        self._depth.labels(sink.name).set(0)

    async def close(self, *, drain_timeout: float = 5.0) -> None:
        """Let queued alerts go out for up to `drain_timeout` seconds, then cancel what is left (counted dropped)."""
        if self._closed:
            return
        self._closed = True
        try:
            async with asyncio.timeout(drain_timeout):
                for sink in self._sinks:
                    if sink.worker is not None:
                        await sink.queue.join()
        except TimeoutError:
            self.log.warning("notifications not drained before close", extra={
                "drain_timeout": drain_timeout, "queued": {s.name: s.queue.qsize() for s in self._sinks}})
        for sink in self._sinks:
            await self._stop_sink(sink)
        await asyncio.gather(*self._retiring, return_exceptions=True)
        if self._session is not None:
            await self._session.close()

    # --- delivery -----------------------------------------------------------------------------------------------
    async def _run(self, sink: _Sink) -> None:
        while True:
            alert = await sink.queue.get()
            self._depth.labels(sink.name).set(sink.queue.qsize())
            result = Result.DROPPED  # stays so only when close() cancels this delivery midway
            try:
                result = await self._deliver(sink, alert)
            except Exception:  # a bug must cost one alert, not the sink's worker
                self.log.exception("notification failed unexpectedly", extra=self._fields(sink, alert))
                result = Result.FAILED
            finally:
                self._count(sink, result)
                sink.queue.task_done()

    async def _deliver(self, sink: _Sink, alert: Alert) -> Result:
        payload = sink.format.render(alert, cluster=self._cluster)
        attempts = sink.config.max_attempts
        answer = _Answer(None)
        for attempt in range(1, attempts + 1):
            self._attempts.labels(sink.name).inc()
            answer = _redacted(await self._post(sink, payload), sink.config.secrets())
            if answer.delivered:
                self.log.info("notification sent",
                               extra=self._fields(sink, alert, attempt=attempt, status=answer.status))
                return Result.SENT
            if not answer.retryable:
                self.log.warning("notification rejected", extra=self._fields(
                    sink, alert, attempt=attempt, status=answer.status, error=answer.error))
                return Result.REJECTED
            if attempt < attempts:
                delay = self._backoff(sink.config, attempt, answer.retry_after)
                self.log.info("notification attempt failed, retrying", extra=self._fields(
                    sink, alert, attempt=attempt, status=answer.status, error=answer.error, retry_in=round(delay, 3)))
                await self._sleep(delay)
        self.log.warning("notification failed", extra=self._fields(
            sink, alert, attempt=attempts, status=answer.status, error=answer.error))
        return Result.FAILED

    async def _post(self, sink: _Sink, payload: object) -> _Answer:
        assert self._session is not None, "workers run only after start() created the session"
        timeout = sink.config.timeout.total_seconds()
        try:
            # No redirects: following one would send the sink's custom headers (often a token) to another URL.
            async with self._session.post(sink.url, json=payload, headers=sink.headers, allow_redirects=False,
                                          timeout=aiohttp.ClientTimeout(total=timeout)) as response:
                if 200 <= response.status < 300:
                    return _Answer(response.status)
                body = await response.content.read(_ERROR_BODY_LIMIT)
                return _Answer(response.status, error=body.decode("utf-8", "replace").strip(),
                               retry_after=_retry_after(response.headers.get("Retry-After")))
        except TimeoutError:
            return _Answer(None, error=f"timed out after {timeout:g}s")
        except (aiohttp.ClientError, OSError) as e:
            return _Answer(None, error=f"{type(e).__name__}: {e}")

    def _backoff(self, config: SinkConfig, retry: int, retry_after: float | None) -> float:
        """Full jitter: uniform in [0, cap], cap = initial_backoff x 2^(retry-1) up to max_backoff."""
        ceiling = config.max_backoff.total_seconds()
        cap = min(ceiling, config.initial_backoff.total_seconds() * 2.0 ** min(retry - 1, _MAX_DOUBLINGS))
        delay = self._jitter(0.0, cap)
        if retry_after is not None:  # the server knows better when it will take more, within our own ceiling
            delay = max(delay, min(retry_after, ceiling))
        return delay

    def _count(self, sink: _Sink, result: Result) -> None:
        self._outcomes.labels(sink.name, result).inc()

    @staticmethod
    def _fields(sink: _Sink, alert: Alert, **more: object) -> dict[str, object]:
        fields: dict[str, object] = {"sink": sink.name, "alert_kind": str(alert.kind)}
        if alert.node:
            fields["node"] = alert.node
        if alert.pod:
            fields["pod"] = f"{alert.namespace}/{alert.pod}"
        fields.update({k: v for k, v in more.items() if v is not None and v != ""})
        return fields


def _redacted(answer: _Answer, secrets: tuple[str, ...]) -> _Answer:
    """The answer with the sink's URL and header values cut out of its error, raw, JSON-escaped, percent-encoded and
    base64-encoded, and any URL's userinfo: aiohttp puts the URL in some of its exceptions, and a server may echo
    the request in its error body; the error goes to logs."""
    error = redact(answer.error, secrets)
    return answer if error == answer.error else dataclasses.replace(answer, error=error)
