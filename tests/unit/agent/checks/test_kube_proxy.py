"""kube-proxy health against a real local aiohttp server standing in for nothing but an HTTP port (the probe is the
kubelet's, tested there); here: a node without kube-proxy reports nothing, and one with it reports as the kubelet."""

from __future__ import annotations

import asyncio
import datetime as dt
import socket
from pathlib import Path

from aiohttp import web

from agent.bounds import field_problems
from agent.checks.kube_proxy import FREQUENT_RESTART, UNHEALTHY, Config, KubeProxyCheck
from agent.host import HostRoot
from agent.model import Observation, Status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
FAST = dt.timedelta(milliseconds=300)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fixture_proc(root: Path, *processes: tuple[int, str]) -> HostRoot:
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "stat").write_text("cpu 1 2 3\nbtime 1714560000\n")
    for pid, comm in processes:
        (root / "proc" / str(pid)).mkdir()
        (root / "proc" / str(pid) / "comm").write_text(comm + "\n")
        fields = ["S", "1"] + ["0"] * 17 + ["500"] + ["0"] * 20
        (root / "proc" / str(pid) / "stat").write_text(f"{pid} ({comm}) {' '.join(fields)}\n")
    return HostRoot(root)


def test_a_node_without_kube_proxy_reports_nothing_and_looks_again_after_absent_every(tmp_path: Path) -> None:
    host = fixture_proc(tmp_path, (1, "systemd"), (42, "cilium-agent"))
    check = KubeProxyCheck(Config(healthz_url=f"http://127.0.0.1:{closed_port()}/healthz", request_timeout=FAST),
                           host)

    async def main() -> None:
        try:
            assert await check.observe(NOW) == Observation("kubeProxy", NOW)
            assert check.timing.interval == dt.timedelta(minutes=5)
            fixture = tmp_path / "proc" / "77"
            fixture.mkdir()
            (fixture / "comm").write_text("kube-proxy\n")
            (fixture / "stat").write_text("77 (kube-proxy) S 1 " + " ".join(["0"] * 17 + ["500"] + ["0"] * 20) + "\n")
            assert (await check.observe(NOW + dt.timedelta(minutes=1))).conditions == ()  # not looked at yet
            obs = await check.observe(NOW + dt.timedelta(minutes=5))
            assert [c.type for c in obs.conditions] == [UNHEALTHY, FREQUENT_RESTART]
            assert check.timing.interval == dt.timedelta(seconds=5), "refused: confirmed at the recheck pace"
        finally:
            await check.close()

    asyncio.run(main())


def test_a_kube_proxy_that_stops_answering_turns_unhealthy_after_three_probes_and_healthy_again(
        tmp_path: Path) -> None:
    host = fixture_proc(tmp_path, (77, "kube-proxy"))
    statuses = [200, 503, 503, 503, 200]

    async def main() -> list[tuple[Status, str]]:
        current = {"status": 200}

        async def healthz(request: web.Request) -> web.Response:
            return web.Response(status=current["status"], text="ok")

        app = web.Application()
        app.router.add_get("/healthz", healthz)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        check = KubeProxyCheck(Config(healthz_url=f"http://127.0.0.1:{port}/healthz", request_timeout=FAST), host)
        seen = []
        try:
            for i, status in enumerate(statuses):
                current["status"] = status
                obs = await check.observe(NOW + dt.timedelta(seconds=10 * i))
                c = next(c for c in obs.conditions if c.type == UNHEALTHY)
                seen.append((c.status, c.reason))
        finally:
            await check.close()
            await runner.cleanup()
        return seen

    assert asyncio.run(main()) == [
        (Status.FALSE, "KubeProxyIsHealthy"), (Status.FALSE, "KubeProxyIsHealthy"),
        (Status.FALSE, "KubeProxyIsHealthy"), (Status.TRUE, "KubeProxyUnhealthy"), (Status.FALSE, "KubeProxyIsHealthy")]


def test_validate_names_the_field() -> None:
    assert problems(Config(healthz_url="localhost:10256", absent_every=dt.timedelta(seconds=1))) == [
        "healthzUrl: must be an http:// or https:// URL with a host, got 'localhost:10256'",
        "absentEvery: must not be shorter than interval (30s), got 1s"]


def problems(config: object) -> list[str]:
    return [str(problem) for problem in field_problems(config)]
