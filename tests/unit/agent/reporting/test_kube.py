"""The agent's watch reader (the pod watch) against a real HTTP server: an event of any size the API server accepts is
read (aiohttp's line iterator stopped at 512 KiB and raised LineTooLong, which killed the agent: issue 25); one over
the explicit bound is counted and the pod watch relists instead of crashing or re-reading it forever."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.reporting.kube import Kube, StreamLineTooLong
from agent.reporting.pod_watch import PodWatch
from nodemedic_common import kube_transport
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
    return Kube(str(path), registry=registry)


def test_a_watch_event_of_one_mebibyte_is_read_whole(tmp_path: Path) -> None:
    big = big_object("p1", "3", MiB, namespace="default")
    server = WatchServer("/api/v1/pods", lists=[], watches=[[{"type": "ADDED", "object": big},
                                                             {"type": "DELETED", "object": big}]])
    got: list[Any] = []

    async def body(base: str) -> None:
        kube = client(tmp_path, base, CollectorRegistry())
        try:
            got.extend([e async for e in kube.stream("/api/v1/pods?watch=true", read_timeout=10)])
        finally:
            await kube.close()

    asyncio.run(serving(server, body))
    assert [e["type"] for e in got] == ["ADDED", "DELETED"]
    assert len(got[0]["object"]["metadata"]["annotations"]["example.com/blob"]) == MiB


def test_an_event_over_the_bound_is_counted_and_the_pod_watch_relists_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(kube_transport, "MAX_WATCH_LINE", 256 << 10)  # a small bound, so a 1 MiB event is over it
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
    assert registry.get_sample_value("nodemedic_agent_watch_lines_too_long_total") == 1
    assert "pod watch event over the line bound, relisting" in [r.message for r in caplog.records]
    assert server.requests[3][1]["resourceVersion"] == "3", "the watch resumes after the relist"


def test_the_stream_raises_its_own_error_for_a_line_over_the_bound(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kube_transport, "MAX_WATCH_LINE", 256 << 10)
    server = WatchServer("/api/v1/pods", lists=[], watches=[[{"type": "ADDED", "object": big_object("p", "2", MiB)}]])

    async def body(base: str) -> None:
        kube = client(tmp_path, base, CollectorRegistry())
        try:
            with pytest.raises(StreamLineTooLong, match="longer than 0 MiB"):
                _ = [e async for e in kube.stream("/api/v1/pods?watch=true", read_timeout=10)]
        finally:
            await kube.close()

    asyncio.run(serving(server, body))


@pytest.mark.parametrize("first", ["agent.cli", "agent.reporting.reporter", "agent.reporting.pod_watch"])
def test_the_shared_transport_leaves_the_agents_aiohttp_lean_whichever_module_comes_first(first: str) -> None:
    # nodemedic_common.kube_transport imports aiohttp itself; the agent must still get it without CA stores.
    probe = (f"import {first}\n"
             "import aiohttp.connector as c\n"
             "print(c._SSL_CONTEXT_VERIFIED.cert_store_stats()['x509_ca'])\n")
    clean = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    out = subprocess.run([sys.executable, "-c", probe], env=clean, capture_output=True, text=True, timeout=60,
                         check=True).stdout.split()
    assert out == ["0"], f"importing {first} loaded aiohttp's CA stores"
