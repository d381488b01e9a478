"""Finding the node autoscaler: what each answer of the API means (404 and 403: not there; other failures: keep the
last answer), what is logged (each change once, never at every look), the gauge, and when it looks at all."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

import pytest
from prometheus_client import CollectorRegistry

from nodemedic_common.kube_client import PARTIAL_METADATA
from nodemedic_common.kube_errors import ApiError
from remediator.alerts import metrics as metrics_mod
from remediator.policy.autoscaler import AUTO, AddsNodes, AutoscalerSettings
from remediator.policy.model import Policy
from remediator.state.autoscaler_detection import (
    CLUSTER_AUTOSCALER_STATUS,
    KARPENTER_DISCOVERY,
    REDETECT,
    AutoscalerDetector,
    Probe,
    probe_cluster_autoscaler,
    probe_karpenter,
)
from remediator.state.snapshot import NodeAutoscaler

LOG = logging.getLogger("test.autoscaler_detection")
CA_STATUS = "/api/v1/namespaces/{}/configmaps/{}".format(*CLUSTER_AUTOSCALER_STATUS)
MiB = 1 << 20
KARPENTER_V1 = {"kind": "APIResourceList", "groupVersion": "karpenter.sh/v1",
                "resources": [{"name": "nodeclaims", "kind": "NodeClaim"}, {"name": "nodepools", "kind": "NodePool"},
                              {"name": "nodepools/status", "kind": "NodePool"}]}
CA_CONFIGMAP = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "cluster-autoscaler-status", "namespace": "kube-system"}}


def error(status: int, path: str) -> ApiError:
    reason = {403: "Forbidden", 404: "NotFound", 500: "InternalError"}.get(status, "")
    return ApiError(status, "GET", path, json.dumps({"kind": "Status", "code": status, "reason": reason,
                                                     "message": f"{reason or 'failed'} (test)"}))


class FakeKube:
    """Answers per path (an object, or an ApiError to raise; a path not given is 404); records every request."""

    def __init__(self, answers: dict[str, object] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[tuple[str, str, str]] = []

    async def request(self, method: str, path: str, *, accept: str = "application/json", **_: object) -> object:
        self.calls.append((method, path, accept))
        answer = self.answers.get(path, error(404, path))
        if isinstance(answer, ApiError):
            raise answer
        return answer


def probe(which: str, answer: object) -> Probe:
    path = KARPENTER_DISCOVERY if which == "karpenter" else CA_STATUS
    look = probe_karpenter if which == "karpenter" else probe_cluster_autoscaler
    return asyncio.run(look(FakeKube({path: answer})))  # type: ignore[arg-type]


@pytest.mark.parametrize(("which", "answer", "present", "evidence"), [
    ("karpenter", KARPENTER_V1, True, "the API serves karpenter.sh/v1 nodepools"),
    ("karpenter", {**KARPENTER_V1, "resources": [{"name": "nodeclaims"}]}, False,
     "the API serves karpenter.sh/v1 without nodepools"),
    ("karpenter", error(404, KARPENTER_DISCOVERY), False, "GET /apis/karpenter.sh/v1: HTTP 404: NotFound (test)"),
    ("karpenter", error(403, KARPENTER_DISCOVERY), False,
     "GET /apis/karpenter.sh/v1: HTTP 403: Forbidden (test) (not ours to see: counted as not there)"),
    ("karpenter", error(500, KARPENTER_DISCOVERY), None, "GET /apis/karpenter.sh/v1: HTTP 500: InternalError (test)"),
    ("karpenter", ["nodepools"], None, "GET /apis/karpenter.sh/v1: the answer is not an APIResourceList"),
    ("karpenter", {"resources": "nodepools"}, None, "GET /apis/karpenter.sh/v1: the answer is not an APIResourceList"),
    ("cluster-autoscaler", CA_CONFIGMAP, True, "ConfigMap kube-system/cluster-autoscaler-status exists"),
    ("cluster-autoscaler", error(404, CA_STATUS), False, f"GET {CA_STATUS}: HTTP 404: NotFound (test)"),
    ("cluster-autoscaler", error(403, CA_STATUS), False,
     f"GET {CA_STATUS}: HTTP 403: Forbidden (test) (not ours to see: counted as not there)"),
    ("cluster-autoscaler", error(500, CA_STATUS), None, f"GET {CA_STATUS}: HTTP 500: InternalError (test)"),
    ("cluster-autoscaler", ApiError(0, "GET", CA_STATUS, "ClientConnectorError: refused"), None,
     f"GET {CA_STATUS}: HTTP 0: ClientConnectorError: refused"),
    ("cluster-autoscaler", "<html>proxy</html>", None, f"GET {CA_STATUS}: the answer is not an object with metadata"),
], ids=["karpenter", "karpenter-no-nodepools", "karpenter-404", "karpenter-403", "karpenter-500",
        "karpenter-a-list", "karpenter-resources-not-a-list", "ca", "ca-404", "ca-403", "ca-500", "ca-no-connection",
        "ca-not-an-object"])
def test_each_answer_means_found_not_there_or_unknown(which: str, answer: object, present: bool | None,
                                                      evidence: str) -> None:
    assert probe(which, answer) == Probe(present, evidence)


def test_oversized_answers_are_read_for_what_is_needed_only() -> None:
    """A status ConfigMap of a mebibyte (a server that ignores the metadata-only Accept) and a discovery document of
    10,000 resources: existence, and one name, are all that count."""
    big_configmap = {**CA_CONFIGMAP, "kind": "ConfigMap", "data": {"status": "x" * MiB}}
    crowded = {"resources": [*({"name": f"r{i}"} for i in range(10_000)), "not an object", {"name": "nodepools"}]}
    kube = FakeKube({CA_STATUS: big_configmap, KARPENTER_DISCOVERY: crowded})
    assert asyncio.run(probe_cluster_autoscaler(kube)).present is True  # type: ignore[arg-type]
    assert asyncio.run(probe_karpenter(kube)).present is True  # type: ignore[arg-type]
    assert kube.calls == [("GET", CA_STATUS, PARTIAL_METADATA), ("GET", KARPENTER_DISCOVERY, "application/json")]


class World:
    """A detector on a fake API and a fake monotonic clock."""

    def __init__(self, answers: dict[str, object] | None = None) -> None:
        self.kube = FakeKube(answers)
        self.registry = CollectorRegistry()
        self.mono = 1000.0
        self.detector = AutoscalerDetector(self.kube, gauge=metrics_mod.create(self.registry).autoscaler_detected,  # type: ignore[arg-type]
                                           log=LOG, monotonic=lambda: self.mono)

    def current(self, adds_nodes: AddsNodes = AUTO, *, after: float = 0.0) -> frozenset[NodeAutoscaler]:
        self.mono += after
        policy = dataclasses.replace(Policy(), autoscaler=AutoscalerSettings(adds_nodes=adds_nodes))
        return asyncio.run(self.detector.current(policy))

    def gauge(self, autoscaler: str) -> float | None:
        return self.registry.get_sample_value("nodemedic_autoscaler_detected", {"autoscaler": autoscaler})


def logged(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str, str]]:
    return [(r.message, getattr(r, "autoscaler", ""), getattr(r, "evidence", "")) for r in caplog.records]


def test_found_at_the_first_look_logged_once_and_looked_for_again_only_after_the_interval(
        caplog: pytest.LogCaptureFixture) -> None:
    w = World({KARPENTER_DISCOVERY: KARPENTER_V1})
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert w.current() == {NodeAutoscaler.KARPENTER}
        assert w.current(after=REDETECT - 1) == {NodeAutoscaler.KARPENTER}
        assert len(w.kube.calls) == 2, "one look per autoscaler, none again within the interval"
        assert w.current(after=1) == {NodeAutoscaler.KARPENTER}
        assert len(w.kube.calls) == 4
    assert logged(caplog) == [
        ("node autoscaler detected", "karpenter", "the API serves karpenter.sh/v1 nodepools"),
        ("node autoscaler not detected", "cluster-autoscaler", f"GET {CA_STATUS}: HTTP 404: NotFound (test)")]
    assert (w.gauge("karpenter"), w.gauge("cluster-autoscaler")) == (1, 0)


def test_an_autoscaler_installed_later_is_found_at_the_next_look_and_one_removed_is_no_longer_counted_on(
        caplog: pytest.LogCaptureFixture) -> None:
    w = World()
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert w.current() == frozenset()
        w.kube.answers[CA_STATUS] = CA_CONFIGMAP
        assert w.current(after=REDETECT) == {NodeAutoscaler.CLUSTER_AUTOSCALER}
        assert w.gauge("cluster-autoscaler") == 1
        del w.kube.answers[CA_STATUS]
        assert w.current(after=REDETECT) == frozenset()
    assert w.gauge("cluster-autoscaler") == 0
    assert [(m, a) for m, a, _ in logged(caplog) if a == "cluster-autoscaler"] == [
        ("node autoscaler not detected", "cluster-autoscaler"), ("node autoscaler detected", "cluster-autoscaler"),
        ("node autoscaler no longer detected", "cluster-autoscaler")]


@pytest.mark.parametrize("status", [500, 503, 0], ids=["500", "503", "no-connection"])
def test_a_failing_api_keeps_the_last_answer_and_says_so_once(status: int, caplog: pytest.LogCaptureFixture) -> None:
    w = World({KARPENTER_DISCOVERY: KARPENTER_V1})
    assert w.current() == {NodeAutoscaler.KARPENTER}
    w.kube.answers[KARPENTER_DISCOVERY] = error(status, KARPENTER_DISCOVERY)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        for _ in range(5):
            assert w.current(after=REDETECT) == {NodeAutoscaler.KARPENTER}
    failures = [r for r in caplog.records if r.message == "node autoscaler detection failed, keeping the last answer"]
    assert len(failures) == 1 and failures[0].levelno == logging.WARNING
    assert failures[0].__dict__["detected"] is True
    assert w.gauge("karpenter") == 1


@pytest.mark.parametrize("status", [403, 404])
def test_a_refusal_or_absence_is_not_detected_logged_once_not_at_every_look(
        status: int, caplog: pytest.LogCaptureFixture) -> None:
    w = World({KARPENTER_DISCOVERY: error(status, KARPENTER_DISCOVERY), CA_STATUS: error(status, CA_STATUS)})
    with caplog.at_level(logging.INFO, logger=LOG.name):
        for _ in range(10):
            assert w.current(after=REDETECT) == frozenset()
    assert [(m, a) for m, a, _ in logged(caplog)] == [("node autoscaler not detected", "karpenter"),
                                                      ("node autoscaler not detected", "cluster-autoscaler")]
    assert all(r.levelno < logging.WARNING for r in caplog.records), "no error storm"


@pytest.mark.parametrize("adds_nodes", [True, False])
def test_nothing_is_looked_for_while_the_policy_says_true_or_false(adds_nodes: bool) -> None:
    w = World({KARPENTER_DISCOVERY: KARPENTER_V1})
    assert w.current(adds_nodes) == frozenset()
    assert w.kube.calls == [] and w.gauge("karpenter") is None
