"""The agent's pod watch against a real HTTP server, through the client `agent run` builds: an event of any size the
API server accepts is read (aiohttp's line iterator stopped at 512 KiB and raised LineTooLong, which killed the agent:
issue 25); one over the explicit bound is counted and the pod watch relists instead of crashing or re-reading it
forever."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.cli import api_client
from agent.reporting.pod_watch import PodWatch
from nodemedic_common import kube_client
from nodemedic_common.kube_client import Kube
from tests.watch_server import WatchServer, big_object, serving

MiB = 1 << 20
KUBECONFIG = """apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
"""


def client(tmp_path: Path, base: str, registry: CollectorRegistry) -> Kube:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server=base))
    return api_client(str(path), registry)


def test_a_deleting_pod_of_one_mebibyte_is_read_whole(tmp_path: Path) -> None:
    big = big_object("p1", "3", MiB, namespace="default")
    big["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    server = WatchServer("/api/v1/pods", lists=[{"metadata": {"resourceVersion": "1"}, "items": []}],
                         watches=[[{"type": "ADDED", "object": big}]])
    seen: list[Any] = []

    async def body(base: str) -> None:
        kube = client(tmp_path, base, CollectorRegistry())
        watch = PodWatch(kube, "node-a", log=logging.getLogger("test.pod_watch"), retry=0)
        task = asyncio.create_task(watch.run())
        try:
            await server.wait_for(["LIST", "WATCH", "WATCH"])  # the second: after the first ended
            seen.append(watch.terminating())
        finally:
            task.cancel()
            await kube.close()

    asyncio.run(serving(server, body))
    assert seen == [{"default/p1": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)}]
    assert server.requests[0][1]["fieldSelector"] == "spec.nodeName=node-a"


def test_an_event_over_the_bound_is_counted_and_the_pod_watch_relists_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(kube_client, "MAX_WATCH_LINE", 256 << 10)  # a small bound, so a 1 MiB event is over it
    deleting = big_object("p1", "3", MiB, namespace="default")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    server = WatchServer("/api/v1/pods",
                         lists=[{"metadata": {"resourceVersion": "1"}, "items": []},
                                {"metadata": {"resourceVersion": "3"}, "items": [deleting]}],
                         watches=[[{"type": "MODIFIED", "object": deleting}]])
    registry = CollectorRegistry()
    seen: list[Any] = []

    async def body(base: str) -> None:
        kube = client(tmp_path, base, registry)
        watch = PodWatch(kube, "node-a", log=logging.getLogger("test.pod_watch"), retry=0)
        task = asyncio.create_task(watch.run())
        try:
            await server.wait_for(["LIST", "WATCH", "LIST", "WATCH"])
            assert not task.done(), "the pod watch survives"
            seen.append(watch.terminating())
        finally:
            task.cancel()
            await kube.close()

    with caplog.at_level(logging.ERROR, logger="test.pod_watch"):
        asyncio.run(serving(server, body))
    assert seen == [{"default/p1": dt.datetime(2026, 1, 1, tzinfo=dt.UTC)}]
    assert registry.get_sample_value("nodemedic_agent_watch_lines_too_long_total", {"path": "/api/v1/pods"}) == 1
    assert "watch event over the line bound, relisting" in [r.message for r in caplog.records]
    assert server.requests[3][1]["resourceVersion"] == "3", "the watch resumes after the relist"
