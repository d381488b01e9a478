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


def make(healthy: Callable[[], tuple[bool, str]] = lambda: (True, "ok"), plan: Plan | None = None,
         registry: CollectorRegistry | None = None) -> Any:
    return app(registry=registry or CollectorRegistry(), healthy=healthy, plan=lambda: plan or Plan())


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
    assert json.loads(body) == plan.to_json()


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
