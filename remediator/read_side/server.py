"""`--listen`: /metrics (Prometheus), /healthz (caches synced and the loop alive), /plan (the current plan), /status
(who this replica is, whether it leads, its policy) and /why/NODE (read_side/why.py): what `kubectl nodemedic` reads
through the API server's pod proxy. Served by nodemedic_common/http_server.py, which bounds clients; /plan is
rendered once per plan, off the event loop (nodemedic_common/rendered_once.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from nodemedic_common.http_server import Answer, Handler
from nodemedic_common.rendered_once import RenderedOnce
from remediator.model.plan import Plan
from remediator.read_side.plan_answer import PlanAnswer
from remediator.read_side.status_answer import StatusAnswer
from remediator.read_side.why_answer import WhyAnswer

JSON = "application/json; charset=utf-8"


def routes(*, registry: CollectorRegistry, healthy: Callable[[], tuple[bool, str]], plan: Callable[[], Plan],
           status: Callable[[], StatusAnswer], why: Callable[[str], WhyAnswer]) -> dict[str, Handler]:
    plan_body: RenderedOnce[Plan] = RenderedOnce(lambda p: json.dumps(PlanAnswer.of(p).to_json(), indent=1).encode())

    async def metrics(_: str) -> Answer:
        return Answer(200, CONTENT_TYPE_LATEST, generate_latest(registry))

    async def healthz(_: str) -> Answer:
        ok, reason = healthy()
        return Answer(200 if ok else 503, "text/plain; charset=utf-8", f"{reason}\n".encode())

    async def current_plan(_: str) -> Answer:
        return Answer(200, JSON, await plan_body.body(plan()))

    async def current_status(_: str) -> Answer:
        return Answer(200, JSON, json.dumps(status().to_json(), indent=1).encode())

    async def node_why(node: str) -> Answer:
        return Answer(200, JSON, json.dumps(why(node).to_json(), indent=1).encode())

    return {"/metrics": metrics, "/healthz": healthz, "/plan": current_plan, "/status": current_status,
            "/why/": node_why}


def loop_health(last_cycle: Callable[[], float], synced: Callable[[], bool], max_age: float) -> tuple[bool, str]:
    if not synced():
        return False, "caches not synced"
    age = time.monotonic() - last_cycle()
    if age > max_age:
        return False, f"no planning cycle for {age:.0f}s"
    return True, "ok"
