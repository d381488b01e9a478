"""Finding the node autoscaler at work: what each answer of the API means (404 and 403: not there; other failures:
keep the last answer; an autoscaler's objects without its fresh stamp: not there, saying why), what is logged (each
change once, never at every look), the gauge, and when it looks at all."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
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
    CLUSTER_AUTOSCALER_LAST_UPDATED,
    CLUSTER_AUTOSCALER_STATUS,
    KARPENTER_DISCOVERY,
    KARPENTER_LEASE,
    LEASES,
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
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
WITHIN = dt.timedelta(minutes=5)


def ca_configmap(annotation: object = "2026-03-01 11:59:50.123456789 +0000 UTC") -> dict[str, object]:
    """The status ConfigMap's metadata as cluster-autoscaler leaves it (None: without its stamp)."""
    meta: dict[str, object] = {"name": "cluster-autoscaler-status", "namespace": "kube-system"}
    if annotation is not None:
        meta["annotations"] = {CLUSTER_AUTOSCALER_LAST_UPDATED: annotation, "other": "x"}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def leases(*specs: dict[str, object], namespace: str = "karpenter") -> dict[str, object]:
    return {"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
            "items": [{"metadata": {"name": KARPENTER_LEASE, "namespace": namespace}, "spec": spec} for spec in specs]}


HELD = {"holderIdentity": "karpenter-7d9_1b2c", "leaseDurationSeconds": 15, "renewTime": "2026-03-01T11:59:58.000000Z"}
CA_CONFIGMAP = ca_configmap()
KARPENTER = {KARPENTER_DISCOVERY: KARPENTER_V1, LEASES: leases(HELD)}


def error(status: int, path: str) -> ApiError:
    reason = {403: "Forbidden", 404: "NotFound", 500: "InternalError"}.get(status, "")
    return ApiError(status, "GET", path, json.dumps({"kind": "Status", "code": status, "reason": reason,
                                                     "message": f"{reason or 'failed'} (test)"}))


class FakeKube:
    """Answers per path (an object, or an ApiError to raise; a path not given is 404); records every request."""

    def __init__(self, answers: dict[str, object] | None = None) -> None:
        self.answers = dict(answers or {})
        self.calls: list[tuple[str, str, str]] = []
        self.params: list[object] = []

    async def request(self, method: str, path: str, *, accept: str = "application/json", params: object = None,
                      **_: object) -> object:
        self.calls.append((method, path, accept))
        self.params.append(params)
        answer = self.answers.get(path, error(404, path))
        if isinstance(answer, ApiError):
            raise answer
        return answer


def probe(which: str, answer: object, lease: object = None) -> Probe:
    answers = {KARPENTER_DISCOVERY: answer, LEASES: leases(HELD) if lease is None else lease} \
        if which == "karpenter" else {CA_STATUS: answer}
    look = probe_karpenter if which == "karpenter" else probe_cluster_autoscaler
    return asyncio.run(look(FakeKube(answers), NOW, WITHIN))  # type: ignore[arg-type]


