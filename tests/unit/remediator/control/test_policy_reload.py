"""PolicyReload.poll: a changed policy is counted and logged, and reconfigures the notification sinks only when they
changed (a failure keeps the old ones); a rejected edit is counted, logged and, unless in a dry run, announced with a
Warning Event on the Lease naming at most five errors; an unchanged file does nothing."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from remediator.alerts.metrics import create
from remediator.control.policy_reload import PolicyReload
from remediator.policy.model import Policy
from remediator.policy.notifications import Notifications

LOG = logging.getLogger("test.policy_reload")
OLD = Policy()
SAME_SINKS = Policy(notifications=Notifications())
NEW_SINKS = Policy(notifications=Notifications(queue_size=5))


class Source:
    """A PolicySource whose next poll answers what the test says."""

    def __init__(self) -> None:
        self.path = Path("/etc/nodemedic/policy.yaml")
        self.policy = OLD
        self.next: tuple[Policy | None, list[str]] = (None, [])

    def poll(self) -> tuple[bool, list[str]]:
        policy, errors = self.next
        if policy is not None:
            self.policy = policy
        return policy is not None, errors


class Notifier:
    def __init__(self, fail: bool = False) -> None:
        self.configured: list[Notifications] = []
        self.fail = fail

    def reconfigure(self, notifications: Notifications) -> None:
        if self.fail:
            raise ValueError("bad sink")
        self.configured.append(notifications)


class FakeAlerts:
    def __init__(self, notifier: Notifier | None) -> None:
        self.notifier = notifier
        self.objects: list[dict[str, Any]] = []

    async def object(self, **kw: Any) -> None:
        self.objects.append(kw)


def _reload(notifier: Notifier | None = None, *, announce: bool = True
            ) -> tuple[PolicyReload, Source, FakeAlerts, CollectorRegistry]:
    source, alerts, r = Source(), FakeAlerts(notifier), CollectorRegistry()
    reload = PolicyReload(source, alerts=alerts, metrics=create(r), log=LOG,  # type: ignore[arg-type]
                          lease_namespace="nodemedic", lease_name="nodemedic-remediator", announce=announce)
    return reload, source, alerts, r


def _count(r: CollectorRegistry, result: str) -> float | None:
    return r.get_sample_value("nodemedic_policy_reloads_total", {"result": result})


def test_a_changed_policy_becomes_current_is_counted_and_reconfigures_changed_sinks() -> None:
    notifier = Notifier()
    reload, source, _, r = _reload(notifier)
    source.next = (NEW_SINKS, [])
    reload.poll()
    assert reload.current is NEW_SINKS
    assert notifier.configured == [NEW_SINKS.notifications]
    assert _count(r, "ok") == 1


def test_unchanged_sinks_are_not_reconfigured_and_no_notifier_is_fine() -> None:
    notifier = Notifier()
    reload, source, _, r = _reload(notifier)
    source.next = (SAME_SINKS, [])
    reload.poll()
    assert notifier.configured == []
    reload, source, _, r = _reload(None)
    source.next = (NEW_SINKS, [])
    reload.poll()
    assert _count(r, "ok") == 1


def test_sinks_that_fail_to_reconfigure_are_logged_and_the_old_ones_kept(caplog: pytest.LogCaptureFixture) -> None:
    reload, source, _, _ = _reload(Notifier(fail=True))
    source.next = (NEW_SINKS, [])
    with caplog.at_level(logging.INFO, logger=LOG.name):
        reload.poll()
    errors = [rec for rec in caplog.records if rec.levelno == logging.ERROR]
    assert [rec.getMessage() for rec in errors] == ["notification sinks not reconfigured, keeping the old ones"]
    assert errors[0].error == "bad sink"  # type: ignore[attr-defined]
    assert reload.current is NEW_SINKS


def test_an_unchanged_file_does_nothing() -> None:
    reload, _, alerts, r = _reload(Notifier())
    reload.poll()
    assert (_count(r, "ok"), _count(r, "error"), alerts.objects) == (None, None, [])  # no series made


def test_a_rejected_edit_is_counted_and_announced_on_the_lease_with_at_most_five_errors() -> None:
    async def run() -> tuple[PolicyReload, FakeAlerts, CollectorRegistry]:
        reload, source, alerts, r = _reload()
        source.next = (None, [f"e{i}" for i in range(7)])
        reload.poll()
        assert len(reload.background) == 1
        await asyncio.wait_for(asyncio.gather(*reload.background), timeout=5)
        return reload, alerts, r

    reload, alerts, r = asyncio.run(run())
    assert reload.current is OLD
    assert _count(r, "error") == 1
    assert reload.background == set()  # done events are let go
    assert alerts.objects == [{
        "namespace": "nodemedic", "type_": "Warning", "reason": "NodemedicPolicyRejected",
        "message": "policy /etc/nodemedic/policy.yaml rejected, keeping the last good one: e0; e1; e2; e3; e4",
        "involved": {"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "name": "nodemedic-remediator",
                     "namespace": "nodemedic"}}]


def test_a_rejected_edit_in_a_dry_run_is_counted_and_logged_but_not_announced(
        caplog: pytest.LogCaptureFixture) -> None:
    reload, source, alerts, r = _reload(announce=False)
    source.next = (None, ["rules[0]: bad"])
    with caplog.at_level(logging.ERROR, logger=LOG.name):
        reload.poll()  # no running loop needed: nothing is sent
    assert _count(r, "error") == 1
    assert alerts.objects == [] and reload.background == set()
    assert [rec.getMessage() for rec in caplog.records] == ["policy rejected, keeping the last good one"]
    assert caplog.records[0].errors == ["rules[0]: bad"]  # type: ignore[attr-defined]
