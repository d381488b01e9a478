"""`FenceWriter`: the out-of-service taint put on with nodemedic's fence record in one guarded patch (any earlier
out-of-service taint replaced, other taints kept), a dark node's NodeClaim deleted after its record is written
(404: gone already), a fence ended (the taint taken off only when nodemedic's), and a refused write doing nothing
further: no metric, no alert."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from typing import Any

from prometheus_client import CollectorRegistry

from nodemedic_common.fence_contract import (
    CONFIRM_ANNOTATION,
    FENCE_ANNOTATION,
    OUT_OF_SERVICE_KEY,
    Evidence,
    FenceAction,
    parse_record,
)
from nodemedic_common.kube_errors import ApiError
from remediator.actions.fence_writer import FenceWriter
from remediator.actions.repair_writer import NODECLAIMS
from remediator.alerts.alert import AlertKind
from remediator.alerts.dark_metrics import DarkMetrics, create_dark_metrics
from remediator.repair.dark_decisions import ClaimDelete, Fence, Unfence

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
OTHER = {"key": "someone/else", "effect": "NoSchedule"}
STALE = {"key": OUT_OF_SERVICE_KEY, "value": "person", "effect": "NoExecute"}


class FakeKube:
    def __init__(self, answers: dict[str, ApiError] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, str, Any]] = []

    async def request(self, method: str, path: str, *, body: object = None, **_: object) -> object:
        self.calls.append((method, path, body))
        if method in self.answers:
            raise self.answers[method]
        return {}


class FakeAlerts:
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def node(self, node: str, **kwargs: Any) -> None:
        self.sent.append({"node": node, **kwargs})


def _writer(kube: FakeKube) -> tuple[FenceWriter, FakeAlerts, DarkMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    metrics = create_dark_metrics(registry)
    alerts = FakeAlerts()
    return FenceWriter(kube, alerts, metrics, logging.getLogger("test.fence")), alerts, metrics, registry  # type: ignore[arg-type]


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_a_fence_puts_the_out_of_service_taint_on_with_its_record_in_one_guarded_patch() -> None:
    kube = FakeKube()
    writer, alerts, _, registry = _writer(kube)
    fence = Fence("n1", Evidence.PERSON, "confirmed by alice")
    assert asyncio.run(writer.fence(fence, base={"taints": [OTHER, STALE, "junk"], "resourceVersion": "7"}, now=NOW))
    ((method, path, body),) = kube.calls
    assert (method, path) == ("PATCH", "/api/v1/nodes/n1")
    assert body["metadata"]["resourceVersion"] == "7"
    assert body["spec"]["taints"] == [OTHER, {"key": OUT_OF_SERVICE_KEY, "value": "nodeshutdown",
                                              "effect": "NoExecute", "timeAdded": "2026-05-01T12:00:00Z"}]
    record = parse_record(body["metadata"]["annotations"][FENCE_ANNOTATION])
    assert (record.at, record.action, record.evidence, record.detail) == (
        NOW, FenceAction.TAINT, Evidence.PERSON, "confirmed by alice")
    assert _value(registry, "nodemedic_fences_total", evidence="person") == 1
    (alert,) = alerts.sent
    assert (alert["node"], alert["kind"], alert["reason"], alert["type_"]) == (
        "n1", AlertKind.FENCED, "NodemedicFenced", "Warning")
    assert alert["message"].startswith("the node is dark; fenced on person evidence (confirmed by alice): "
                                       f"{OUT_OF_SERVICE_KEY}=nodeshutdown:NoExecute is on")


def test_a_fence_refused_with_a_conflict_does_nothing_further() -> None:
    kube = FakeKube({"PATCH": ApiError(409, "PATCH", "/api/v1/nodes/n1", "conflict")})
    writer, alerts, _, registry = _writer(kube)
    fence = Fence("n1", Evidence.REBOOT, "rebooted")
    assert asyncio.run(writer.fence(fence, base={"taints": [], "resourceVersion": "7"}, now=NOW)) is False
    assert alerts.sent == [] and _value(registry, "nodemedic_fences_total", evidence="reboot") == 0


def test_deleting_a_claim_records_it_on_the_node_first_then_deletes_the_nodeclaim() -> None:
    kube = FakeKube()
    writer, alerts, _, registry = _writer(kube)
    claim = ClaimDelete("n1", "default-abc", "silent for 5m")
    assert asyncio.run(writer.delete_claim(claim, base={"taints": [OTHER], "resourceVersion": "9"}, now=NOW))
    (patch, delete) = kube.calls
    assert patch[0] == "PATCH" and "spec" not in patch[2]  # the taints are not touched
    record = json.loads(patch[2]["metadata"]["annotations"][FENCE_ANNOTATION])
    assert record == {"at": "2026-05-01T12:00:00Z", "action": "replace", "evidence": "nodeclaim",
                      "detail": "NodeClaim default-abc: silent for 5m"}
    assert delete == ("DELETE", f"{NODECLAIMS}/default-abc", None)
    assert _value(registry, "nodemedic_fences_total", evidence="nodeclaim") == 1
    assert [a["reason"] for a in alerts.sent] == ["NodemedicDarkNodeReplaced"]
    assert alerts.sent[0]["details"] == {"evidence": "nodeclaim", "nodeclaim": "default-abc"}


def test_a_nodeclaim_already_gone_counts_as_deleted() -> None:
    kube = FakeKube({"DELETE": ApiError(404, "DELETE", "/x", "not found")})
    writer, alerts, _, _ = _writer(kube)
    claim = ClaimDelete("n1", "default-abc", "silent")
    assert asyncio.run(writer.delete_claim(claim, base={"taints": [], "resourceVersion": "9"}, now=NOW)) is True
    assert len(alerts.sent) == 1


def test_a_nodeclaim_delete_that_fails_is_false_without_alert_or_count() -> None:
    kube = FakeKube({"DELETE": ApiError(403, "DELETE", "/x", "forbidden")})
    writer, alerts, _, registry = _writer(kube)
    claim = ClaimDelete("n1", "default-abc", "silent")
    assert asyncio.run(writer.delete_claim(claim, base={"taints": [], "resourceVersion": "9"}, now=NOW)) is False
    assert alerts.sent == [] and _value(registry, "nodemedic_fences_total", evidence="nodeclaim") == 0


def test_a_refused_record_write_leaves_the_nodeclaim_alone() -> None:
    kube = FakeKube({"PATCH": ApiError(409, "PATCH", "/x", "conflict")})
    writer, _, _, _ = _writer(kube)
    claim = ClaimDelete("n1", "default-abc", "silent")
    assert asyncio.run(writer.delete_claim(claim, base={"taints": [], "resourceVersion": "9"}, now=NOW)) is False
    assert [c[0] for c in kube.calls] == ["PATCH"]


def test_unfencing_takes_off_the_taint_nodemedic_put_on_and_both_annotations() -> None:
    kube = FakeKube()
    writer, alerts, _, registry = _writer(kube)
    assert asyncio.run(writer.unfence(Unfence("n1", "the node is back", taint=True),
                                      base={"taints": [STALE, OTHER], "resourceVersion": "3"}))
    ((_, _, body),) = kube.calls
    assert body == {"metadata": {"resourceVersion": "3",
                                 "annotations": {FENCE_ANNOTATION: None, CONFIRM_ANNOTATION: None}},
                    "spec": {"taints": [OTHER]}}
    assert _value(registry, "nodemedic_unfences_total") == 1
    (alert,) = alerts.sent
    assert (alert["reason"], alert["type_"], alert["message"]) == (
        "NodemedicUnfenced", "Normal", f"the node is back; {OUT_OF_SERVICE_KEY} taken off")


def test_unfencing_without_nodemedics_taint_leaves_the_taints_alone() -> None:
    kube = FakeKube()
    writer, alerts, _, _ = _writer(kube)
    assert asyncio.run(writer.unfence(Unfence("n1", "confirmation went stale", taint=False),
                                      base={"taints": [STALE], "resourceVersion": "3"}))
    ((_, _, body),) = kube.calls
    assert "spec" not in body
    assert alerts.sent[0]["message"] == "confirmation went stale"
