"""`UsageReader`: measured usage read only for what the policy's strategies ask (metrics.k8s.io, Prometheus queries),
at most once per `refresh`; a failed read counted and logged, its last samples kept until older than `maxAge`, then
their nodes unknown (the gauge counts them, the log names them once per change); the Prometheus token from a Secret or
a file, and never in a logged error."""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from nodemedic_common.kube_errors import ApiError
from remediator.policy.measured_usage import (
    KUBERNETES_METRICS,
    PROMETHEUS,
    TOKEN_KEY,
    MetricsProviders,
    MetricsUtilization,
    PrometheusProvider,
)
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.measured.reader import UsageReader, sources
from remediator.state.measured.resource_metrics_api import NODES, PODS
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
QUERY = "instance:node_cpu:ratio"
TOKEN = "s3cr3t-token-value"
LOG = logging.getLogger("test.usage_reader")


def _lnu(metrics: MetricsUtilization | None) -> StrategyConfig:
    return StrategyConfig("LowNodeUtilization", LowNodeUtilizationArgs(
        thresholds=(("cpu", 20.0),), target_thresholds=(("cpu", 50.0),), metrics_utilization=metrics))


def _hnu(metrics: MetricsUtilization) -> StrategyConfig:
    return StrategyConfig("HighNodeUtilization", HighNodeUtilizationArgs(
        thresholds=(("MetricResource", 20.0),), metrics_utilization=metrics))


def _policy(*strategies: StrategyConfig, prometheus: PrometheusProvider | None = None) -> Policy:
    return Policy(strategies=strategies, metrics=MetricsProviders(kubernetes=True, prometheus=prometheus))


def _node_metrics(name: str, at: dt.datetime) -> dict[str, Any]:
    return {"metadata": {"name": name}, "timestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"), "window": "10s",
            "usage": {"cpu": "500m", "memory": "1Gi"}}


class FakeKube:
    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = answers
        self.gets: list[str] = []

    async def get(self, path: str, **_: str) -> Any:
        self.gets.append(path)
        answer = self.answers[path]
        if isinstance(answer, ApiError):
            raise answer
        return answer


def _reader(kube: FakeKube, registry: CollectorRegistry, *, refresh: float = 3600.0, **kw: Any) -> UsageReader:
    return UsageReader(kube, registry=registry, log=LOG, refresh=refresh, **kw)  # type: ignore[arg-type]


def _sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_sources_names_what_the_policys_strategies_measure() -> None:
    other = MetricsUtilization(PROMETHEUS, "other")
    assert sources(_policy(_lnu(None))) == (False, set())
    assert sources(_policy(_lnu(MetricsUtilization(KUBERNETES_METRICS)))) == (True, set())
    assert sources(_policy(_lnu(None), _hnu(MetricsUtilization(PROMETHEUS, QUERY)), _hnu(other))) == (
        False, {QUERY, "other"})
    assert sources(Policy(strategies=(StrategyConfig("PodLifeTime", object()),))) == (False, set())


def test_a_policy_that_measures_nothing_reads_nothing() -> None:
    kube = FakeKube({})
    measured = asyncio.run(_reader(kube, CollectorRegistry()).read(_policy(_lnu(None)), ["n1"], NOW))
    assert (measured.nodes, measured.pods, measured.scores) == ({}, {}, {})
    assert kube.gets == []


