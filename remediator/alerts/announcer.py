"""Every remediation is announced three ways: a Kubernetes Event (on the Node or Pod), a metric (by the
caller), and a notification to the configured sinks. Failures to announce are logged, never raised:
an unreachable webhook must not stop a remediation, nor hide it (the Event and the log still say it).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import secrets
from collections.abc import Awaitable, Callable

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.alerts.alert import Alert, AlertKind
from remediator.alerts.notifier import Notifier
from remediator.model.records import PodRecord

COMPONENT = "nodemedic-remediator"
# An Event is the remediation's record: a passing fault (no answer, throttling, a server error) is tried again twice,
# after these pauses; the remediation itself never waits on more than this.
EVENT_RETRY_PAUSES = (0.5, 1.0)
EVENT_RETRYABLE = frozenset({0, 429, 500, 502, 503, 504})


class Alerts:
    def __init__(self, kube: Kube, notifier: Notifier | None, *, identity: str, log: logging.Logger,
                 node_event_namespace: str = "default",
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.kube, self.notifier, self.identity, self.log = kube, notifier, identity, log
        self.node_event_namespace = node_event_namespace
        self.sleep = sleep

    async def _event(self, *, namespace: str, involved: dict[str, str], type_: str, reason: str, message: str) -> None:
        now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{involved['name']}.{secrets.token_hex(8)}", "namespace": namespace},
            "involvedObject": involved,
            "type": type_,
            "reason": reason,
            "message": message[:1024],
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.identity,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        for attempt, pause in enumerate((*EVENT_RETRY_PAUSES, None)):
            try:
                await self.kube.request("POST", f"/api/v1/namespaces/{namespace}/events", body=body)
                return
            except ApiError as e:
                if e.status == 409 and attempt > 0:
                    return  # an earlier attempt of this very Event (its name is ours) landed and its answer was lost
                if pause is None or e.status not in EVENT_RETRYABLE:
                    self.log.warning("event not recorded", extra={"reason": reason, "error": str(e)})
                    return
            await self.sleep(pause)

    async def node(self, node: str, *, kind: str, type_: str, reason: str, message: str,
                   details: dict[str, str] | None = None) -> None:
        self.log.info(message, extra={"event": reason, "node": node, "details": details or {}})
        await self._event(namespace=self.node_event_namespace,
                          involved={"kind": "Node", "apiVersion": "v1", "name": node, "uid": node},
                          type_=type_, reason=reason, message=message)
        self._notify(kind, type_, message, node=node, reason=reason, details=details)

    async def pod(self, pod: PodRecord, *, kind: AlertKind, type_: str, reason: str, message: str,
                  details: dict[str, str] | None = None) -> None:
        self.log.info(message, extra={"event": reason, "pod": pod.key, "node": pod.node_name, "details": details or {}})
        await self._event(namespace=pod.namespace,
                          involved={"kind": "Pod", "apiVersion": "v1", "name": pod.name, "namespace": pod.namespace,
                                    "uid": pod.uid},
                          type_=type_, reason=reason, message=message)
        self._notify(kind, type_, message, node=pod.node_name, namespace=pod.namespace, pod=pod.name, reason=reason,
                     details=details)

    async def object(self, *, namespace: str, involved: dict[str, str], type_: str, reason: str, message: str,
                     kind: str | None = None) -> None:
        """An Event on any object (e.g. the Lease, for policy reload failures); the caller logs."""
        await self._event(namespace=namespace, involved=involved, type_=type_, reason=reason, message=message)
        if kind is not None:
            self._notify(kind, type_, message, reason=reason)

    def _notify(self, kind: str, type_: str, message: str, *, node: str = "", namespace: str = "",
                pod: str = "", reason: str = "", details: dict[str, str] | None = None) -> None:
        if self.notifier is None:
            return
        self.notifier.notify(Alert(kind=kind, severity="warning" if type_ == "Warning" else "info", summary=message,
                                   node=node, namespace=namespace, pod=pod, reason=reason,
                                   details=dict(details or {}), time=dt.datetime.now(dt.UTC)))
