"""Alerts: every announcement is an Event on the right object, a log line and a notification; an API server that
refuses the Event is logged, never raised, and the notification still goes out."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.alerts.alert import Alert, AlertKind
from remediator.alerts.announcer import COMPONENT, Alerts
from remediator.model.records import PodRecord

LOG = logging.getLogger("test.alerts")
POD = PodRecord(namespace="shop", name="web-1", uid="uid-web-1", node_name="node-a")


class EventSink:
    """The API server's events endpoint: records every POST, or refuses them all (or the first `times`); with
    `lose_answers`, a refused POST is recorded all the same (carried out, its answer lost)."""

    def __init__(self, *, refuse: int | None = None, times: int | None = None, lose_answers: bool = False) -> None:
        self.posted: list[tuple[str, dict[str, Any]]] = []
        self.attempts = 0
        self.refuse, self.times, self.lose_answers = refuse, times, lose_answers

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        assert method == "POST"
        self.attempts += 1
        if any(b["metadata"]["name"] == body["metadata"]["name"] for _, b in self.posted):
            raise ApiError(409, method, path, '{"message": "already exists", "reason": "AlreadyExists"}')
        if self.refuse is not None and (self.times is None or self.attempts <= self.times):
            if self.lose_answers:
                self.posted.append((path, body))
            raise ApiError(self.refuse, method, path, '{"message": "events are off"}')
        self.posted.append((path, body))
        return body


class Recorder:
    """A notifier that records what it was handed (the real one queues per sink; see test_notify.py)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def notify(self, alert: Alert) -> None:
        self.alerts.append(alert)


PAUSES: list[float] = []


async def pause(seconds: float) -> None:
    PAUSES.append(seconds)


def alerts(api: EventSink, notifier: Recorder | None = None) -> Alerts:
    PAUSES.clear()
    return Alerts(api, notifier, identity="replica-1", log=LOG, node_event_namespace="default",  # type: ignore[arg-type]
                  sleep=pause)


def test_a_node_alert_is_an_event_on_the_node_and_a_notification() -> None:
    api, notifier = EventSink(), Recorder()
    asyncio.run(alerts(api, notifier).node("node-a", kind=AlertKind.TAINTED, type_="Warning", reason="NodemedicTainted",
                                           message="tainted k=v:NoSchedule: KernelDeadlock=True",
                                           details={"rule": "deadlock"}))
    ((path, event),) = api.posted
    assert path == "/api/v1/namespaces/default/events"
    assert event["involvedObject"] == {"kind": "Node", "apiVersion": "v1", "name": "node-a", "uid": "node-a"}
    assert (event["type"], event["reason"], event["count"]) == ("Warning", "NodemedicTainted", 1)
    assert event["source"] == {"component": COMPONENT} and event["reportingInstance"] == "replica-1"
    assert event["metadata"]["name"].startswith("node-a.") and event["metadata"]["namespace"] == "default"
    (alert,) = notifier.alerts
    assert (alert.kind, alert.severity, alert.node, alert.reason, alert.details) == (
        AlertKind.TAINTED, "warning", "node-a", "NodemedicTainted", {"rule": "deadlock"})
    assert alert.time.tzinfo is not None


def test_a_pod_alert_is_an_event_in_the_pods_namespace_and_a_notification_naming_the_pod() -> None:
    api, notifier = EventSink(), Recorder()
    asyncio.run(alerts(api, notifier).pod(POD, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                                          message="evicted from node-a"))
    ((path, event),) = api.posted
    assert path == "/api/v1/namespaces/shop/events"
    assert event["involvedObject"] == {"kind": "Pod", "apiVersion": "v1", "name": "web-1", "namespace": "shop",
                                       "uid": "uid-web-1"}
    (alert,) = notifier.alerts
    assert (alert.severity, alert.namespace, alert.pod, alert.node) == ("info", "shop", "web-1", "node-a")


def test_two_alerts_on_one_object_are_two_events_with_distinct_names() -> None:
    api = EventSink()
    a = alerts(api)

    async def twice() -> None:
        for _ in range(2):
            await a.node("node-a", kind=AlertKind.HELD, type_="Warning", reason="NodemedicHeld", message="held")

    asyncio.run(twice())
    assert len({event["metadata"]["name"] for _, event in api.posted}) == 2


