"""The placement engine's report: `fragmentation` in the plan's JSON, its gauges, and a nomination of each pending pod
it made room for."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from remediator.model.records import PodRecord
from remediator.strategies.make_room_for_pending_pods.report import Fragmentation, MadeRoom, report_metrics

PENDING = PodRecord(namespace="default", name="pending", uid="uid-pending")
STUCK = PodRecord(namespace="default", name="stuck", uid="uid-stuck")


def test_its_json_and_nominations() -> None:
    report = Fragmentation((PENDING, STUCK), {"cpu": 700, "memory": 1900},
                           (MadeRoom(PENDING, "node-1", ("default/a", "default/b")),))
    assert report.json_key == "fragmentation"
    assert report.to_json() == {
        "pending": [{"namespace": "default", "name": "pending"}, {"namespace": "default", "name": "stuck"}],
        "stranded": {"cpu": 700, "memory": 1900},
        "madeRoom": [{"namespace": "default", "name": "pending", "node": "node-1",
                      "moved": ["default/a", "default/b"]}]}
    (nomination,) = report.nominations()
    assert (nomination.pod, nomination.node, nomination.moved, nomination.reason) == (
        PENDING, "node-1", ("default/a", "default/b"), "NodemedicMakingRoom")
    assert nomination.message == ("pending because free room is split across nodes: nodemedic moves pods to free "
                                  "node-1")
    assert report.notices() == () and report.why("node-1") == ()


def test_its_gauges() -> None:
    registry = CollectorRegistry()
    report_metrics(registry)(Fragmentation((PENDING,), {"cpu": 700}))
    assert registry.get_sample_value("nodemedic_fragmentation_pending_pods") == 1.0
    assert registry.get_sample_value("nodemedic_fragmentation_stranded", {"resource": "cpu"}) == 700.0
    assert registry.get_sample_value("nodemedic_fragmentation_stranded", {"resource": "memory"}) == 0.0
