"""The watch of this agent's own Node: only the repair annotation's text is kept, each change of it is handed over
once, the watch resumes from the last resourceVersion (bookmarks too), relists after 410 Gone and past an event over
the line bound; nothing polls."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from agent.cli import api_client
from agent.reporting.node_watch import NodeWatch
from nodemedic_common import kube_client
from nodemedic_common.kube_errors import WatchExpired
from nodemedic_common.repair_contract import MAX_ANNOTATION_BYTES, REPAIR_ANNOTATION, ContractError, parse_request
from tests.scripted_kube import ScriptedKube
from tests.watch_server import WatchServer, serving

LOG = logging.getLogger("test.node_watch")
KUBECONFIG = """apiVersion: v1
kind: Config
current-context: c
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
"""


def node(rv: str, ask: str | None = None, **annotations: str) -> dict[str, Any]:
    notes = dict(annotations) | ({REPAIR_ANNOTATION: ask} if ask is not None else {})
    return {"metadata": {"name": "node-a", "resourceVersion": rv, "annotations": notes},
            "status": {"images": [{"names": ["big"], "sizeBytes": 1}] * 50}}


def listed(rv: str, *items: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"resourceVersion": rv}, "items": list(items)}


def test_each_change_of_the_annotation_is_one_generation_and_the_watch_resumes_and_relists() -> None:
    kube = ScriptedKube(
        lists=[listed("10", node("10")), listed("50", node("50", '{"id": "c"}'))],
        watches=[[{"type": "MODIFIED", "object": node("11", '{"id": "a"}')},
                  {"type": "MODIFIED", "object": node("12", '{"id": "a"}', other="x")},  # another annotation
                  {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}}],
                 WatchExpired(410, "WATCH", "/api/v1/nodes", "too old")])
    watch = NodeWatch(kube, "node-a", annotation=REPAIR_ANNOTATION, log=LOG, retry=0)  # type: ignore[arg-type]

    async def scenario() -> None:
        task = asyncio.create_task(watch.run())
        while len(kube.calls) < 5:  # LIST, watch, resumed watch (410), LIST, watch (stays open)
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 10))
    # The first LIST (no annotation), its first value, the one after the relist: the other annotation's change and
    # the bookmark are no change of the ask.
    assert (watch.generation, watch.text) == (3, '{"id": "c"}')
    assert all(c.path == "/api/v1/nodes" and c.query["fieldSelector"] == "metadata.name=node-a" for c in kube.calls)
    # only the Node's metadata is asked for: a LIST of PartialObjectMetadata, watch events of it
    assert {(c.kind, c.accept) for c in kube.calls} == {
        ("LIST", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"),
        ("WATCH", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json")}
    # resumed from the bookmark when the watch ended; 410 Gone: a fresh LIST
    assert kube.versions() == [("LIST", ""), ("WATCH", "10"), ("WATCH", "20"), ("LIST", ""), ("WATCH", "50")]


def test_a_waiter_gets_the_latest_text_once_it_changed_and_waits_while_it_does_not() -> None:
    kube = ScriptedKube(lists=[listed("1", node("1", '{"id": "a"}'))], watches=[])
    watch = NodeWatch(kube, "node-a", annotation=REPAIR_ANNOTATION, log=LOG, retry=0)  # type: ignore[arg-type]

    async def scenario() -> None:
        task = asyncio.create_task(watch.run())
        assert await watch.wait_change(0) == (1, '{"id": "a"}')  # the first LIST, whatever it says
        waiting = asyncio.create_task(watch.wait_change(1))
        await asyncio.sleep(0)
        assert not waiting.done()
        watch._take(node("2", '{"id": "a"}'))  # the same text: still waiting
        await asyncio.sleep(0)
        assert not waiting.done()
        watch._take(node("3", '{"id": "b"}'))
        watch._take(node("4", '{"id": "c"}'))
        assert await waiting == (3, '{"id": "c"}')  # only the latest
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_deleted_node_or_a_removed_annotation_is_no_ask() -> None:
    kube = ScriptedKube(lists=[listed("1", node("1", '{"id": "a"}'))],
                    watches=[[{"type": "MODIFIED", "object": node("2")},
                              {"type": "MODIFIED", "object": node("3", '{"id": "b"}')},
                              {"type": "DELETED", "object": node("4", '{"id": "b"}')}]])
    watch = NodeWatch(kube, "node-a", annotation=REPAIR_ANNOTATION, log=LOG, retry=0)  # type: ignore[arg-type]

    async def scenario() -> None:
        task = asyncio.create_task(watch.run())
        while len(kube.calls) < 3:  # LIST, the watch that ends, the one that stays open
            await asyncio.sleep(0)
        task.cancel()

    asyncio.run(asyncio.wait_for(scenario(), 10))
    assert (watch.generation, watch.text) == (4, None)


def test_only_a_bounded_text_is_kept_and_an_annotation_past_the_bound_is_still_refused_as_too_long() -> None:
    huge = '{"id": "a", "pad": "' + "x" * (1 << 20) + '"}'
    kube = ScriptedKube(lists=[listed("1", node("1", huge))], watches=[])
    watch = NodeWatch(kube, "node-a", annotation=REPAIR_ANNOTATION, log=LOG, retry=0)  # type: ignore[arg-type]

    async def scenario() -> str | None:
        task = asyncio.create_task(watch.run())
        _, text = await watch.wait_change(0)
        task.cancel()
        return text

    text = asyncio.run(asyncio.wait_for(scenario(), 10))
    assert text is not None and len(text) == MAX_ANNOTATION_BYTES + 1
    with pytest.raises(ContractError, match="longer than 16384 bytes"):
        parse_request(text)


def test_an_event_over_the_line_bound_is_counted_and_the_watch_relists_past_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(kube_client, "MAX_WATCH_LINE", 256 << 10)
    big = node("3", '{"id": "b"}', blob="x" * (1 << 20))
    server = WatchServer("/api/v1/nodes", lists=[listed("1", node("1")), listed("3", big)],
                         watches=[[{"type": "MODIFIED", "object": big}]])
    registry = CollectorRegistry()
    seen: list[str | None] = []

    async def body(base: str) -> None:
        (tmp_path / "kubeconfig").write_text(KUBECONFIG.format(server=base))
        kube = api_client(str(tmp_path / "kubeconfig"), registry)
        watch = NodeWatch(kube, "node-a", annotation=REPAIR_ANNOTATION, log=LOG, retry=0)
        task = asyncio.create_task(watch.run())
        try:
            await server.wait_for(["LIST", "WATCH", "LIST", "WATCH"])
            assert not task.done(), "the node watch survives"
            seen.append(watch.text)
        finally:
            task.cancel()
            await kube.close()

    with caplog.at_level(logging.ERROR, logger="test.node_watch"):
        asyncio.run(serving(server, body))
    assert seen == ['{"id": "b"}']
    assert registry.get_sample_value("nodemedic_agent_watch_lines_too_long_total", {"path": "/api/v1/nodes"}) == 1
    assert "watch event over the line bound, relisting" in [r.message for r in caplog.records]
    assert server.requests[0][1] == {"fieldSelector": "metadata.name=node-a", "limit": "5000"}
    assert server.requests[3][1]["resourceVersion"] == "3", "the watch resumes after the relist"
