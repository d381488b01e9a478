"""The running remediator's policy: re-read when the file (or a secret file it reads) changes, the notification
sinks reconfigured with it, and a rejected edit counted, logged and announced on the Lease, the last good policy
kept."""

from __future__ import annotations

import asyncio
import logging

from nodemedic_common.tasks import keep
from remediator.alerts.announcer import Alerts
from remediator.alerts.metrics import Metrics
from remediator.policy.model import Policy
from remediator.policy.source import PolicySource


class PolicyReload:
    def __init__(self, source: PolicySource, *, alerts: Alerts, metrics: Metrics, log: logging.Logger,
                 lease_namespace: str, lease_name: str, announce: bool) -> None:
        self.source, self.alerts, self.metrics, self.log = source, alerts, metrics, log
        self.lease_namespace, self.lease_name = lease_namespace, lease_name
        self.announce = announce  # False in a dry run, which writes nothing, not even the rejection's Event
        self.background: set[asyncio.Task[None]] = set()  # rejection Events on their way, kept referenced

    @property
    def current(self) -> Policy:
        return self.source.policy

    def poll(self) -> None:
        before = self.source.policy
        changed, errors = self.source.poll()
        where = str(self.source.path)
        if changed:
            self.metrics.policy_reloads.labels("ok").inc()
            self.log.info("policy reloaded", extra={"policy": where})
            notifier = self.alerts.notifier
            if notifier is not None and self.source.policy.notifications != before.notifications:
                try:
                    notifier.reconfigure(self.source.policy.notifications)
                except ValueError as e:  # validated with the file, so only a bug gets here: keep the old sinks
                    self.log.error("notification sinks not reconfigured, keeping the old ones",
                                   extra={"policy": where, "error": str(e)})
        elif errors:
            self.metrics.policy_reloads.labels("error").inc()
            self.log.error("policy rejected, keeping the last good one", extra={"policy": where, "errors": errors})
            if not self.announce:
                return
            message = f"policy {where} rejected, keeping the last good one: " + "; ".join(errors[:5])
            keep(self.background, self.alerts.object(
                namespace=self.lease_namespace, type_="Warning", reason="NodemedicPolicyRejected", message=message,
                involved={"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "name": self.lease_name,
                          "namespace": self.lease_namespace}))
