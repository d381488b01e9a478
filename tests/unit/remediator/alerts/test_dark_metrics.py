"""The dark nodes' metrics: registered into the registry given (two registries hold two independent sets), under the
names and labels docs/dark-nodes.md names."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from remediator.alerts.dark_metrics import create_dark_metrics


def test_each_metric_is_exposed_with_its_labels_in_the_given_registry() -> None:
    r = CollectorRegistry()
    m = create_dark_metrics(r)
    m.nodes.labels("dark").set(2)
    m.needs_evidence.labels("n1").set(1)
    m.halted.labels("zone=a").set(1)
    m.fences.labels("reboot").inc()
    m.unfences.inc(3)
    assert r.get_sample_value("nodemedic_silent_nodes", {"seen": "dark"}) == 2
    assert r.get_sample_value("nodemedic_dark_node_needs_evidence", {"node": "n1"}) == 1
    assert r.get_sample_value("nodemedic_dark_nodes_halted", {"group": "zone=a"}) == 1
    assert r.get_sample_value("nodemedic_fences_total", {"evidence": "reboot"}) == 1
    assert r.get_sample_value("nodemedic_unfences_total") == 3


def test_two_registries_hold_independent_metrics_and_one_cannot_hold_them_twice() -> None:
    r1, r2 = CollectorRegistry(), CollectorRegistry()
    create_dark_metrics(r1).unfences.inc()
    create_dark_metrics(r2)
    assert (r1.get_sample_value("nodemedic_unfences_total"), r2.get_sample_value("nodemedic_unfences_total")) == (1, 0)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        create_dark_metrics(r1)
