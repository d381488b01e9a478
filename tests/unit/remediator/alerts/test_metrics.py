"""The remediator's metrics: registered into the registry main passes (never the global one), under their documented
names and labels, with the strategies' report gauges and the repair and dark-node metrics in the same registry."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY, CollectorRegistry

from remediator.alerts.metrics import create
from remediator.strategies import STRATEGIES


def test_every_metric_lands_in_the_given_registry_and_none_in_the_global_one() -> None:
    r = CollectorRegistry()
    m = create(r)
    m.taint_changes.labels("add", "nodemedic.io/bad").inc()
    m.evictions.labels("RemoveDuplicates", "evicted").inc(2)
    m.held.labels("circuit breaker").inc()
    m.breaker_open.set(1)
    m.policy_reloads.labels("error").inc()
    m.dry_run_planned.labels("evict").inc()
    m.autoscaler_detected.labels("karpenter").set(1)
    m.zone_surviving.labels("shop", "Deployment/web").set(0.5)
    m.repair.in_repair.set(2)
    m.dark.unfences.inc()
    assert r.get_sample_value("nodemedic_taint_changes_total", {"action": "add", "key": "nodemedic.io/bad"}) == 1
    assert r.get_sample_value("nodemedic_evictions_total", {"strategy": "RemoveDuplicates", "outcome": "evicted"}) == 2
    assert r.get_sample_value("nodemedic_taints_held_total", {"why": "circuit breaker"}) == 1
    assert r.get_sample_value("nodemedic_circuit_breaker_open") == 1
    assert r.get_sample_value("nodemedic_policy_reloads_total", {"result": "error"}) == 1
    assert r.get_sample_value("nodemedic_dry_run_actions_total", {"action": "evict"}) == 1
    assert r.get_sample_value("nodemedic_autoscaler_detected", {"autoscaler": "karpenter"}) == 1
    assert r.get_sample_value("nodemedic_workload_zone_loss_surviving_ratio",
                              {"namespace": "shop", "workload": "Deployment/web"}) == 0.5
    assert r.get_sample_value("nodemedic_repair_nodes") == 2
    assert r.get_sample_value("nodemedic_unfences_total") == 1
    assert REGISTRY.get_sample_value("nodemedic_circuit_breaker_open") is None
    assert REGISTRY.get_sample_value("nodemedic_unfences_total") is None


def test_a_cycle_time_falls_in_the_millisecond_to_seconds_buckets() -> None:
    r = CollectorRegistry()
    create(r).cycle_seconds.observe(0.003)
    assert r.get_sample_value("nodemedic_plan_cycle_seconds_bucket", {"le": "0.001"}) == 0
    assert r.get_sample_value("nodemedic_plan_cycle_seconds_bucket", {"le": "0.005"}) == 1


def test_reports_hold_the_report_gauges_of_exactly_the_strategies_that_declare_them() -> None:
    m = create(CollectorRegistry())
    declared = {s.name for s in STRATEGIES.values() if s.report_metrics is not None}
    assert declared and set(m.reports) == declared
    assert all(callable(show) for show in m.reports.values())


def test_one_registry_cannot_hold_the_metrics_twice_but_two_registries_can() -> None:
    r = CollectorRegistry()
    create(r)
    create(CollectorRegistry())
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        create(r)
