"""Measured usage instead of requests, as descheduler's `metricsUtilization` has it (docs/utilization.md).

Two places, as in a DeschedulerPolicy: a utilization strategy's `args.metricsUtilization` says which source its
usage comes from, and the top-level `metricsProviders` says how to reach each source. Requests stay the default: a
strategy without `metricsUtilization` never looks at a metric.

- `source: KubernetesMetrics` (or descheduler's older `metricsServer: true`): NodeMetrics and PodMetrics of the
  `metrics.k8s.io` API (metrics-server), in cpu and memory; `pods` stays the count of pods. Thresholds may name
  only cpu, memory and pods: nothing else is measured.
- `source: Prometheus` with `prometheus.query`: an instant query whose samples carry the node's name in the
  `instance` label and a value in [0, 1]; thresholds name exactly the one resource `MetricResource`, in percent.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import yaml

from remediator.policy.reader import Reader, Section, is_null
from remediator.policy.secret_files import location_problem

KUBERNETES_METRICS, PROMETHEUS = "KubernetesMetrics", "Prometheus"
SOURCES = (KUBERNETES_METRICS, PROMETHEUS)
METRIC_RESOURCE = "MetricResource"  # descheduler's name for the one resource a Prometheus query measures
MEASURED_RESOURCES = ("cpu", "memory", "pods")  # what metrics.k8s.io measures (pods: counted, as with requests)
TOKEN_KEY = "prometheusAuthToken"  # the Secret key descheduler reads the bearer token from
_UTILIZATION_KEYS = ("metricsServer", "source", "prometheus")
_PROVIDER_KEYS = ("source", "prometheus", "maxAge")
_PROMETHEUS_KEYS = ("url", "authToken")
_AUTH_KEYS = ("secretReference", "file")
# metrics-server scrapes every 15 s by default and reports a window of about that; three missed scrapes in a row and
# the number says more about the past than about the node.
DEFAULT_MAX_AGE = dt.timedelta(minutes=1)


@dataclass(frozen=True)
class MetricsUtilization:
    """A strategy's `metricsUtilization`: where its usage comes from."""

    source: str  # KUBERNETES_METRICS or PROMETHEUS
    query: str = ""  # with PROMETHEUS


@dataclass(frozen=True)
class PrometheusProvider:
    url: str
    # authToken.secretReference (namespace, name): the token is the Secret's `prometheusAuthToken` key
    token_secret: tuple[str, str] | None = None
    token_file: str = ""  # nodemedic: authToken.file, e.g. a projected service-account token, read at each query


@dataclass(frozen=True)
class MetricsProviders:
    """The top-level `metricsProviders`: which sources to read and how (descheduler's fields, plus `maxAge`)."""

    kubernetes: bool = False
    prometheus: PrometheusProvider | None = None
    max_age: dt.timedelta = DEFAULT_MAX_AGE  # nodemedic: an older sample is unknown, not usage


Thresholds = Sequence[tuple[str, tuple[tuple[str, float], ...]]]  # (key under args, its resource -> percent)


def read_metrics_utilization(r: Reader, args: Section, thresholds: Thresholds) -> MetricsUtilization | None:
    """`args.metricsUtilization`, checked against the resources the strategy's thresholds name."""
    if "metricsUtilization" not in args.values or is_null(args.values["metricsUtilization"]):
        _requests_only(r, args, thresholds)
        return None
    m = r.section(args, "metricsUtilization", _UTILIZATION_KEYS)
    source = _source(r, m)
    if source is None:
        return None
    prometheus = r.section(m, "prometheus", ("query",))
    if source == KUBERNETES_METRICS:
        if "prometheus" in m.values:
            r.error(m.key_nodes["prometheus"], m.at("prometheus"), f"only with source {PROMETHEUS}")
        for key, named in thresholds:
            for name, _ in named:
                if name not in MEASURED_RESOURCES:
                    node, path = _threshold_key(args, key, name)
                    r.error(node, path, f"metrics.k8s.io does not measure {name!r}: with source {KUBERNETES_METRICS} "
                                        f"thresholds name only {', '.join(MEASURED_RESOURCES)}")
        return MetricsUtilization(KUBERNETES_METRICS)
    query = r.text(prometheus, "query", required=True)
    for key, named in thresholds:
        if named and [name for name, _ in named] != [METRIC_RESOURCE]:
            r.error(args.key_nodes[key], args.at(key), f"with source {PROMETHEUS} must name exactly one resource, "
                                                       f"{METRIC_RESOURCE} (the query's value in percent)")
    return MetricsUtilization(PROMETHEUS, query)


def _source(r: Reader, m: Section) -> str | None:
    """`source`, or descheduler's older `metricsServer: true` for KubernetesMetrics; None (said why) otherwise."""
    legacy = r.flag(m, "metricsServer", False)
    source = r.text(m, "source", check=lambda s: None if s in SOURCES else f"must be one of {', '.join(SOURCES)}")
    if legacy and source:
        why = "metricsServer is its older spelling; keep one" if source == KUBERNETES_METRICS \
            else "one strategy reads one source"
        r.error(m.key_nodes["metricsServer"], m.at("metricsServer"), f"not together with source {source}: {why}")
    if not source and not legacy:
        if "source" not in m.values:
            r.error(m.where(), m.at("source"), f"required: one of {', '.join(SOURCES)} (or metricsServer: true)")
        return None
    return source or KUBERNETES_METRICS


