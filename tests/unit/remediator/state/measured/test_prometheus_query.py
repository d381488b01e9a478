"""The Prometheus instant query against a real HTTP server answering the Prometheus API's format, and the usage
reader around it: the bearer token from a Secret or a file is sent and never logged; a failed or malformed answer
leaves the nodes unknown."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common.config_errors import ConfigError
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_credentials import Credentials
from remediator.policy.loader import parse_policy
from remediator.state.measured import prometheus_query as prometheus
from remediator.state.measured.reader import UsageReader
from remediator.strategies import CATALOG

TOKEN = "s3cr3t-prometheus-token"
QUERY = 'avg by (instance) (1 - rate(node_cpu_seconds_total{mode="idle"}[1m]))'
NOW = dt.datetime.now(dt.UTC)


def vector(*samples: tuple[dict[str, str], str]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector",
                                          "result": [{"metric": m, "value": [1714564800.0, v]} for m, v in samples]}}


class Server:
    """A Prometheus API (`/api/v1/query`) that wants the bearer token, and the one Secret an API server holds."""

    def __init__(self, answer: dict[str, Any], by_query: dict[str, dict[str, Any]] | None = None) -> None:
        self.answer, self.by_query, self.queries, self.authorizations = answer, by_query or {}, [], []

    def app(self) -> web.Application:
        async def query(request: web.Request) -> web.Response:
            self.queries.append(request.query.get("query", ""))
            self.authorizations.append(request.headers.get("Authorization", ""))
            if request.headers.get("Authorization") != f"Bearer {TOKEN}":
                # As some proxies answer: the credential it was given, JSON-escaped, and its base64.
                given = request.headers.get("Authorization", "").removeprefix("Bearer ")
                echo = {"error": "no token", "given": given, "b64": base64.b64encode(given.encode()).decode()}
                return web.Response(status=401, text=json.dumps(echo).replace("/", "\\/"))
            return web.json_response(self.by_query.get(request.query.get("query", ""), self.answer))

        async def secret(_: web.Request) -> web.Response:
            return web.json_response({"data": {"prometheusAuthToken": base64.b64encode(TOKEN.encode()).decode()}})

        a = web.Application()
        a.router.add_get("/api/v1/query", query)
        a.router.add_get("/api/v1/namespaces/monitoring/secrets/prom-token", secret)
        return a


def serve(server: Server, body: Callable[[str], Awaitable[None]]) -> None:
    async def main() -> None:
        runner = web.AppRunner(server.app())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            await body(f"http://127.0.0.1:{runner.addresses[0][1]}")
        finally:
            await runner.cleanup()

    asyncio.run(asyncio.wait_for(main(), 20))


def policy(url: str, auth: str, more_strategies: str = "", secrets_dir: str = "/etc/nodemedic/secrets") -> Any:
    return parse_policy(f"""
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
strategies:
- name: LowNodeUtilization
  args:
    thresholds: {{MetricResource: 20}}
    targetThresholds: {{MetricResource: 50}}
    metricsUtilization: {{source: Prometheus, prometheus: {{query: '{QUERY}'}}}}
{more_strategies}
metricsProviders:
- source: Prometheus
  prometheus: {{url: '{url}', authToken: {auth}}}
""", source="p.yaml", secrets_dir=secrets_dir, catalog=CATALOG)


def test_a_query_answers_each_node_s_value_and_sends_the_token() -> None:
    server = Server(vector(({"instance": "n1"}, "0.75"), ({"instance": "n2"}, "0.1")))

    async def body(url: str) -> None:
        async with aiohttp.ClientSession() as session:
            assert await prometheus.query(session, url, QUERY, token=TOKEN) == {"n1": 0.75, "n2": 0.1}

    serve(server, body)
    assert server.queries == [QUERY]
    assert server.authorizations == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize(("answer", "problem"), [
    (vector(({"instance": "n1"}, "1.5")), "outside [0, 1]"),
    (vector(({"node": "n1"}, "0.5")), "no instance label"),
    ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "expected a vector"),
    ({"status": "error", "error": "parse error at char 3"}, "parse error at char 3"),
], ids=["value-above-1", "no-instance", "matrix", "query-error"])
def test_an_answer_descheduler_would_refuse_is_an_error(answer: dict[str, Any], problem: str) -> None:
    async def body(url: str) -> None:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(prometheus.QueryError, match=problem.replace("[", r"\[").replace("]", r"\]")):
                await prometheus.query(session, url, QUERY, token=TOKEN)

    serve(Server(answer), body)


def reader(api: str, secrets_dir: str = "/etc/nodemedic/secrets") -> UsageReader:
    kube = Kube(Credentials(server=api, ssl=False), registry=CollectorRegistry())
    return UsageReader(kube, registry=CollectorRegistry(), log=logging.getLogger("test.usage"), secrets_dir=secrets_dir)


def test_the_reader_takes_the_token_from_the_secret_and_puts_the_scores_in_the_snapshot() -> None:
    server = Server(vector(({"instance": "n1"}, "0.75")))

    async def body(url: str) -> None:
        r = reader(url)
        try:
            measured = await r.read(policy(url, "{secretReference: {namespace: monitoring, name: prom-token}}"),
                                    ["n1", "n2"], NOW)
        finally:
            await r.close()
            await r.kube.close()
        assert measured.scores == {QUERY: {"n1": 0.75}}
        assert r.unknown.labels("Prometheus")._value.get() == 1  # n2: no sample

    serve(server, body)
    assert server.authorizations == [f"Bearer {TOKEN}"]


def test_a_refused_query_leaves_every_node_unknown_and_the_token_out_of_the_log(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("not-the-token\n")
    server = Server(vector(({"instance": "n1"}, "0.75")))

    async def body(url: str) -> None:
        r = reader(url, str(tmp_path))
        try:
            measured = await r.read(policy(url, f"{{file: '{wrong}'}}", secrets_dir=str(tmp_path)), ["n1"], NOW)
        finally:
            await r.close()
            await r.kube.close()
        assert measured.scores == {QUERY: {}}
        assert r.reads.labels("Prometheus", "error")._value.get() == 1

    with caplog.at_level(logging.WARNING, logger="test.usage"):
        serve(server, body)
    assert server.authorizations == ["Bearer not-the-token"]
    text = "\n".join(f"{rec.getMessage()} {rec.__dict__}" for rec in caplog.records)
    assert "Prometheus query failed" in text and "HTTP 401" in text
    assert "not-the-token" not in text and TOKEN not in text


def test_the_unknown_nodes_gauge_counts_the_nodes_any_query_lacks_not_the_last_querys() -> None:
    memory = 'avg by (instance) (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)'
    server = Server(vector(({"instance": "n1"}, "0.75")), by_query={memory: vector(({"instance": "n2"}, "0.5"))})

    async def body(url: str) -> None:
        two = policy(url, "{secretReference: {namespace: monitoring, name: prom-token}}", f"""\
