"""The repair ladders' metrics: registered into the registry given, under the names and labels docs/repair.md names,
the repair-time histogram in the buckets from 30 s to 6 h."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from remediator.alerts.repair_metrics import create_repair_metrics


def test_each_metric_is_exposed_with_its_labels_in_the_given_registry() -> None:
    r = CollectorRegistry()
    m = create_repair_metrics(r)
    m.started.labels("reboot").inc()
    m.finished.labels("reboot", "repaired").inc(2)
    m.needs_a_person.labels("n1", "disk").set(1)
    m.in_repair.set(4)
    m.halted.labels("cluster").set(1)
    assert r.get_sample_value("nodemedic_repair_steps_started_total", {"action": "reboot"}) == 1
    assert r.get_sample_value("nodemedic_repair_steps_finished_total", {"action": "reboot", "result": "repaired"}) == 2
    assert r.get_sample_value("nodemedic_repair_needs_a_person", {"node": "n1", "rule": "disk"}) == 1
    assert r.get_sample_value("nodemedic_repair_nodes") == 4
    assert r.get_sample_value("nodemedic_repair_halted", {"group": "cluster"}) == 1


def test_the_repair_time_falls_in_buckets_from_30_seconds_to_6_hours() -> None:
    r = CollectorRegistry()
    seconds = create_repair_metrics(r).seconds
    seconds.labels("restart").observe(45)
    seconds.labels("restart").observe(30000)

    def bucket(le: str) -> float | None:
        return r.get_sample_value("nodemedic_repair_seconds_bucket", {"action": "restart", "le": le})

    assert (bucket("30.0"), bucket("60.0"), bucket("21600.0"), bucket("+Inf")) == (0, 1, 1, 2)


def test_one_registry_cannot_hold_them_twice() -> None:
    r = CollectorRegistry()
    create_repair_metrics(r)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        create_repair_metrics(r)