def _requests_only(r: Reader, args: Section, thresholds: Thresholds) -> None:
    for key, named in thresholds:
        if any(name == METRIC_RESOURCE for name, _ in named):
            node, path = _threshold_key(args, key, METRIC_RESOURCE)
            r.error(node, path, f"{METRIC_RESOURCE} is what a Prometheus query measures: only with "
                                f"metricsUtilization.source {PROMETHEUS}")


def _threshold_key(args: Section, key: str, name: str) -> tuple[yaml.Node, str]:
    """(node, path) of the resource `name` in `args[key]` (thresholds or targetThresholds)."""
    found = _pairs(args.values.get(key), keys=True).get(name)
    return found or args.key_nodes.get(key, args.where()), f"{args.at(key)}.{name}"


def read_metrics_providers(r: Reader, top: Section) -> MetricsProviders:
    kubernetes, prometheus = False, None
    ages: list[dt.timedelta] = []
    seen: dict[str, str] = {}
    for node, path in r.sequence(top, "metricsProviders") or []:
        m = r.mapping(node, path, _PROVIDER_KEYS)
        source = r.text(m, "source", required=True,
                        check=lambda s: None if s in SOURCES else f"must be one of {', '.join(SOURCES)}")
        if not source:
            continue
        if source in seen:
            r.error(m.values["source"], m.at("source"), f"source {source} is configured twice (also {seen[source]})")
            continue
        seen[source] = path
        if "maxAge" in m.values:
            ages.append(r.duration(m, "maxAge", DEFAULT_MAX_AGE, positive=True))
        if source == KUBERNETES_METRICS:
            kubernetes = True
            if "prometheus" in m.values:
                r.error(m.key_nodes["prometheus"], m.at("prometheus"), f"only with source {PROMETHEUS}")
        else:
            prometheus = _prometheus(r, m)
    # One freshness for every source: the strictest given.
    return MetricsProviders(kubernetes=kubernetes, prometheus=prometheus, max_age=min(ages, default=DEFAULT_MAX_AGE))


def _prometheus(r: Reader, provider: Section) -> PrometheusProvider | None:
    m = r.section(provider, "prometheus", _PROMETHEUS_KEYS, required=True)
    # The URL may carry credentials (userinfo, a token in the query): no error repeats it.
    url = r.text(m, "url", required=True, secret=True)
    if url:
        try:
            parts = urlsplit(url)
            valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        except ValueError:
            valid = False
        if not valid:
            r.error(m.values["url"], m.at("url"), "must be an http:// or https:// URL with a host (not shown: a URL "
                                                  "may carry a credential)")
    auth = r.section(m, "authToken", _AUTH_KEYS)
    secret = None
    if "secretReference" in auth.values:
        ref = r.section(auth, "secretReference", ("namespace", "name"))
        namespace, name = r.text(ref, "namespace", required=True), r.text(ref, "name", required=True)
        secret = (namespace, name) if namespace and name else None
    token_file = r.text(auth, "file")
    # Read at each query (a projected token rotates), so only its place is known now; read_secret_file checks the
    # rest (a regular file, its size) then.
    if token_file and (problem := location_problem(token_file, r.secrets_dir)):
        r.error(auth.values["file"], auth.at("file"), problem)
    if "authToken" in m.values and "secretReference" in auth.values and "file" in auth.values:
        r.error(auth.where(), auth.path, "secretReference and file are mutually exclusive; give one of them")
    elif "authToken" in m.values and not auth.values and auth.present:
        r.error(auth.where(), auth.at("secretReference"), "required when authToken is given (or file)")
    return PrometheusProvider(url, secret, token_file) if url else None


def check_sources(r: Reader, top: Section, strategies: Sequence[tuple[str, object]],
                  providers: MetricsProviders) -> None:
    """Each strategy's `metricsUtilization.source` needs its provider in `metricsProviders` (descheduler finds out at
    every cycle, "metrics client not initialized"; nodemedic when the policy is read). `strategies`: each strategy's
    (name, args), in the policy's order."""
    for index, (name, args) in enumerate(strategies):
        metrics = getattr(args, "metrics_utilization", None)
        if not isinstance(metrics, MetricsUtilization):
            continue
        missing = (metrics.source == KUBERNETES_METRICS and not providers.kubernetes) or \
                  (metrics.source == PROMETHEUS and providers.prometheus is None)
        if missing:
            node, path = _utilization_node(top, name, index)
            also = " (in a DeschedulerPolicy also metricsCollector.enabled: true)" \
                if metrics.source == KUBERNETES_METRICS else " with prometheus.url"
            r.error(node, path, f"source {metrics.source} needs metricsProviders to list "
                                f"{{source: {metrics.source}}}{also}")


def _utilization_node(top: Section, name: str, index: int) -> tuple[yaml.Node, str]:
    strategies = top.values.get("strategies")
    for i, item in enumerate(strategies.value if isinstance(strategies, yaml.SequenceNode) else []):
        entry = _pairs(item)
        if _scalar(entry.get("name")) != name:
            continue
        args = _pairs(entry.get("args"))
        node = args.get("metricsUtilization") or item
        return node, f"strategies[{i}].args.metricsUtilization"
    return top.where(), f"strategies[{index}].args.metricsUtilization"


def _pairs(node: yaml.Node | None, *, keys: bool = False) -> dict[str, yaml.Node]:
    """A mapping node's entries by key: their value nodes, or with `keys` their key nodes."""
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {k.value: (k if keys else v) for k, v in node.value if isinstance(k, yaml.ScalarNode)}


def _scalar(node: yaml.Node | None) -> str | None:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None
