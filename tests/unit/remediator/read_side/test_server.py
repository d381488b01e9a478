"""`--listen`'s routes: /metrics, /healthz, /plan, /status, /why over real HTTP on loopback, with the controller's state
faked (the server's bounds: tests/unit/nodemedic_common/test_http_server.py)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter

from nodemedic_common.http_server import BoundedServer, Handler
from remediator.model.plan import Plan
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.server import loop_health, routes
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import FactLine, WhyAnswer


def get(served: dict[str, Handler], *paths: str) -> tuple[int, str, str]:
    """(status, content type, body) of the last of `paths` GET against `served` on a free loopback port."""

    async def go() -> tuple[int, str, str]:
        server = BoundedServer(served)
        await server.start("127.0.0.1:0")
        try:
            async with aiohttp.ClientSession() as session:
                for path in paths:
                    async with session.get(f"http://127.0.0.1:{server.port}{path}") as r:
                        answer = r.status, r.headers["Content-Type"], await r.text()
                return answer
        finally:
            await server.close()

    return asyncio.run(go())


STATUS = StatusAnswer("r1_abc", leading=True, dry_run=False, mode="deployment", version="1.2.3",
                      policy_file="/etc/p.yaml", policy_sha256="0123456789ab")


def make(healthy: Callable[[], tuple[bool, str]] = lambda: (True, "ok"), plan: Callable[[], Plan] = Plan,
         registry: CollectorRegistry | None = None) -> dict[str, Handler]:
    return routes(registry=registry or CollectorRegistry(), healthy=healthy, plan=plan, status=lambda: STATUS,
                  why=lambda node: WhyAnswer(node, None, (FactLine("node", f"{node} is Ready"),)))


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
    status, content_type, body = get(make(plan=lambda: plan), "/plan")
    assert (status, content_type) == (200, "application/json; charset=utf-8")
    assert body == json.dumps(PlanAnswer.of(plan).to_json(), indent=1)


def test_plan_is_rendered_once_per_plan_however_many_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe's finding: each GET /plan serialised the plan again, 24 at once stalled the loop 10.7 s."""
    rendered: list[Plan] = []
    of = PlanAnswer.of

    def counted(plan: Plan) -> PlanAnswer:
        rendered.append(plan)
        return of(plan)

    monkeypatch.setattr(PlanAnswer, "of", counted)
    plans = [Plan(tainted_limit=1), Plan(tainted_limit=2)]
    current = iter([plans[0]] * 5 + [plans[1]] * 3)
    _, _, body = get(make(plan=lambda: next(current)), *["/plan"] * 8)
    assert json.loads(body)["breaker"]["taintedLimit"] == 2  # the second plan, from its own rendering
    assert rendered == plans


def test_status_and_why_serve_what_the_remediator_says_as_json() -> None:
    assert json.loads(get(make(), "/status")[2]) == {"identity": "r1_abc", "leading": True, "dryRun": False,
                                                     "mode": "deployment", "version": "1.2.3",
                                                     "policy": {"file": "/etc/p.yaml", "sha256": "0123456789ab"}}
    status, content_type, body = get(make(), "/why/node-7")
    assert (status, content_type) == (200, "application/json; charset=utf-8")
    assert json.loads(body)["facts"] == [{"topic": "node", "sentence": "node-7 is Ready"}]


def test_an_unknown_path_is_404() -> None:
    assert get(make(), "/debug")[0] == 404


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
