"""Measured usage for each cycle's snapshot: only what the policy's utilization strategies ask for, read at most
once per `refresh`.

API cost, only while a strategy has `metricsUtilization`: with source KubernetesMetrics two LISTs per refresh
(`metrics.k8s.io` NodeMetrics and PodMetrics: the API has no watch), with source Prometheus one instant query per
distinct query per refresh. A failed read is logged and counted and the last samples stay until they are older than
`metricsProviders[].maxAge`; then their nodes are unknown, and the strategies leave unknown nodes alone. Missing or
stale metrics therefore never cause an eviction.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import os
import ssl
import time
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.redaction import redact, userinfo_secrets
from remediator.policy.measured_usage import KUBERNETES_METRICS, PROMETHEUS, TOKEN_KEY, MetricsUtilization
from remediator.policy.model import Policy
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR, read_secret_file
from remediator.state.measured.resource_metrics_api import list_metrics, usage_from_items
from remediator.state.snapshot import MeasuredUsage

if TYPE_CHECKING:
    import aiohttp

REFRESH = 15.0  # seconds: metrics-server's default resolution; reading faster sees the same samples
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass
class _Scores:
    values: dict[str, float]
    at: dt.datetime


def sources(policy: Policy) -> tuple[bool, set[str]]:
    """(does a strategy read metrics.k8s.io, the Prometheus queries strategies run)."""
    kubernetes, queries = False, set()
    for s in policy.strategies:
        metrics = getattr(s.args, "metrics_utilization", None)
        if isinstance(metrics, MetricsUtilization):
            kubernetes |= metrics.source == KUBERNETES_METRICS
            if metrics.source == PROMETHEUS:
                queries.add(metrics.query)
    return kubernetes, queries


class UsageReader:
    def __init__(self, kube: Kube, *, registry: CollectorRegistry, log: logging.Logger,
                 refresh: float = REFRESH, secrets_dir: str = DEFAULT_SECRETS_DIR) -> None:
        self.kube, self.log, self.refresh, self.secrets_dir = kube, log, refresh, secrets_dir
        self.reads = Counter("nodemedic_usage_reads_total", "Reads of measured usage (metricsUtilization)",
                             ["source", "outcome"], registry=registry)
        self.unknown = Gauge("nodemedic_usage_unknown_nodes",
                             "Nodes whose measured usage is missing or stale: utilization strategies leave them alone",
                             ["source"], registry=registry)
        self.items: list[dict[str, Any]] = []
        self.items_read = -float("inf")  # monotonic time of the last metrics.k8s.io read attempt
        self.scores: dict[str, _Scores] = {}
        self.scores_read: dict[str, float] = {}
        self.reported: dict[str, frozenset[str]] = {}  # source -> unknown nodes last logged
        self._session: aiohttp.ClientSession | None = None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def read(self, policy: Policy, nodes: Collection[str], now: dt.datetime) -> MeasuredUsage:
        kubernetes, queries = sources(policy)
        max_age = policy.metrics.max_age
        measured = MeasuredUsage()
        # per source: the nodes some strategy reading it must leave alone (with several queries, unknown to any)
        unknown: dict[str, set[str]] = {KUBERNETES_METRICS: set(), PROMETHEUS: set()}
        if kubernetes:
            if time.monotonic() - self.items_read >= self.refresh:
                await self._read_metrics_api()
            node_usage, pod_usage, _ = usage_from_items(self.items, now=now, max_age=max_age)
            measured = MeasuredUsage(nodes=node_usage, pods=pod_usage)
            unknown[KUBERNETES_METRICS] |= self._report(KUBERNETES_METRICS, [n for n in nodes if n not in node_usage])
        scores: dict[str, dict[str, float]] = {}
        for q in sorted(queries):
            if time.monotonic() - self.scores_read.get(q, -float("inf")) >= self.refresh:
                await self._query(policy, q, now)
            got = self.scores.get(q)
            fresh = got.values if got is not None and now - got.at <= max_age else {}
            scores[q] = fresh
            unknown[PROMETHEUS] |= self._report(f"{PROMETHEUS}: {q}", [n for n in nodes if n not in fresh])
        for source, names in unknown.items():
            self.unknown.labels(source).set(len(names))
        return MeasuredUsage(nodes=measured.nodes, pods=measured.pods, scores=scores)

    async def _read_metrics_api(self) -> None:
        self.items_read = time.monotonic()
        try:
            self.items = await list_metrics(self.kube)
        except ApiError as e:
            self.reads.labels(KUBERNETES_METRICS, "error").inc()
            self.log.warning("metrics.k8s.io unreadable: the last samples count until they are stale",
                             extra={"status": e.status, "error": e.message[:300]})
            return
        self.reads.labels(KUBERNETES_METRICS, "ok").inc()

    async def _query(self, policy: Policy, q: str, now: dt.datetime) -> None:
        self.scores_read[q] = time.monotonic()
        provider = policy.metrics.prometheus
        if provider is None:  # the loader refuses a Prometheus strategy without the provider
            return
        # aiohttp only when a policy queries Prometheus: its import (0.17-0.26 s, compiled) would be paid by every
        # `plan --kubeconfig`, which reads no more than the API server otherwise (issue 43's one-shot ratio).
        from remediator.state.measured import prometheus_query  # noqa: PLC0415
        token: str | None = None
        try:
            token = await self._token(provider.token_secret, provider.token_file)
            values = await prometheus_query.query(self._sess(), provider.url, q, token=token)
        except (prometheus_query.QueryError, ApiError, OSError) as e:
            self.reads.labels(PROMETHEUS, "error").inc()
            # The answer's body may echo the request: the token and the URL's userinfo are cut in every form
            # (raw, JSON-escaped, percent- and base64-encoded) before the message is logged, then it is shortened.
            error = redact(str(e), [*([token] if token else []), *userinfo_secrets(provider.url)])
            self.log.warning("Prometheus query failed: its last values count until they are stale",
                             extra={"query": q, "error": error[:300]})
            return
        self.reads.labels(PROMETHEUS, "ok").inc()
        self.scores[q] = _Scores(values, now)

    async def _token(self, secret: tuple[str, str] | None, token_file: str) -> str | None:
        """The bearer token: the Secret's `prometheusAuthToken`, the file, else (as descheduler, in a cluster) the
        pod's service-account token; read at every query, so a rotated one is used at once."""
        if secret is not None:
            doc = await self.kube.get(f"/api/v1/namespaces/{secret[0]}/secrets/{secret[1]}")
            raw = (doc.get("data") or {}).get(TOKEN_KEY)
            if not raw:
                raise OSError(f"Secret {secret[0]}/{secret[1]} has no {TOKEN_KEY} key")
            return base64.b64decode(raw).decode().strip()
        if token_file:
            # The loader checked its place; whether it is a regular file of sane size is known only now.
            try:
                return read_secret_file(token_file, self.secrets_dir)
            except OSError as e:
                detail = f"cannot read {token_file}: {e.strerror}" if e.strerror else str(e)
                raise OSError(f"metricsProviders[].prometheus.authToken.file: {detail}") from None
        path = os.path.join(SERVICE_ACCOUNT, "token")
        if not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return f.read().strip()

    def _sess(self) -> aiohttp.ClientSession:
        import aiohttp  # noqa: PLC0415 - only for a Prometheus query: see _query

        if self._session is None or self._session.closed:
            tls = ssl.create_default_context()
            ca = os.path.join(SERVICE_ACCOUNT, "ca.crt")
            if os.path.exists(ca):  # in a cluster, a Prometheus behind the cluster CA (as descheduler trusts it)
                tls.load_verify_locations(ca)
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=tls))
        return self._session

    def _report(self, source: str, unknown: list[str]) -> frozenset[str]:
        """Logs the nodes without fresh usage from `source` when they change; returns them."""
        now = frozenset(unknown)
        if now != self.reported.get(source, frozenset()):
            self.reported[source] = now
            if unknown:
                more = f" and {len(unknown) - 20} more" if len(unknown) > 20 else ""
                names = ", ".join(sorted(unknown)[:20]) + more
                self.log.warning(f"{len(unknown)} nodes without fresh usage from {source} ({names}): utilization "
                                 "strategies leave them alone", extra={"source": source, "count": len(unknown)})
        return now
