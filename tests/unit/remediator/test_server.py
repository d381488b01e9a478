"""`--listen`: /metrics, /healthz and /plan over real HTTP on loopback, with the controller's state faked."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter

from remediator.model import Plan
from remediator.read_side.plan_json import plan_json
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import FactLine, WhyAnswer
from remediator.server import app, loop_health, serve


def get(application: Any, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of one GET against `application` served on a free loopback port."""

    async def go() -> tuple[int, str, str]:
        runner = await serve(application, "127.0.0.1:0")
        try:
            port = runner.addresses[0][1]
            async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}{path}") as r:
                return r.status, r.headers["Content-Type"], await r.text()
        finally:
            await runner.cleanup()

    return asyncio.run(go())


STATUS = StatusAnswer("r1_abc", leading=True, dry_run=False, mode="deployment", version="1.2.3",
                      policy_file="/etc/p.yaml", policy_sha256="0123456789ab")


def make(healthy: Callable[[], tuple[bool, str]] = lambda: (True, "ok"), plan: Plan | None = None,
         registry: CollectorRegistry | None = None) -> Any:
    return app(registry=registry or CollectorRegistry(), healthy=healthy, plan=lambda: plan or Plan(),
               status=lambda: STATUS, why=lambda node: WhyAnswer(node, None, (FactLine("node", f"{node} is Ready"),)))


def test_metrics_serve_the_registry_passed_in_in_the_prometheus_text_format() -> None:
    registry = CollectorRegistry()
    Counter("nodemedic_test_things", "things", registry=registry).inc(3)
    status, content_type, body = get(make(registry=registry), "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert "nodemedic_test_things_total 3.0" in body


def test_healthz_is_200_while_healthy_and_503_with_the_reason_when_not() -> None:
    assert get(make(), "/healthz")[::2] == (200, "ok\n")
    assert get(make(healthy=lambda: (False, "caches not synced")), "/healthz")[::2] == (503, "caches not synced\n")


def test_plan_serves_the_current_plan_as_json() -> None:
    plan = Plan(breaker_open=True, tainted_limit=3)
    status, content_type, body = get(make(plan=plan), "/plan")
    assert (status, content_type) == (200, "application/json; charset=utf-8")
    assert json.loads(body) == plan_json(plan)


def test_status_and_why_serve_what_the_remediator_says_as_json() -> None:
    assert json.loads(get(make(), "/status")[2]) == {"identity": "r1_abc", "leading": True, "dryRun": False,
                                                     "mode": "deployment", "version": "1.2.3",
                                                     "policy": {"file": "/etc/p.yaml", "sha256": "0123456789ab"}}
    status, content_type, body = get(make(), "/why/node-7")
    assert (status, content_type) == (200, "application/json; charset=utf-8")
    assert json.loads(body)["facts"] == [{"topic": "node", "sentence": "node-7 is Ready"}]


def test_an_unknown_path_is_404() -> None:
    assert get(make(), "/debug")[0] == 404


def test_listen_without_a_host_binds_every_interface() -> None:
    async def go() -> list[Any]:
        runner = await serve(make(), ":0")
        try:
            return list(runner.addresses)
        finally:
            await runner.cleanup()

    assert any(address[0] in ("0.0.0.0", "::") for address in asyncio.run(go()))


@pytest.mark.parametrize(("synced", "age", "expected"), [
    (False, 0.0, (False, "caches not synced")),
    (True, 1.0, (True, "ok")),
    (True, 59.0, (True, "ok")),
    (True, 61.0, (False, "no planning cycle for 61s")),
    (False, 61.0, (False, "caches not synced")),
], ids=["not-synced", "fresh", "just-in-time", "stalled-loop", "not-synced-wins"])
def test_loop_health_needs_synced_caches_and_a_recent_cycle(synced: bool, age: float,
                                                             expected: tuple[bool, str]) -> None:
    last = time.monotonic() - age
    assert loop_health(lambda: last, lambda: synced, 60.0) == expected


# --- slow and many clients ------------------------------------------------------------------------------------
async def _closed(reader: asyncio.StreamReader) -> bytes:
    """What the server sent before closing; a reset reads as nothing. The deadline fails a server that waits."""
    try:
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""


async def _get(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> bytes:
    """One keep-alive GET on an open connection: the head and body of its answer."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    lines = head.lower().split(b"\r\n")
    length = int(next(line.split(b":")[1] for line in lines if line.startswith(b"content-length")))
    return head + await asyncio.wait_for(reader.readexactly(length), 10)


@pytest.mark.parametrize("sent", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"], ids=["silent", "half-a-head"])
def test_a_client_that_does_not_send_a_whole_request_head_in_time_is_dropped(sent: bytes) -> None:
    async def go() -> None:
        runner = await serve(make(), "127.0.0.1:0", header_timeout=0.2)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", runner.addresses[0][1])
            writer.write(sent)
            await writer.drain()
            assert await _closed(reader) == b""
            writer.close()
        finally:
            await runner.cleanup()

    asyncio.run(go())


def test_the_next_request_on_a_kept_alive_connection_gets_the_same_bound() -> None:
    async def go() -> None:
        runner = await serve(make(), "127.0.0.1:0", header_timeout=0.2)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", runner.addresses[0][1])
            assert (await _get(reader, writer, "/healthz")).startswith(b"HTTP/1.1 200 OK")
            writer.write(b"GET /metrics HTTP/1.1\r\n")  # then stalls
            await writer.drain()
            assert await _closed(reader) == b""
            writer.close()
        finally:
            await runner.cleanup()

    asyncio.run(go())


def test_a_connection_past_the_bound_is_closed_at_once_and_the_open_ones_are_still_served() -> None:
    async def go() -> None:
        runner = await serve(make(), "127.0.0.1:0", header_timeout=30.0, max_connections=2)
        port = runner.addresses[0][1]
        try:
            held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
            for reader, writer in held:  # answered, so certainly accepted; then idle, kept alive
                assert (await _get(reader, writer, "/healthz")).startswith(b"HTTP/1.1 200 OK")
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                await writer.drain()
            except ConnectionResetError:
                pass
            assert await _closed(reader) == b"", "closed unanswered, long before the 30 s head timeout"
            writer.close()
            assert (await _get(*held[0], "/healthz")).startswith(b"HTTP/1.1 200 OK")
            for _, w in held:
                w.close()
        finally:
            await runner.cleanup()

    asyncio.run(go())
