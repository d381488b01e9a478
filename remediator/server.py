"""`--listen`: /metrics (Prometheus), /healthz (caches synced and the loop alive), /plan (the current plan)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from nodemedic_common.listen import split_listen
from remediator.model import Plan


def app(*, registry: CollectorRegistry, healthy: Callable[[], tuple[bool, str]],
        plan: Callable[[], Plan]) -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def healthz(_: web.Request) -> web.Response:
        ok, why = healthy()
        return web.Response(status=200 if ok else 503, text=why + "\n")

    async def current_plan(_: web.Request) -> web.Response:
        return web.Response(text=json.dumps(plan().to_json(), indent=1), content_type="application/json")

    a = web.Application()
    a.router.add_get("/metrics", metrics)
    a.router.add_get("/healthz", healthz)
    a.router.add_get("/plan", current_plan)
    return a


async def serve(application: web.Application, listen: str) -> web.AppRunner:
    host, port = split_listen(listen)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def loop_health(last_cycle: Callable[[], float], synced: Callable[[], bool], max_age: float) -> tuple[bool, str]:
    if not synced():
        return False, "caches not synced"
    age = time.monotonic() - last_cycle()
    if age > max_age:
        return False, f"no planning cycle for {age:.0f}s"
    return True, "ok"
