"""Pods stuck terminating: the check on plain data, and the pod watch on a fake API client."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from pathlib import Path
from typing import Any

import pytest

from agent.bounds import field_problems
from agent.checks.stuck_pods import CONDITION, Config, StuckPods
from agent.host import HostRoot
from agent.reporting.pod_watch import PodWatch
from nodemedic_common.kube_errors import WatchExpired
from tests.scripted_kube import ScriptedKube

NOW = dt.datetime(2025, 5, 1, 12, 0, tzinfo=dt.UTC)
MINUTE = dt.timedelta(minutes=1)


def check_with(pods: dict[str, dt.datetime] | None) -> StuckPods:
    check = StuckPods(Config(margin=5 * MINUTE), HostRoot(Path("/nonexistent")))
    check.attach(lambda: pods)
    return check


def test_without_a_source_or_before_it_synced_nothing_is_reported() -> None:
    assert asyncio.run(StuckPods(Config(), HostRoot(Path("/"))).observe(NOW)).conditions == ()
    assert asyncio.run(check_with(None).observe(NOW)).conditions == ()


@pytest.mark.parametrize(("pods", "status", "shown"), [
    ({}, "False", []),
    ({"default/web-1": NOW - 4 * MINUTE}, "False", []),  # still within the margin
    ({"default/web-1": NOW - 6 * MINUTE, "ml/train-0": NOW - 60 * MINUTE, "default/ok": NOW}, "True",
     ["ml/train-0", "default/web-1"]),
], ids=["none", "within-margin", "two-stuck"])
def test_pods_past_their_deletion_time_by_the_margin_are_stuck(pods: dict, status: str, shown: list[str]) -> None:
    (report,) = asyncio.run(check_with(pods).observe(NOW)).conditions

    assert (report.type, str(report.status)) == (CONDITION, status)
    assert [name for name in shown if name in report.message] == shown
    assert "default/ok" not in report.message


def test_validation_names_the_bad_margin() -> None:
    assert problems(Config(margin=dt.timedelta(0))) == ["margin: must be positive, got 0s"]


def pod(name: str, uid: str, rv: str, deleting: str | None = None) -> dict[str, Any]:
    meta = {"name": name, "namespace": "default", "uid": uid, "resourceVersion": rv}
    if deleting:
        meta["deletionTimestamp"] = deleting
    return {"metadata": meta}


def test_the_watch_keeps_the_deleting_pods_of_this_node_and_relists_after_410() -> None:
    kube = ScriptedKube(
        lists=[{"metadata": {"resourceVersion": "10"}, "items": [pod("a", "1", "9"), pod("b", "2", "10",
                                                                                      "2025-05-01T11:00:00Z")]},
               {"metadata": {"resourceVersion": "50"}, "items": [pod("c", "3", "50", "2025-05-01T11:30:00Z")]}],
        watches=[[{"type": "MODIFIED", "object": pod("a", "1", "11", "2025-05-01T11:50:00Z")},
                  {"type": "DELETED", "object": pod("b", "2", "12", "2025-05-01T11:00:00Z")},
                  {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}],
                 WatchExpired(410, "WATCH", "/api/v1/pods", "too old")])
    watch = PodWatch(kube, "node-a", log=logging.getLogger("t"), retry=0)  # type: ignore[arg-type]
    seen: list[dict[str, dt.datetime] | None] = [watch.terminating()]

    async def scenario() -> None:
        task = asyncio.create_task(watch.run())
        while len(kube.calls) < 5:  # LIST, watch, resumed watch (410), LIST, watch (stays open)
            await asyncio.sleep(0)
        seen.append(watch.terminating())
        task.cancel()

    asyncio.run(scenario())

    assert seen[0] is None  # before the first LIST
    assert seen[-1] == {"default/c": dt.datetime(2025, 5, 1, 11, 30, tzinfo=dt.UTC)}  # after the relist
    assert all(c.path == "/api/v1/pods" and c.query["fieldSelector"] == "spec.nodeName=node-a" for c in kube.calls)
    # resumed from the bookmark when the watch ended; 410 Gone: a fresh LIST
    assert kube.versions() == [("LIST", ""), ("WATCH", "10"), ("WATCH", "20"), ("LIST", ""), ("WATCH", "50")]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