def test_a_long_message_is_cut_to_what_an_event_holds() -> None:
    api, notifier = EventSink(), Recorder()
    asyncio.run(alerts(api, notifier).node("n", kind=AlertKind.HELD, type_="Warning", reason="R", message="x" * 5000))
    assert len(api.posted[0][1]["message"]) == 1024
    assert len(notifier.alerts[0].summary) == 5000, "the notification keeps the whole message"


@pytest.mark.parametrize("status", [403, 500, 0], ids=["forbidden", "server-error", "unreachable"])
def test_an_event_the_api_server_refuses_is_logged_and_the_notification_still_goes_out(
        status: int, caplog: pytest.LogCaptureFixture) -> None:
    api, notifier = EventSink(refuse=status), Recorder()
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(alerts(api, notifier).pod(POD, kind=AlertKind.EVICTION_FAILED, type_="Warning",
                                              reason="NodemedicEvictionFailed", message="eviction failed"))
    assert [r.message for r in caplog.records] == ["event not recorded"]
    assert caplog.records[0].reason == "NodemedicEvictionFailed"  # type: ignore[attr-defined]
    assert [a.kind for a in notifier.alerts] == [AlertKind.EVICTION_FAILED]
    assert (api.attempts, PAUSES) == ((1, []) if status == 403 else (3, [0.5, 1.0])), "a passing fault is retried"


@pytest.mark.parametrize("status", [0, 429, 500, 503, 504])
def test_an_event_refused_by_a_passing_fault_is_recorded_on_a_retry(status: int,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    api = EventSink(refuse=status, times=2)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(alerts(api).pod(POD, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                                    message="evicted from node-a"))
    assert [b["reason"] for _, b in api.posted] == ["NodemedicEvicted"] and api.attempts == 3
    assert PAUSES == [0.5, 1.0] and caplog.records == []


def test_an_event_whose_answer_was_lost_is_not_written_twice(caplog: pytest.LogCaptureFixture) -> None:
    """The first POST landed and its answer was lost: the retry of the same Event (same name) is refused as
    already there, which is success, not a second Event nor a warning."""
    api = EventSink(refuse=0, times=1, lose_answers=True)
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(alerts(api).pod(POD, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                                    message="evicted from node-a"))
    assert len(api.posted) == 1 and api.attempts == 2 and caplog.records == []


def test_without_sinks_alerts_are_events_and_log_lines_only(caplog: pytest.LogCaptureFixture) -> None:
    api = EventSink()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        asyncio.run(alerts(api, None).node("n", kind=AlertKind.UNTAINTED, type_="Normal", reason="NodemedicUntainted",
                                           message="removed k:NoSchedule"))
    assert len(api.posted) == 1
    assert [(r.message, r.event, r.node) for r in caplog.records] == [  # type: ignore[attr-defined]
        ("removed k:NoSchedule", "NodemedicUntainted", "n")]


def test_an_event_on_any_object_notifies_only_when_given_a_kind() -> None:
    api, notifier = EventSink(), Recorder()
    lease = {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "name": "nm", "namespace": "ops"}
    a = alerts(api, notifier)
    asyncio.run(a.object(namespace="ops", involved=lease, type_="Warning", reason="NodemedicPolicyRejected",
                         message="policy rejected"))
    assert api.posted[0][0] == "/api/v1/namespaces/ops/events" and api.posted[0][1]["involvedObject"] == lease
    assert notifier.alerts == []
    asyncio.run(a.object(namespace="ops", involved=lease, type_="Warning", reason="NodemedicCircuitBreakerOpen",
                         message="open", kind=AlertKind.BREAKER_OPEN))
    assert [(x.kind, x.severity) for x in notifier.alerts] == [(AlertKind.BREAKER_OPEN, "warning")]


def test_event_times_are_utc_seconds() -> None:
    api = EventSink()
    asyncio.run(alerts(api).node("n", kind=AlertKind.HELD, type_="Warning", reason="R", message="m"))
    event = api.posted[0][1]
    stamp = dt.datetime.strptime(event["firstTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert abs((dt.datetime.now(dt.UTC) - stamp).total_seconds()) < 5
    assert event["firstTimestamp"] == event["lastTimestamp"]