@pytest.mark.parametrize(("which", "answer", "present", "evidence"), [
    ("karpenter", KARPENTER_V1, True,
     "Lease karpenter/karpenter-leader-election (held by karpenter-7d9_1b2c) renewed 2s ago "
     "(at 2026-03-01T11:59:58Z)"),
    ("karpenter", {**KARPENTER_V1, "resources": [{"name": "nodeclaims"}]}, False,
     "the API serves karpenter.sh/v1 without nodepools"),
    ("karpenter", error(404, KARPENTER_DISCOVERY), False, "GET /apis/karpenter.sh/v1: HTTP 404: NotFound (test)"),
    ("karpenter", error(403, KARPENTER_DISCOVERY), False,
     "GET /apis/karpenter.sh/v1: HTTP 403: Forbidden (test) (not ours to see: counted as not there)"),
    ("karpenter", error(500, KARPENTER_DISCOVERY), None, "GET /apis/karpenter.sh/v1: HTTP 500: InternalError (test)"),
    ("karpenter", ["nodepools"], None, "GET /apis/karpenter.sh/v1: the answer is not an APIResourceList"),
    ("karpenter", {"resources": "nodepools"}, None, "GET /apis/karpenter.sh/v1: the answer is not an APIResourceList"),
    ("cluster-autoscaler", CA_CONFIGMAP, True,
     "ConfigMap kube-system/cluster-autoscaler-status last updated 10s ago (at 2026-03-01T11:59:50.123456Z)"),
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
    got = probe(which, answer)
    assert (got.present, got.evidence) == (present, evidence)


YEAR_AGO = "2025-03-01 12:00:00.123456789 +0000 UTC"


@pytest.mark.parametrize(("configmap", "present", "evidence"), [
    # cluster-autoscaler uninstalled a year ago; its status ConfigMap stayed (the input)
    (ca_configmap(YEAR_AGO), False,
     "ConfigMap kube-system/cluster-autoscaler-status last updated 8760h0m0s ago (at 2025-03-01T12:00:00.123456Z), "
     "longer than autoscaler.activeWithin (5m0s): nothing keeps it fresh, so no node will come"),
    (ca_configmap("2026-03-01 11:54:59 +0000 UTC"), False,
     "ConfigMap kube-system/cluster-autoscaler-status last updated 5m1s ago (at 2026-03-01T11:54:59Z), "
     "longer than autoscaler.activeWithin (5m0s): nothing keeps it fresh, so no node will come"),
    (ca_configmap("2026-03-01 11:55:00 +0000 UTC"), True,
     "ConfigMap kube-system/cluster-autoscaler-status last updated 5m0s ago (at 2026-03-01T11:55:00Z)"),
    # another zone, as a cluster-autoscaler with TZ set writes it: the offset counts, the name does not
    (ca_configmap("2026-03-01 13:59:30.5 +0200 EET"), True,
     "ConfigMap kube-system/cluster-autoscaler-status last updated 30s ago (at 2026-03-01T11:59:30.500000Z)"),
    (ca_configmap(None), False,
     "ConfigMap kube-system/cluster-autoscaler-status exists without the annotation "
     "cluster-autoscaler.kubernetes.io/last-updated that a running cluster-autoscaler writes at every loop: "
     "not evidence of one"),
    (ca_configmap(1740830400), False,
     "ConfigMap kube-system/cluster-autoscaler-status exists without the annotation "
     "cluster-autoscaler.kubernetes.io/last-updated that a running cluster-autoscaler writes at every loop: "
     "not evidence of one"),
    (ca_configmap("yesterday"), False,
     "ConfigMap kube-system/cluster-autoscaler-status annotation cluster-autoscaler.kubernetes.io/last-updated: "
     "'yesterday' is not a time as cluster-autoscaler writes it (2006-01-02 15:04:05.999999999 -0700 MST): "
     "not evidence of a running cluster-autoscaler"),
    (ca_configmap("2026-13-01 11:59:50 +0000 UTC"), False,
     "ConfigMap kube-system/cluster-autoscaler-status annotation cluster-autoscaler.kubernetes.io/last-updated: "
     "'2026-13-01 11:59:50 +0000 UTC' is not a real date and time: not evidence of a running cluster-autoscaler"),
    (ca_configmap("2099-01-01 00:00:00 +0000 UTC"), False,
     "ConfigMap kube-system/cluster-autoscaler-status last updated at 2099-01-01T00:00:00Z, 638484h0m0s in the "
     "future (more than the 1m0s clocks may differ): not evidence of a running writer"),
    ({"metadata": {"annotations": "not a map"}}, False,
     "ConfigMap kube-system/cluster-autoscaler-status exists without the annotation "
     "cluster-autoscaler.kubernetes.io/last-updated that a running cluster-autoscaler writes at every loop: "
     "not evidence of one"),
], ids=["year-old", "just-stale", "just-fresh", "other-zone", "no-annotation", "annotation-not-a-string",
        "garbage-annotation", "month-13", "far-future", "annotations-not-a-map"])
def test_cluster_autoscaler_counts_only_while_its_status_stamp_is_fresh(
        configmap: object, present: bool, evidence: str) -> None:
    got = probe("cluster-autoscaler", configmap)
    assert (got.present, got.evidence) == (present, evidence)


STALE = {**HELD, "renewTime": "2025-03-01T12:00:00.000000Z"}


@pytest.mark.parametrize(("lease", "present", "evidence"), [
    # Karpenter uninstalled: its CRDs stayed, no controller leads (the input)
    (leases(), False, "the API serves karpenter.sh/v1 nodepools (its CRDs), but no Karpenter controller leads: of "
                      "Leases karpenter-leader-election, there is none"),
    ({"kind": "LeaseList", "items": None}, False,
     "the API serves karpenter.sh/v1 nodepools (its CRDs), but no Karpenter controller leads: of Leases "
     "karpenter-leader-election, there is none"),
    # shut down cleanly: client-go releases the Lease (no holder, a fresh renewTime)
    (leases({**HELD, "holderIdentity": ""}), False,
     "the API serves karpenter.sh/v1 nodepools (its CRDs), but no Karpenter controller leads: of Leases "
     "karpenter-leader-election, none is held (a controller shut down cleanly releases it)"),
    (leases(STALE), False,
     "Lease karpenter/karpenter-leader-election (held by karpenter-7d9_1b2c) renewed 8760h0m0s ago "
     "(at 2025-03-01T12:00:00Z), longer than autoscaler.activeWithin (5m0s): nothing keeps it fresh, so no node "
     "will come"),
    # an old install's Lease left in one namespace, the running one's in another: the freshest counts
    ({"items": [*leases(STALE)["items"], *leases(HELD, namespace="kube-system")["items"]]}, True,  # type: ignore[misc]
     "Lease kube-system/karpenter-leader-election (held by karpenter-7d9_1b2c) renewed 2s ago "
     "(at 2026-03-01T11:59:58Z)"),
    (leases({**HELD, "renewTime": None}), False,
     "the API serves karpenter.sh/v1 nodepools, but Lease karpenter/karpenter-leader-election has no "
     "spec.renewTime: not evidence of a running controller"),
    (leases({**HELD, "renewTime": "soon"}), False,
     "the API serves karpenter.sh/v1 nodepools, but Lease karpenter/karpenter-leader-election spec.renewTime: "
     "'soon' is not an RFC 3339 time: not evidence of a running controller"),
    ({"items": ["not a lease", {"metadata": 5, "spec": {}}]}, False,
     "the API serves karpenter.sh/v1 nodepools (its CRDs), but no Karpenter controller leads: of Leases "
     "karpenter-leader-election, none is held (a controller shut down cleanly releases it)"),
    (error(403, LEASES), False,
     f"the API serves karpenter.sh/v1 nodepools, but GET {LEASES}: HTTP 403: Forbidden (test) "
     "(not ours to see: counted as not there)"),
    (error(500, LEASES), None, f"the API serves karpenter.sh/v1 nodepools, but GET {LEASES}: HTTP 500: "
                               "InternalError (test)"),
    ("<html>", None, f"GET {LEASES}?fieldSelector=metadata.name=karpenter-leader-election: the answer is not a "
                     "LeaseList"),
], ids=["no-lease", "items-null", "released", "year-old", "freshest-of-two", "no-renew-time", "garbage-renew-time",
        "items-of-the-wrong-shape", "403", "500", "not-a-list"])
def test_karpenter_counts_only_while_a_held_lease_of_its_leader_is_fresh(
        lease: object, present: bool | None, evidence: str) -> None:
    got = probe("karpenter", KARPENTER_V1, lease)
    assert (got.present, got.evidence) == (present, evidence)


def test_an_autoscaler_that_stops_is_no_longer_counted_on_and_its_staleness_is_logged_once_not_at_every_look(
        caplog: pytest.LogCaptureFixture) -> None:
    """The age grows at every look; the reason does not change: one line, with the age of the first."""
    w = World({CA_STATUS: ca_configmap("2026-03-01 11:59:50 +0000 UTC")})
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert w.current() == {NodeAutoscaler.CLUSTER_AUTOSCALER}
        for _ in range(4):  # it stopped writing: 5m, 10m, 15m, 20m later
            w.now += dt.timedelta(seconds=REDETECT)
            assert w.current(after=REDETECT) == frozenset()
    assert w.gauge("cluster-autoscaler") == 0
    assert [(m, e) for m, a, e in logged(caplog) if a == "cluster-autoscaler"] == [
        ("node autoscaler detected",
         "ConfigMap kube-system/cluster-autoscaler-status last updated 10s ago (at 2026-03-01T11:59:50Z)"),
        ("node autoscaler no longer detected",
         "ConfigMap kube-system/cluster-autoscaler-status last updated 5m10s ago (at 2026-03-01T11:59:50Z), longer "
         "than autoscaler.activeWithin (5m0s): nothing keeps it fresh, so no node will come")]


def test_the_age_accepted_is_the_policys() -> None:
    w = World({CA_STATUS: ca_configmap("2026-03-01 11:50:00 +0000 UTC")})  # 10m old
    policy = dataclasses.replace(Policy(), autoscaler=AutoscalerSettings(active_within=dt.timedelta(minutes=15)))
    assert asyncio.run(w.detector.current(policy)) == {NodeAutoscaler.CLUSTER_AUTOSCALER}
    assert w.current(after=REDETECT) == frozenset(), "the default 5m: too old"


def test_oversized_answers_are_read_for_what_is_needed_only() -> None:
    """A status ConfigMap of a mebibyte (a server that ignores the metadata-only Accept) and a discovery document of
    10,000 resources: existence, and one name, are all that count."""
    big_configmap = {**CA_CONFIGMAP, "kind": "ConfigMap", "data": {"status": "x" * MiB}}
    crowded = {"resources": [*({"name": f"r{i}"} for i in range(10_000)), "not an object", {"name": "nodepools"}]}
    kube = FakeKube({CA_STATUS: big_configmap, KARPENTER_DISCOVERY: crowded, LEASES: leases(HELD)})
    assert asyncio.run(probe_cluster_autoscaler(kube, NOW, WITHIN)).present is True  # type: ignore[arg-type]
    assert asyncio.run(probe_karpenter(kube, NOW, WITHIN)).present is True  # type: ignore[arg-type]
    assert kube.calls == [("GET", CA_STATUS, PARTIAL_METADATA), ("GET", KARPENTER_DISCOVERY, "application/json"),
                          ("GET", LEASES, "application/json")]
    # Only the Leases of that name: what the chart's grant (list, narrowed by resourceNames) lets through.
    assert kube.params[2] == {"fieldSelector": f"metadata.name={KARPENTER_LEASE}"}


class World:
    """A detector on a fake API and a fake monotonic clock."""

    def __init__(self, answers: dict[str, object] | None = None) -> None:
        self.kube = FakeKube(answers)
        self.registry = CollectorRegistry()
        self.mono = 1000.0
        self.now = NOW
        self.detector = AutoscalerDetector(self.kube, gauge=metrics_mod.create(self.registry).autoscaler_detected,  # type: ignore[arg-type]
                                           log=LOG, monotonic=lambda: self.mono, clock=lambda: self.now)

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
    w = World(KARPENTER)
    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert w.current() == {NodeAutoscaler.KARPENTER}
        assert w.current(after=REDETECT - 1) == {NodeAutoscaler.KARPENTER}
        assert len(w.kube.calls) == 3, "one look per autoscaler (Karpenter's: discovery, Lease), none again within"
        assert w.current(after=1) == {NodeAutoscaler.KARPENTER}
        assert len(w.kube.calls) == 6
    assert logged(caplog) == [
        ("node autoscaler detected", "karpenter",
         "Lease karpenter/karpenter-leader-election (held by karpenter-7d9_1b2c) renewed 2s ago "
         "(at 2026-03-01T11:59:58Z)"),
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
    w = World(KARPENTER)
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
    w = World(KARPENTER)
    assert w.current(adds_nodes) == frozenset()
    assert w.kube.calls == [] and w.gauge("karpenter") is None
