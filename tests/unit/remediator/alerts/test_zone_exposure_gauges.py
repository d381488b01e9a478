"""ZoneExposureGauges: a series pair for each exposed workload only, at most max_series of them (those shown keep
theirs, then the least surviving), the counts of exposed and omitted workloads always there, stale pairs removed."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from remediator.alerts.metrics import create
from remediator.alerts.zone_exposure_gauges import Workload, ZoneExposureGauges
from remediator.model.plan import ZoneExposure

SURVIVING = "nodemedic_workload_zone_loss_surviving_ratio"


def _exposed(*named: tuple[str, float]) -> dict[Workload, ZoneExposure]:
    return {("shop", w): ZoneExposure("shop", w, (("a", 3), ("b", 1)), surviving=s, best=0.5, moves=())
            for w, s in named}


def _gauges() -> tuple[ZoneExposureGauges, CollectorRegistry]:
    r = CollectorRegistry()
    return ZoneExposureGauges(create(r)), r


def _series(r: CollectorRegistry) -> dict[str, float]:
    return {s.labels["workload"]: s.value for m in r.collect() if m.name == SURVIVING for s in m.samples}


def _counts(r: CollectorRegistry) -> tuple[float | None, float | None]:
    return (r.get_sample_value("nodemedic_zone_exposed_workloads"),
            r.get_sample_value("nodemedic_zone_exposed_workloads_omitted"))


def test_each_exposed_workload_gets_its_pair_and_the_counts_say_none_omitted() -> None:
    g, r = _gauges()
    g.show(_exposed(("Deployment/web", 0.25), ("StatefulSet/db", 0.0)), 500)
    assert _series(r) == {"Deployment/web": 0.25, "StatefulSet/db": 0.0}
    assert r.get_sample_value(f"{SURVIVING}_best", {"namespace": "shop", "workload": "StatefulSet/db"}) == 0.5
    assert _counts(r) == (2, 0)


def test_nothing_exposed_is_no_series_but_the_two_counts_at_zero() -> None:
    g, r = _gauges()
    g.show({}, 500)
    assert _series(r) == {}
    assert _counts(r) == (0, 0)


def test_over_the_bound_the_least_surviving_are_shown_and_the_rest_counted() -> None:
    g, r = _gauges()
    g.show(_exposed(("Deployment/a", 0.4), ("Deployment/b", 0.0), ("Deployment/c", 0.2), ("Deployment/d", 0.1)), 2)
    assert _series(r) == {"Deployment/b": 0.0, "Deployment/d": 0.1}
    assert _counts(r) == (4, 2)


def test_a_workload_shown_keeps_its_series_when_a_worse_one_comes_over_the_bound() -> None:
    g, r = _gauges()
    g.show(_exposed(("Deployment/a", 0.3)), 1)
    g.show(_exposed(("Deployment/a", 0.3), ("Deployment/b", 0.0)), 1)
    assert _series(r) == {"Deployment/a": 0.3}
    assert _counts(r) == (2, 1)
    g.show(_exposed(("Deployment/b", 0.0)), 1)  # a recovered: b takes the free place
    assert _series(r) == {"Deployment/b": 0.0}
    assert _counts(r) == (1, 0)


def test_a_workload_no_longer_exposed_or_gone_loses_both_series() -> None:
    g, r = _gauges()
    g.show(_exposed(("Deployment/web", 0.25), ("StatefulSet/db", 0.0)), 500)
    g.show(_exposed(("StatefulSet/db", 0.0)), 500)
    g.show({}, 500)
    text = generate_latest(r).decode()
    assert "workload=" not in text
    assert _counts(r) == (0, 0)


def test_a_bound_of_zero_keeps_only_the_counts() -> None:
    g, r = _gauges()
    g.show(_exposed(("Deployment/web", 0.25)), 0)
    assert _series(r) == {}
    assert _counts(r) == (1, 1)