def test_metrics_api_usage_is_read_once_per_refresh_and_unreported_nodes_are_counted_unknown(
        caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube({NODES: {"items": [_node_metrics("n1", NOW)]}, PODS: {"items": []}})
    registry = CollectorRegistry()
    reader = _reader(kube, registry)
    policy = _policy(_lnu(MetricsUtilization(KUBERNETES_METRICS)))

    async def twice() -> None:
        with caplog.at_level(logging.WARNING, logger=LOG.name):
            first = await reader.read(policy, ["n1", "n2"], NOW)
            assert first.nodes == {"n1": {"cpu": 500, "memory": 1 << 30}} and first.scores == {}
            second = await reader.read(policy, ["n1", "n2"], NOW + dt.timedelta(seconds=5))
            assert second.nodes == first.nodes

    asyncio.run(twice())
    assert kube.gets == [NODES, PODS]  # one read within the refresh
    assert _sample(registry, "nodemedic_usage_reads_total", source=KUBERNETES_METRICS, outcome="ok") == 1
    assert _sample(registry, "nodemedic_usage_unknown_nodes", source=KUBERNETES_METRICS) == 1
    # the unknown node is logged once, not at every cycle
    assert [r.getMessage() for r in caplog.records] == [
        "1 nodes without fresh usage from KubernetesMetrics (n2): utilization strategies leave them alone"]


def test_a_failed_metrics_read_keeps_the_last_samples_until_they_are_stale() -> None:
    kube = FakeKube({NODES: {"items": [_node_metrics("n1", NOW)]}, PODS: {"items": []}})
    registry = CollectorRegistry()
    reader = _reader(kube, registry, refresh=0.0)
    policy = _policy(_lnu(MetricsUtilization(KUBERNETES_METRICS)))

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        await reader.read(policy, ["n1"], NOW)
        kube.answers[NODES] = ApiError(503, "GET", NODES, '{"kind":"Status","message":"service unavailable"}')
        fresh = await reader.read(policy, ["n1"], NOW + dt.timedelta(seconds=30))
        stale = await reader.read(policy, ["n1"], NOW + dt.timedelta(minutes=2))
        return fresh.nodes, stale.nodes

    fresh, stale = asyncio.run(scenario())
    assert fresh == {"n1": {"cpu": 500, "memory": 1 << 30}}
    assert stale == {}
    assert _sample(registry, "nodemedic_usage_reads_total", source=KUBERNETES_METRICS, outcome="error") == 2
    assert _sample(registry, "nodemedic_usage_unknown_nodes", source=KUBERNETES_METRICS) == 1


def test_many_unknown_nodes_are_logged_with_the_first_twenty_and_how_many_more(
        caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube({NODES: {"items": []}, PODS: {"items": []}})
    reader = _reader(kube, CollectorRegistry())
    nodes = [f"n{i:02d}" for i in range(25)]
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(reader.read(_policy(_lnu(MetricsUtilization(KUBERNETES_METRICS))), nodes, NOW))
    (record,) = caplog.records
    assert record.getMessage().startswith("25 nodes without fresh usage from KubernetesMetrics (n00, n01, ")
    assert "n19 and 5 more)" in record.getMessage() and "n20" not in record.getMessage()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def _serving(handler: Handler, body: Callable[[str], Awaitable[None]]) -> None:
    application = web.Application()
    application.router.add_get("/api/v1/query", handler)
    runner = web.AppRunner(application)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        await asyncio.wait_for(body(f"http://127.0.0.1:{runner.addresses[0][1]}"), 20)
    finally:
        await runner.cleanup()


def _vector(**values: float) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"instance": node}, "value": [1.0, str(v)]} for node, v in values.items()]}}


