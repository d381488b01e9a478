"""`RepairWriter`: a repair step written as the `nodemedic.io/repair` annotation in one guarded patch (a person's
`repair-next` consumed in the same write), the steps it follows counted by result, a replace deleting the NodeClaim
(404: gone already; another failure alerted but the step still asked for), a person's step alerting with what was
tried, a ladder's end (repaired or not) and an unreadable annotation removed; a refused write does nothing further."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from typing import Any

from prometheus_client import CollectorRegistry

from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import NEXT_ANNOTATION, REPAIR_ANNOTATION, RepairAction
from remediator.actions.repair_writer import NODECLAIMS, RepairWriter
from remediator.alerts.alert import AlertKind
from remediator.alerts.repair_metrics import create_repair_metrics
from remediator.repair.decisions import RepairEnd, RepairStart
from remediator.repair.state import LadderState, Tried

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)
EARLIER = NOW - dt.timedelta(minutes=10)


class FakeKube:
    def __init__(self, answers: dict[str, ApiError] | None = None) -> None:
        self.answers = answers or {}
        self.calls: list[tuple[str, str, Any]] = []
        # What a read-back after a lost answer finds: the node as it was before the write (it did not land).
        self.node: dict[str, Any] = {"metadata": {"annotations": {REPAIR_ANNOTATION: "as it was"}}}

    async def get(self, path: str, **_: object) -> dict[str, Any]:
        self.calls.append(("GET", path, None))
        return self.node

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


def _writer(kube: FakeKube) -> tuple[RepairWriter, FakeAlerts, CollectorRegistry]:
    registry = CollectorRegistry()
    alerts = FakeAlerts()
    writer = RepairWriter(kube, alerts, create_repair_metrics(registry), logging.getLogger("test.repair"))  # type: ignore[arg-type]
    return writer, alerts, registry


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def _tried(step: int, action: RepairAction, result: str, service: str = "") -> Tried:
    return Tried(step, action, service, EARLIER, NOW, result)


def _state(action: RepairAction, *, step: int = 0, service: str = "", history: tuple[Tried, ...] = ()) -> LadderState:
    return LadderState(f"1-{step}", "kernel-deadlock", step, action, service, NOW, EARLIER, history)


def test_a_restart_step_is_written_as_the_annotation_and_announced() -> None:
    kube = FakeKube()
    writer, alerts, registry = _writer(kube)
    state = _state(RepairAction.RESTART, service="kubelet")
    start = RepairStart("n1", state, "KernelDeadlock=True for 5m")
    assert asyncio.run(writer.start(start, resource_version="12", prior=())) is True
    assert kube.calls == [("PATCH", "/api/v1/nodes/n1", {"metadata": {
        "resourceVersion": "12", "annotations": {REPAIR_ANNOTATION: state.to_annotation()}}})]
    assert _value(registry, "nodemedic_repair_steps_started_total", action="restart") == 1
    (alert,) = alerts.sent
    assert (alert["kind"], alert["reason"], alert["type_"]) == (AlertKind.REPAIR_STEP, "NodemedicRepairStep", "Normal")
    assert alert["message"] == "step 1 of kernel-deadlock: restart kubelet (KernelDeadlock=True for 5m)"
    assert alert["details"] == {"rule": "kernel-deadlock", "action": "restart", "id": "1-0"}


def test_a_step_a_person_asked_for_consumes_their_next_annotation_in_the_same_write() -> None:
    kube = FakeKube()
    writer, _, _ = _writer(kube)
    start = RepairStart("n1", _state(RepairAction.REBOOT), "c", consumes_next=True)
    asyncio.run(writer.start(start, resource_version="12", prior=()))
    annotations = kube.calls[0][2]["metadata"]["annotations"]
    assert annotations[NEXT_ANNOTATION] is None and REPAIR_ANNOTATION in annotations


def test_the_steps_ended_by_this_write_are_counted_by_their_result_and_the_earlier_ones_not_again() -> None:
    kube = FakeKube()
    writer, _, registry = _writer(kube)
    prior = (_tried(0, RepairAction.RESTART, "skipped: not configured", "kubelet"),)
    history = (*prior, _tried(1, RepairAction.RESTART, "the agent answered Failed", "containerd"),
               _tried(2, RepairAction.REBOOT, "ended by a person"), _tried(3, RepairAction.REBOOT, "past its wait"))
    start = RepairStart("n1", _state(RepairAction.REPLACE, step=4, history=history), "c", claim="default-x")
    asyncio.run(writer.start(start, resource_version="12", prior=prior))
    finished = "nodemedic_repair_steps_finished_total"
    assert _value(registry, finished, action="restart", result="skipped") == 0
    assert _value(registry, finished, action="restart", result="failed") == 1
    assert _value(registry, finished, action="reboot", result="person") == 1
    assert _value(registry, finished, action="reboot", result="persisted") == 1


def test_a_replace_step_deletes_the_nodeclaim_after_writing_the_step() -> None:
    kube = FakeKube()
    writer, alerts, _ = _writer(kube)
    start = RepairStart("n1", _state(RepairAction.REPLACE), "c", claim="default-x")
    assert asyncio.run(writer.start(start, resource_version="12", prior=())) is True
    assert [(m, p) for m, p, _ in kube.calls] == [("PATCH", "/api/v1/nodes/n1"), ("DELETE", f"{NODECLAIMS}/default-x")]
    assert [a["reason"] for a in alerts.sent] == ["NodemedicRepairStep"]


def test_a_replace_whose_nodeclaim_is_gone_already_is_a_normal_step() -> None:
    kube = FakeKube({"DELETE": ApiError(404, "DELETE", "/x", "not found")})
    writer, alerts, _ = _writer(kube)
    start = RepairStart("n1", _state(RepairAction.REPLACE), "c", claim="default-x")
    assert asyncio.run(writer.start(start, resource_version="12", prior=())) is True
    assert [a["reason"] for a in alerts.sent] == ["NodemedicRepairStep"]


def test_a_replace_whose_nodeclaim_delete_fails_alerts_and_still_counts_as_asked() -> None:
    kube = FakeKube({"DELETE": ApiError(403, "DELETE", "/x", "forbidden")})
    writer, alerts, _ = _writer(kube)
    start = RepairStart("n1", _state(RepairAction.REPLACE), "c", claim="default-x")
    assert asyncio.run(writer.start(start, resource_version="12", prior=())) is True
    (alert,) = alerts.sent
    assert (alert["reason"], alert["type_"]) == ("NodemedicRepairFailed", "Warning")
    assert alert["message"].startswith("could not delete NodeClaim default-x to replace the node: ")


def test_a_persons_step_alerts_with_everything_tried() -> None:
    kube = FakeKube()
    writer, alerts, _ = _writer(kube)
    history = (_tried(0, RepairAction.RESTART, "past its wait", "kubelet"),)
    start = RepairStart("n1", _state(RepairAction.PERSON, step=1, history=history), "still deadlocked")
    asyncio.run(writer.start(start, resource_version="12", prior=()))
    (alert,) = alerts.sent
    assert (alert["kind"], alert["reason"]) == (AlertKind.NEEDS_A_PERSON, "NodemedicNeedsAPerson")
    assert alert["message"].startswith("kernel-deadlock: repair handed to a person (still deadlocked); tried: "
                                       "restart kubelet at 2026-05-01T11:50:00Z: past its wait. ")
    assert "kubectl nodemedic repair n1 --resume" in alert["message"]


def test_a_persons_step_with_nothing_tried_says_nothing() -> None:
    kube = FakeKube()
    writer, alerts, _ = _writer(kube)
    asyncio.run(writer.start(RepairStart("n1", _state(RepairAction.PERSON), "c"), resource_version="1", prior=()))
    assert "; tried: nothing." in alerts.sent[0]["message"]


def test_a_refused_step_write_does_nothing_further() -> None:
    kube = FakeKube({"PATCH": ApiError(409, "PATCH", "/x", "conflict")})
    writer, alerts, registry = _writer(kube)
    start = RepairStart("n1", _state(RepairAction.REPLACE), "c", claim="default-x")
    assert asyncio.run(writer.start(start, resource_version="12", prior=())) is False
    assert [c[0] for c in kube.calls] == ["PATCH"] and alerts.sent == []
    assert _value(registry, "nodemedic_repair_steps_started_total", action="replace") == 0


def test_a_repaired_end_removes_both_annotations_and_records_how_long_it_took() -> None:
    kube = FakeKube()
    writer, alerts, registry = _writer(kube)
    end = RepairEnd("n1", _state(RepairAction.RESTART, service="kubelet"), "the condition cleared", repaired=True)
    assert asyncio.run(writer.end(end, resource_version="5", now=NOW)) is True
    assert kube.calls[0][2]["metadata"]["annotations"] == {REPAIR_ANNOTATION: None, NEXT_ANNOTATION: None}
    assert _value(registry, "nodemedic_repair_steps_finished_total", action="restart", result="repaired") == 1
    assert _value(registry, "nodemedic_repair_seconds_sum", action="restart") == 600
    (alert,) = alerts.sent
    assert (alert["kind"], alert["message"]) == (
        AlertKind.REPAIRED, "kernel-deadlock: repaired in 10m0s: the condition cleared")


def test_an_unrepaired_end_is_counted_as_ended_and_warned() -> None:
    kube = FakeKube()
    writer, alerts, registry = _writer(kube)
    end = RepairEnd("n1", _state(RepairAction.REBOOT), "the rule no longer applies", repaired=False)
    assert asyncio.run(writer.end(end, resource_version="5", now=NOW)) is True
    assert _value(registry, "nodemedic_repair_steps_finished_total", action="reboot", result="ended") == 1
    assert _value(registry, "nodemedic_repair_seconds_count", action="reboot") == 0
    assert (alerts.sent[0]["kind"], alerts.sent[0]["type_"], alerts.sent[0]["message"]) == (
        AlertKind.REPAIR_ENDED, "Warning", "kernel-deadlock: repair ladder ended: the rule no longer applies")


def test_a_refused_end_is_false_with_no_alert() -> None:
    kube = FakeKube({"PATCH": ApiError(500, "PATCH", "/x", "boom")})
    writer, alerts, _ = _writer(kube)
    end = RepairEnd("n1", _state(RepairAction.REBOOT), "r", repaired=True)
    assert asyncio.run(writer.end(end, resource_version="5", now=NOW)) is False
    assert alerts.sent == []


def test_an_end_whose_answer_was_lost_but_that_the_node_shows_is_announced() -> None:
    kube = FakeKube({"PATCH": ApiError(0, "PATCH", "/x", "Server disconnected")})
    kube.node = {"metadata": {"annotations": {"other": "x"}}}  # the repair annotations are gone: the end landed
    writer, alerts, _ = _writer(kube)
    end = RepairEnd("n1", _state(RepairAction.REBOOT), "r", repaired=True)
    assert asyncio.run(writer.end(end, resource_version="5", now=NOW)) is True
    assert [a["reason"] for a in alerts.sent] == ["NodemedicRepaired"]


def test_forget_removes_only_the_repair_annotation_and_says_why() -> None:
    kube = FakeKube()
    writer, alerts, _ = _writer(kube)
    asyncio.run(writer.forget("n1", "not JSON", resource_version="2"))
    assert kube.calls[0][2] == {"metadata": {"resourceVersion": "2", "annotations": {REPAIR_ANNOTATION: None}}}
    assert alerts.sent[0]["message"] == "removed an unreadable repair annotation: not JSON"


def test_forget_refused_says_nothing() -> None:
    kube = FakeKube({"PATCH": ApiError(409, "PATCH", "/x", "conflict")})
    writer, alerts, _ = _writer(kube)
    asyncio.run(writer.forget("n1", "not JSON", resource_version="2"))
    assert alerts.sent == []


def test_the_written_annotation_is_the_ladder_state_as_json() -> None:
    kube = FakeKube()
    writer, _, _ = _writer(kube)
    asyncio.run(writer.start(RepairStart("n1", _state(RepairAction.REBOOT), "c"), resource_version="1", prior=()))
    doc = json.loads(kube.calls[0][2]["metadata"]["annotations"][REPAIR_ANNOTATION])
    assert (doc["id"], doc["action"], doc["requested"]) == ("1-0", "reboot", "2026-05-01T12:00:00Z")
