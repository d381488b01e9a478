"""`metricsUtilization` and `metricsProviders` in nodemedic's policy and in a DeschedulerPolicy: requests unless a
strategy asks for measured usage, and the same policy whichever of descheduler's spellings asks."""

from __future__ import annotations

import datetime as dt

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.policy.loader import convert_policy, parse_policy
from remediator.policy.measured_usage import KUBERNETES_METRICS, PROMETHEUS, MetricsProviders, MetricsUtilization
from remediator.strategies import CATALOG

LNU = """
  - name: LowNodeUtilization
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
"""


def descheduler(top: str, utilization: str) -> str:
    return f"""apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
{top}
profiles:
- name: usage
  pluginConfig:
  - name: LowNodeUtilization
    args:
      thresholds: {{cpu: 20, memory: 20}}
      targetThresholds: {{cpu: 50, memory: 50}}
      {utilization}
  plugins:
    balance: {{enabled: [LowNodeUtilization]}}
"""


def test_requests_are_the_default() -> None:
    policy = parse_policy(f"apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nstrategies:{LNU}",
                          source="p.yaml", catalog=CATALOG)
    assert policy.strategies[0].args.metrics_utilization is None  # type: ignore[attr-defined]
    assert policy.metrics == MetricsProviders()


@pytest.mark.parametrize(("top", "utilization"), [
    ("metricsCollector: {enabled: true}", "metricsUtilization: {metricsServer: true}"),
    ("metricsProviders: [{source: KubernetesMetrics}]", "metricsUtilization: {source: KubernetesMetrics}"),
    ("metricsCollector: {enabled: true}", "metricsUtilization: {source: KubernetesMetrics}"),
], ids=["v0.32-spelling", "v0.36-spelling", "mixed"])
def test_every_descheduler_spelling_of_metrics_server_usage_reads_as_one_policy(top: str, utilization: str) -> None:
    text = descheduler(top, utilization)
    policy = parse_policy(text, source="d.yaml", catalog=CATALOG)
    assert policy.strategies[0].args.metrics_utilization == MetricsUtilization(KUBERNETES_METRICS)  # type: ignore
    assert policy.metrics.kubernetes and policy.metrics.prometheus is None
    converted = convert_policy(text, source="d.yaml", catalog=CATALOG)
    assert "metricsProviders:\n- source: KubernetesMetrics" in converted
    assert parse_policy(converted, source="c.yaml", catalog=CATALOG) == policy


def test_prometheus_with_its_query_url_and_token_secret() -> None:
    text = descheduler("""metricsProviders:
- source: Prometheus
  prometheus:
    url: https://prometheus.monitoring.svc:9091
    authToken: {secretReference: {namespace: monitoring, name: prom-token}}""",
                       "metricsUtilization: {source: Prometheus, prometheus: {query: 'instance:cpu:ratio'}}")
    text = text.replace("{cpu: 20, memory: 20}", "{MetricResource: 20}").replace(
        "{cpu: 50, memory: 50}", "{MetricResource: 50}")
    policy = parse_policy(text, source="d.yaml", catalog=CATALOG)
    assert policy.strategies[0].args.metrics_utilization == MetricsUtilization(  # type: ignore[attr-defined]
        PROMETHEUS, "instance:cpu:ratio")
    assert policy.metrics.prometheus is not None
    assert policy.metrics.prometheus.url == "https://prometheus.monitoring.svc:9091"
    assert policy.metrics.prometheus.token_secret == ("monitoring", "prom-token")


def test_max_age_is_nodemedic_s_freshness_bound() -> None:
    policy = parse_policy("apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\nstrategies: []\n"
                          "metricsProviders: [{source: KubernetesMetrics, maxAge: 3m}]\n", source="p.yaml",
                          catalog=CATALOG)
    assert policy.metrics.max_age == dt.timedelta(minutes=3)


@pytest.mark.parametrize(("utilization", "error"), [
    ("metricsUtilization: {source: KubernetesMetrics, metricsServer: true}",
     "d.yaml:11: strategies[0].args.metricsUtilization.metricsServer: not together with source KubernetesMetrics"),
    ("metricsUtilization: {source: Kubernetes}",
     "d.yaml:11: strategies[0].args.metricsUtilization.source: must be one of KubernetesMetrics, Prometheus"),
    ("metricsUtilization: {}", "d.yaml:11: strategies[0].args.metricsUtilization.source: required"),
    ("metricsUtilization: {source: KubernetesMetrics, prometheus: {query: up}}",
     "d.yaml:11: strategies[0].args.metricsUtilization.prometheus: only with source Prometheus"),
], ids=["both-spellings", "unknown-source", "no-source", "query-without-prometheus"])
def test_a_wrong_metrics_utilization_names_its_line_and_field(utilization: str, error: str) -> None:
    with pytest.raises(ConfigError) as e:
        parse_policy(descheduler("metricsProviders: [{source: KubernetesMetrics}]", utilization), source="d.yaml",
                     catalog=CATALOG)
    assert any(m.startswith(error) for m in e.value.errors), e.value.errors