def test_a_prometheus_query_is_sent_with_the_secrets_token_and_its_scores_kept_until_stale() -> None:
    seen: list[tuple[str | None, str | None]] = []
    failing = False

    async def answer(request: web.Request) -> web.Response:
        seen.append((request.query.get("query"), request.headers.get("Authorization")))
        if failing:
            return web.Response(status=500, text="down")
        return web.json_response(_vector(n1=0.25))

    kube = FakeKube({"/api/v1/namespaces/monitoring/secrets/prom": {
        "data": {TOKEN_KEY: base64.b64encode(f"{TOKEN}\n".encode()).decode()}}})
    registry = CollectorRegistry()
    reader = _reader(kube, registry, refresh=0.0)
    scores: list[dict[str, dict[str, float]]] = []

    async def body(base: str) -> None:
        nonlocal failing
        policy = _policy(_hnu(MetricsUtilization(PROMETHEUS, QUERY)),
                         prometheus=PrometheusProvider(base, token_secret=("monitoring", "prom")))
        try:
            scores.append((await reader.read(policy, ["n1", "n2"], NOW)).scores)
            failing = True
            scores.append((await reader.read(policy, ["n1"], NOW + dt.timedelta(seconds=30))).scores)
            scores.append((await reader.read(policy, ["n1"], NOW + dt.timedelta(minutes=2))).scores)
        finally:
            await reader.close()

    asyncio.run(_serving(answer, body))
    assert seen[0] == (QUERY, f"Bearer {TOKEN}")
    assert scores == [{QUERY: {"n1": 0.25}}, {QUERY: {"n1": 0.25}}, {QUERY: {}}]
    assert _sample(registry, "nodemedic_usage_reads_total", source=PROMETHEUS, outcome="ok") == 1
    assert _sample(registry, "nodemedic_usage_reads_total", source=PROMETHEUS, outcome="error") == 2
    assert _sample(registry, "nodemedic_usage_unknown_nodes", source=PROMETHEUS) == 1


def test_a_failed_query_is_logged_without_the_token_it_echoes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)

    async def answer(request: web.Request) -> web.Response:
        return web.Response(status=401, text=f"bad credentials: {request.headers.get('Authorization')}")

    reader = _reader(FakeKube({}), CollectorRegistry(), secrets_dir=str(tmp_path))

    async def body(base: str) -> None:
        policy = _policy(_hnu(MetricsUtilization(PROMETHEUS, QUERY)),
                         prometheus=PrometheusProvider(base, token_file=str(token_file)))
        try:
            assert (await reader.read(policy, ["n1"], NOW)).scores == {QUERY: {}}
        finally:
            await reader.close()

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(_serving(answer, body))
    failure = next(r for r in caplog.records if r.getMessage().startswith("Prometheus query failed"))
    error: str = failure.error  # type: ignore[attr-defined]
    assert error.startswith("HTTP 401 from ")
    assert TOKEN not in error and TOKEN not in caplog.text


def test_a_secret_without_the_token_key_is_a_failed_read_naming_the_secret(caplog: pytest.LogCaptureFixture) -> None:
    kube = FakeKube({"/api/v1/namespaces/monitoring/secrets/prom": {"data": {}}})
    registry = CollectorRegistry()
    reader = _reader(kube, registry)
    policy = _policy(_hnu(MetricsUtilization(PROMETHEUS, QUERY)),
                     prometheus=PrometheusProvider("http://127.0.0.1:9", token_secret=("monitoring", "prom")))

    async def scenario() -> None:
        try:
            await reader.read(policy, [], NOW)
        finally:
            await reader.close()

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(scenario())
    assert _sample(registry, "nodemedic_usage_reads_total", source=PROMETHEUS, outcome="error") == 1
    (record,) = caplog.records
    assert record.error == f"Secret monitoring/prom has no {TOKEN_KEY} key"  # type: ignore[attr-defined]


def test_a_token_file_outside_the_secrets_directory_is_a_failed_read_naming_the_field(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    outside = tmp_path / "token"
    outside.write_text(TOKEN)
    reader = _reader(FakeKube({}), CollectorRegistry(), secrets_dir=str(secrets))
    policy = _policy(_hnu(MetricsUtilization(PROMETHEUS, QUERY)),
                     prometheus=PrometheusProvider("http://127.0.0.1:9", token_file=str(outside)))

    async def scenario() -> None:
        try:
            await reader.read(policy, [], NOW)
        finally:
            await reader.close()

    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(scenario())
    (record,) = caplog.records
    assert record.error.startswith("metricsProviders[].prometheus.authToken.file: ")  # type: ignore[attr-defined]
    assert "outside the secrets directory" in record.error  # type: ignore[attr-defined]
