"""Notification sinks against real HTTP receivers on 127.0.0.1: formats, retries, rejections, queues, close()."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import socket
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from remediator.alerts.alert import Alert, AlertKind
from remediator.alerts.formats import FORMATS
from remediator.alerts.notifier import Notifier, Result
from remediator.policy.notifications import Notifications, SinkConfig

NOW = dt.datetime(2025, 1, 1, 12, 0, 0, 250000, tzinfo=dt.UTC)
LOG = logging.getLogger("test.notify")
FAST = {"initial_backoff": dt.timedelta(milliseconds=1), "max_backoff": dt.timedelta(milliseconds=1)}
HANG = "hang"  # a scripted answer: hold the request until the receiver is released


def alert(**changes: Any) -> Alert:
    base: dict[str, Any] = {"kind": AlertKind.EVICTED, "severity": "warning", "summary": "evicted app/web-1 from n1",
                            "node": "n1", "namespace": "app", "pod": "web-1", "reason": "PDB",
                            "details": {"rule": "kubelet-down"}, "time": NOW}
    return Alert(**(base | changes))


def run(body: Callable[[], Coroutine[Any, Any, None]], *, timeout: float = 20.0) -> None:
    """pytest-asyncio is not installed: each async test body runs in its own loop, with an overall deadline."""
    asyncio.run(asyncio.wait_for(body(), timeout))


async def eventually(probe: Callable[[], object], *, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.005)


@dataclass
class Receiver:
    """An HTTP server that records every request and answers from a script (then 200)."""

    script: list[int | str] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str], Any]] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    runner: web.AppRunner | None = None
    url: str = ""

    @property
    def bodies(self) -> list[Any]:
        return [body for _, _, body in self.requests]

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((request.path, dict(request.headers), await request.json()))
        answer = self.script.pop(0) if self.script else 200
        if answer == HANG:
            await self.release.wait()
            answer = 200
        assert isinstance(answer, int)
        return web.Response(status=answer, text="ok" if answer < 300 else f"answer {answer}")

    async def start(self, sock: socket.socket | None = None) -> Receiver:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        self.runner = web.AppRunner(app, shutdown_timeout=1.0)
        await self.runner.setup()
        site = web.SockSite(self.runner, sock) if sock else web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        host, port = self.runner.addresses[0][:2]
        self.url = f"http://{host}:{port}/hook"
        return self

    async def stop(self) -> None:
        self.release.set()  # a held request would otherwise keep cleanup waiting
        if self.runner is not None:
            await self.runner.cleanup()


def sink(url: str, type_: str = "webhook", name: str = "", **changes: Any) -> SinkConfig:
    return SinkConfig(type=type_, url=url, name=name or type_, **changes)


@dataclass
class Harness:
    notifier: Notifier
    registry: CollectorRegistry
    delays: list[float]

    def count(self, sink_name: str, result: Result) -> float:
        return self.registry.get_sample_value("nodemedic_notifications_total",
                                              {"sink": sink_name, "result": result}) or 0.0

    def attempts(self, sink_name: str) -> float:
        return self.registry.get_sample_value("nodemedic_notification_attempts_total", {"sink": sink_name}) or 0.0

    def depth(self, sink_name: str) -> float | None:
        return self.registry.get_sample_value("nodemedic_notification_queue_depth", {"sink": sink_name})


def harness(*sinks: SinkConfig, queue_size: int = 100, real_sleep: bool = False,
            jitter: Callable[[float, float], float] = lambda low, high: high) -> Harness:
    """A Notifier whose back-off waits are recorded and skipped (unless `real_sleep`), jitter at the cap."""
    registry, delays = CollectorRegistry(), []

    async def recorded_sleep(seconds: float) -> None:
        delays.append(seconds)
        if real_sleep:
            await asyncio.sleep(seconds)

    sleep: Callable[[float], Awaitable[None]] = recorded_sleep
    notifier = Notifier(Notifications(queue_size=queue_size, sinks=sinks), cluster="prod-eu", registry=registry,
                        log=LOG, sleep=sleep, jitter=jitter)
    return Harness(notifier, registry, delays)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: alert(severity="error"), "Alert.severity 'error': must be one of info, warning, critical"),
    (lambda: alert(time=dt.datetime(2025, 1, 1)), "must be timezone-aware"),
    (lambda: harness(sink("http://127.0.0.1:1", "pagerduty")), r"notifications.sinks\[0\].type 'pagerduty'"),
    (lambda: harness(sink("http://127.0.0.1:1"), sink("http://127.0.0.1:2")),
     r"notifications.sinks\[1\].name 'webhook': used by another sink"),
    (lambda: harness(sink("http://127.0.0.1:1", max_attempts=0)), r"sinks\[0\].maxAttempts 0: must be at least 1"),
    (lambda: harness(sink("http://127.0.0.1:1"), queue_size=0), "queueSize 0: must be at least 1"),
], ids=["bad-severity", "naive-time", "unknown-sink-type", "duplicate-sink-name",
        "no-attempts", "unbounded-queue"])
def test_bad_input_fails_early_naming_what_is_wrong(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# --- delivery to real receivers ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("type_", "path"), [
    ("webhook", "/hook"),
    ("slack", "/hook"),
    ("alertmanager", "/hook/api/v2/alerts"),
], ids=["webhook", "slack", "alertmanager"])
def test_each_format_reaches_a_real_receiver_with_its_shape_and_the_custom_headers(type_: str, path: str) -> None:
    async def body() -> None:
        receiver = await Receiver().start()
        h = harness(sink(receiver.url, type_, headers=(("Authorization", "Bearer t0ken"),)))
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count(type_, Result.SENT) == 1, what=f"{type_} sent")
        await h.notifier.close()
        await receiver.stop()

        [(got_path, headers, payload)] = receiver.requests
        assert got_path == path
        assert headers["Authorization"] == "Bearer t0ken"
        assert headers["Content-Type"] == "application/json"
        assert payload == FORMATS[type_].render(alert(), cluster="prod-eu")
        if type_ == "alertmanager":
            [am] = payload
            assert all(isinstance(v, str) for v in am["labels"].values())
            starts, ends = (dt.datetime.fromisoformat(am[k]) for k in ("startsAt", "endsAt"))
            assert starts < ends
        assert h.attempts(type_) == 1

    run(body)


@pytest.mark.parametrize(("script", "result", "attempts", "delays"), [
    ([], Result.SENT, 1, []),
    ([503, 503], Result.SENT, 3, [0.5, 1.0]),
    ([500, 502, 504, 429], Result.SENT, 5, [0.5, 1.0, 2.0, 2.0]),
    ([HANG], Result.SENT, 2, [0.5]),
    ([400], Result.REJECTED, 1, []),
    ([404], Result.REJECTED, 1, []),
    ([301], Result.REJECTED, 1, []),
    ([503, 401], Result.REJECTED, 2, [0.5]),
    ([503] * 5, Result.FAILED, 5, [0.5, 1.0, 2.0, 2.0]),
], ids=["ok-first-time", "503-twice-then-ok", "5xx-and-429-then-ok", "timeout-then-ok", "400-not-retried",
        "404-not-retried", "redirect-is-a-rejection", "503-then-401", "503-until-attempts-run-out"])
def test_retryable_answers_are_retried_with_doubling_back_off_and_others_end_delivery(
        script: list[int | str], result: Result, attempts: int, delays: list[float]) -> None:
    async def body() -> None:
        receiver = await Receiver(script=list(script)).start()
        h = harness(sink(receiver.url, max_attempts=5, timeout=dt.timedelta(milliseconds=200),
                         initial_backoff=dt.timedelta(milliseconds=500), max_backoff=dt.timedelta(seconds=2)))
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", result) == 1, what=f"result {result}")
        await h.notifier.close()
        await receiver.stop()

        assert h.attempts("webhook") == attempts
        assert len(receiver.requests) == attempts
        assert h.delays == delays
        assert sum(h.count("webhook", r) for r in Result) == 1

    run(body)


def test_back_off_draws_full_jitter_under_a_cap_that_doubles_up_to_max_backoff() -> None:
    async def body() -> None:
        bounds: list[tuple[float, float]] = []

        def lowest(low: float, high: float) -> float:
            bounds.append((low, high))
            return low

        receiver = await Receiver(script=[503, 503, 503, 503]).start()
        h = harness(sink(receiver.url, max_attempts=5, initial_backoff=dt.timedelta(seconds=1),
                         max_backoff=dt.timedelta(seconds=4)), jitter=lowest)
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", Result.SENT) == 1, what="sent")
        await h.notifier.close()
        await receiver.stop()
        assert bounds == [(0.0, 1.0), (0.0, 2.0), (0.0, 4.0), (0.0, 4.0)]
        assert h.delays == [0.0, 0.0, 0.0, 0.0]

    run(body)


def test_a_retry_after_longer_than_the_drawn_back_off_is_honoured() -> None:
    async def body() -> None:
        class Limited(Receiver):
            async def _handle(self, request: web.Request) -> web.Response:
                self.requests.append((request.path, dict(request.headers), await request.json()))
                if len(self.requests) == 1:
                    return web.Response(status=429, headers={"Retry-After": "3"})
                return web.Response(text="ok")

        receiver = await Limited().start()
        h = harness(sink(receiver.url, max_backoff=dt.timedelta(seconds=10)), jitter=lambda low, high: low)
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", Result.SENT) == 1, what="sent")
        await h.notifier.close()
        await receiver.stop()
        assert h.delays == [3.0]

    run(body)


def test_an_alert_arrives_with_real_back_off_once_a_receiver_that_was_down_starts_listening() -> None:
    async def body() -> None:
        # Bound but not listening: connections are refused until the receiver starts on this very socket.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        h = harness(sink(f"http://127.0.0.1:{port}/hook", max_attempts=50,
                         initial_backoff=dt.timedelta(milliseconds=20), max_backoff=dt.timedelta(milliseconds=80)),
                    real_sleep=True, jitter=lambda low, high: high)
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.attempts("webhook") >= 3, what="three refused attempts")
        assert h.count("webhook", Result.SENT) == 0

        receiver = await Receiver().start(sock)
        await eventually(lambda: h.count("webhook", Result.SENT) == 1, what="sent after the receiver came up")
        await h.notifier.close()
        await receiver.stop()

        assert receiver.bodies == [FORMATS["webhook"].render(alert(), cluster="prod-eu")]
        assert len(h.delays) >= 3  # at least the three refusals seen before the receiver started
        assert h.attempts("webhook") == len(h.delays) + 1
        assert h.count("webhook", Result.FAILED) == 0

    run(body)


def test_a_full_queue_drops_the_alert_and_counts_it_while_order_is_kept_for_the_rest() -> None:
    async def body() -> None:
        receiver = await Receiver(script=[HANG]).start()
        h = harness(sink(receiver.url), queue_size=1)
        await h.notifier.start()
        h.notifier.notify(alert(summary="first"))
        await eventually(lambda: len(receiver.requests) == 1, what="first alert in flight")
        h.notifier.notify(alert(summary="second"))  # waits in the queue
        h.notifier.notify(alert(summary="third"))  # no room: dropped, and notify() returned at once
        assert h.count("webhook", Result.DROPPED) == 1
        assert h.depth("webhook") == 1

        receiver.release.set()
        await eventually(lambda: h.count("webhook", Result.SENT) == 2, what="the two queued alerts sent")
        assert [b["summary"] for b in receiver.bodies] == ["first", "second"]
        assert h.depth("webhook") == 0
        await h.notifier.close()
        await receiver.stop()

    run(body)


def test_a_hanging_sink_does_not_delay_a_healthy_one() -> None:
    async def body() -> None:
        stuck = await Receiver(script=[HANG] * 3).start()
        healthy = await Receiver().start()
        h = harness(sink(stuck.url, name="stuck", timeout=dt.timedelta(seconds=30)), sink(healthy.url, name="ok"))
        await h.notifier.start()
        for i in range(3):
            h.notifier.notify(alert(summary=f"alert {i}"))
        await eventually(lambda: h.count("ok", Result.SENT) == 3, what="healthy sink got all three", timeout=3.0)

        assert [b["summary"] for b in healthy.bodies] == ["alert 0", "alert 1", "alert 2"]
        assert len(stuck.requests) == 1
        assert h.count("stuck", Result.SENT) == 0
        assert h.depth("stuck") == 2

        stuck.release.set()
        await eventually(lambda: h.count("stuck", Result.SENT) == 3, what="stuck sink caught up")
        await h.notifier.close()
        await stuck.stop()
        await healthy.stop()

    run(body)


def test_close_drains_what_is_queued_before_returning() -> None:
    async def body() -> None:
        receiver = await Receiver().start()
        h = harness(sink(receiver.url))
        for i in range(5):  # queued before start(): nothing has been sent when close() begins
            h.notifier.notify(alert(summary=f"alert {i}"))
        assert h.depth("webhook") == 5
        await h.notifier.start()
        await h.notifier.close()

        assert [b["summary"] for b in receiver.bodies] == [f"alert {i}" for i in range(5)]
        assert h.count("webhook", Result.SENT) == 5
        h.notifier.notify(alert(summary="too late"))  # after close: counted, not raised, not sent
        assert h.count("webhook", Result.DROPPED) == 1
        await receiver.stop()
        assert len(receiver.requests) == 5

    run(body)


def test_close_gives_up_at_the_drain_timeout_and_counts_what_never_went_out_as_dropped() -> None:
    async def body() -> None:
        receiver = await Receiver(script=[HANG]).start()
        h = harness(sink(receiver.url, timeout=dt.timedelta(seconds=30)))
        await h.notifier.start()
        for i in range(3):
            h.notifier.notify(alert(summary=f"alert {i}"))
        await eventually(lambda: len(receiver.requests) == 1, what="first alert in flight")

        started = time.monotonic()
        await h.notifier.close(drain_timeout=0.2)
        assert time.monotonic() - started < 2.0

        assert h.count("webhook", Result.DROPPED) == 3  # the one in flight and the two queued
        assert h.count("webhook", Result.SENT) == 0
        assert h.depth("webhook") == 0
        await receiver.stop()

    run(body)


def test_a_rejection_is_logged_once_with_the_status_and_the_receivers_answer(
        caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        receiver = await Receiver(script=[400]).start()
        h = harness(sink(receiver.url))
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", Result.REJECTED) == 1, what="rejected")
        await h.notifier.close()
        await receiver.stop()

    with caplog.at_level(logging.INFO, logger=LOG.name):
        run(body)
    [record] = [r for r in caplog.records if r.getMessage() == "notification rejected"]
    assert (record.sink, record.status, record.error, record.node, record.pod) == (  # type: ignore[attr-defined]
        "webhook", 400, "answer 400", "n1", "app/web-1")
    assert not [r for r in caplog.records if r.getMessage() == "notification sent"]


def test_an_error_that_repeats_the_sink_url_or_a_header_is_logged_with_them_cut_out(
        caplog: pytest.LogCaptureFixture) -> None:
    async def echo(request: web.Request) -> web.Response:  # as some proxies answer: the request, repeated
        return web.Response(status=400, text=f"bad request {request.path_qs} {request.headers['Authorization']}")

    async def body() -> None:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", echo)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        h = harness(sink(f"http://{host}:{port}/services/T0/B0/urlsecret0123",
                         headers=(("Authorization", "Bearer headersecret0123"),)))
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", Result.REJECTED) == 1, what="rejected")
        await h.notifier.close()
        await runner.cleanup()

    with caplog.at_level(logging.INFO, logger=LOG.name):
        run(body)
    [record] = [r for r in caplog.records if r.getMessage() == "notification rejected"]
    assert record.error == "bad request <redacted> <redacted>"  # type: ignore[attr-defined]
    text = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "urlsecret0123" not in text and "headersecret0123" not in text, text


def test_an_error_that_echoes_the_request_json_escaped_or_encoded_is_logged_with_every_form_cut_out(
        caplog: pytest.LogCaptureFixture) -> None:
    async def echo(request: web.Request) -> web.Response:  # a JSON error body escaping "/" as PHP does
        body = json.dumps({"url": str(request.url), "token": request.path.rsplit("/", 1)[-1],
                           "encoded": quote(request.path, safe=""), "auth": request.headers["Authorization"]})
        return web.Response(status=400, text=body.replace("/", "\\/"))

    async def body() -> None:
        app = web.Application()
        app.router.add_route("POST", "/{tail:.*}", echo)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        h = harness(sink(f"http://hookuser:p4sswordX@{host}:{port}/services/T0/B0/urlsecret0123"))
        await h.notifier.start()
        h.notifier.notify(alert())
        await eventually(lambda: h.count("webhook", Result.REJECTED) == 1, what="rejected")
        await h.notifier.close()
        await runner.cleanup()

    with caplog.at_level(logging.INFO, logger=LOG.name):
        run(body)
    [record] = [r for r in caplog.records if r.getMessage() == "notification rejected"]
    basic = base64.b64encode(b"hookuser:p4sswordX").decode()
    assert record.error.count("<redacted>") >= 4, record.error  # type: ignore[attr-defined]
    text = "\n".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    for leak in ("urlsecret0123", "p4sswordX", basic):
        assert leak not in text, (leak, text)


def test_the_secrets_of_a_sink_are_its_url_its_path_and_its_header_credentials() -> None:
    config = sink("https://hooks.example/services/T0/B0/XYZsecret?k=v",
                  headers=(("Authorization", "Bearer tok3n-value"), ("X-Debug", "1")))
    assert set(config.secrets()) == {"https://hooks.example/services/T0/B0/XYZsecret?k=v",
                                     "/services/T0/B0/XYZsecret?k=v", "T0/B0/XYZsecret", "B0/XYZsecret", "XYZsecret",
                                     "Bearer tok3n-value", "tok3n-value"}
    assert "XYZsecret" not in repr(config) and "tok3n" not in repr(config)


# --- reconfigure (policy reload) ------------------------------------------------------------------------------


def test_reconfigure_keeps_an_unchanged_sink_starts_a_new_one_and_retires_a_removed_one_after_its_queue() -> None:
    async def body() -> None:
        kept, removed, added = (await Receiver().start(), await Receiver(script=[HANG]).start(),
                                await Receiver().start())
        h = harness(sink(kept.url, name="kept"), sink(removed.url, name="removed", timeout=dt.timedelta(seconds=30)))
        await h.notifier.start()
        h.notifier.notify(alert(summary="before"))
        h.notifier.notify(alert(summary="queued behind the held one"))
        await eventually(lambda: len(removed.requests) == 1 and len(kept.requests) == 2, what="first deliveries")

        h.notifier.reconfigure(Notifications(queue_size=100, sinks=(sink(kept.url, name="kept"),
                                                                     sink(added.url, name="added"))))
        h.notifier.notify(alert(summary="after"))
        await eventually(lambda: len(added.requests) == 1 and len(kept.requests) == 3, what="deliveries after reload")
        assert [b["summary"] for b in kept.bodies] == ["before", "queued behind the held one", "after"]
        assert [b["summary"] for b in added.bodies] == ["after"]

        removed.release.set()  # the retired sink finishes what it had queued under its old settings, then stops
        await eventually(lambda: h.count("removed", Result.SENT) == 2, what="retired sink drained")
        await eventually(lambda: h.depth("removed") == 0, what="retired sink stopped")
        assert [b["summary"] for b in removed.bodies] == ["before", "queued behind the held one"]
        await h.notifier.close()
        for r in (kept, removed, added):
            await r.stop()

    run(body)


def test_reconfigure_with_changed_settings_uses_them_for_new_alerts_and_a_retired_sink_is_bounded() -> None:
    async def body() -> None:
        old, new = await Receiver(script=[HANG]).start(), await Receiver().start()
        h = harness(sink(old.url, name="hook", timeout=dt.timedelta(seconds=30)))
        await h.notifier.start()
        h.notifier.notify(alert(summary="held"))
        h.notifier.notify(alert(summary="stuck behind"))
        await eventually(lambda: len(old.requests) == 1, what="first alert in flight")

        h.notifier.reconfigure(Notifications(queue_size=100, sinks=(sink(new.url, name="hook"),)), drain_timeout=0.2)
        h.notifier.notify(alert(summary="to the new url"))
        await eventually(lambda: len(new.requests) == 1, what="alert at the new url")
        assert [b["summary"] for b in new.bodies] == ["to the new url"]
        # the old one never answers: after the drain timeout its two alerts are dropped, not lost silently
        await eventually(lambda: h.count("hook", Result.DROPPED) == 2, what="retired sink given up")
        await h.notifier.close()
        await old.stop()
        await new.stop()

    run(body)


def test_a_bad_reconfiguration_leaves_the_running_sinks_alone() -> None:
    async def body() -> None:
        receiver = await Receiver().start()
        h = harness(sink(receiver.url, name="hook"))
        await h.notifier.start()
        with pytest.raises(ValueError, match="queueSize 0"):
            h.notifier.reconfigure(Notifications(queue_size=0, sinks=()))
        h.notifier.notify(alert(summary="still delivered"))
        await eventually(lambda: len(receiver.requests) == 1, what="delivery after a refused reload")
        await h.notifier.close()
        await receiver.stop()

    run(body)