- name: HighNodeUtilization
  args:
    thresholds: {{MetricResource: 20}}
    metricsUtilization: {{source: Prometheus, prometheus: {{query: '{memory}'}}}}""")
        r = reader(url)
        try:
            measured = await r.read(two, ["n1", "n2", "n3"], NOW)
        finally:
            await r.close()
            await r.kube.close()
        assert measured.scores == {QUERY: {"n1": 0.75}, memory: {"n2": 0.5}}
        # one query lacks n2 and n3, the other n1 and n3: every node is left alone by one strategy or the other
        assert r.unknown.labels("Prometheus")._value.get() == 3
        assert r.unknown.labels("KubernetesMetrics")._value.get() == 0

    serve(server, body)
    assert sorted(server.queries) == sorted([QUERY, memory])


def test_a_token_file_outside_the_secrets_directory_is_refused_when_the_policy_loads(tmp_path: Path) -> None:
    sa_token = tmp_path / "serviceaccount-token"
    with pytest.raises(ConfigError) as e:
        policy("http://prometheus.example", f"{{file: '{sa_token}'}}", secrets_dir=str(tmp_path / "secrets"))
    (got,) = e.value.errors
    assert got.startswith(f"p.yaml:13: metricsProviders[0].prometheus.authToken.file: {sa_token} is outside the "
                          f"secrets directory {tmp_path / 'secrets'} (--secrets-dir)"), got


def test_a_token_file_that_is_a_fifo_fails_the_query_at_once_naming_the_field(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    token = tmp_path / "token"
    token.write_text("t0k3n\n")
    server = Server(vector(({"instance": "n1"}, "0.75")))

    async def body(url: str) -> None:
        loaded = policy(url, f"{{file: '{token}'}}", secrets_dir=str(tmp_path))
        token.unlink()
        os.mkfifo(token)  # after the load: only a read finds out; it must not wait for a writer
        r = reader(url, str(tmp_path))
        try:
            measured = await r.read(loaded, ["n1"], NOW)
        finally:
            await r.close()
            await r.kube.close()
        assert measured.scores == {QUERY: {}}

    with caplog.at_level(logging.WARNING, logger="test.usage"):
        serve(server, body)
    assert server.authorizations == []
    (record,) = [rec for rec in caplog.records if rec.getMessage().startswith("Prometheus query failed")]
    assert record.__dict__["error"] == (f"metricsProviders[].prometheus.authToken.file: {token} is not a regular "
                                        "file (a FIFO, device, socket or directory is never read)")


def test_a_refusal_echoing_the_wrong_token_escaped_or_encoded_is_logged_with_it_cut_out(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    wrong = tmp_path / "token"
    wrong.write_text("wr0ng/t0ken+value\n")
    server = Server(vector(({"instance": "n1"}, "0.75")))

    async def body(url: str) -> None:
        r = reader(url, str(tmp_path))
        try:
            await r.read(policy(url, f"{{file: '{wrong}'}}", secrets_dir=str(tmp_path)), ["n1"], NOW)
        finally:
            await r.close()
            await r.kube.close()

    with caplog.at_level(logging.WARNING, logger="test.usage"):
        serve(server, body)
    (record,) = [rec for rec in caplog.records if rec.getMessage().startswith("Prometheus query failed")]
    error = record.__dict__["error"]
    assert "HTTP 401" in error and error.count("<redacted>") == 2, error
    for leak in ("wr0ng", base64.b64encode(b"wr0ng/t0ken+value").decode()):
        assert leak not in error, error
