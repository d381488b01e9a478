"""API JSON → slim records: quantities, QoS, requests, volumes, selectors; odd data never raises."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from remediator.model.records import (
    NO_STATUSES,
    ContainerStatuses,
    Effect,
    NodeRecord,
    NodeSelectorTerm,
    PdbRecord,
    PodAffinityTerm,
    PodRecord,
    PreferredNodeTerm,
    SelectorRequirement,
    Taint,
    Toleration,
)
from remediator.scheduling.tolerations import tolerated
from remediator.state import records
from remediator.state.quantity import resources, to_int


@pytest.mark.parametrize(
    ("resource", "value", "expected"),
    [
        ("cpu", "100m", 100), ("cpu", "2", 2000), ("cpu", "1.5", 1500), ("cpu", "250u", 1),
        ("memory", "64Mi", 64 * 2**20), ("memory", "1G", 10**9), ("memory", "1.5Gi", 3 * 2**29),
        ("pods", "110", 110), ("memory", 1024, 1024), ("nvidia.com/gpu", "2", 2), ("memory", "2e3", 2000),
    ],
    ids=str,
)
def test_quantities_become_exact_integers(resource: str, value: str, expected: int) -> None:
    assert to_int(resource, value) == expected


def test_an_unparsable_quantity_is_skipped_not_raised() -> None:
    assert resources({"cpu": "lots", "memory": "1Gi", "weird": None}) == {"memory": 2**30}


@pytest.mark.parametrize("value", [float("inf"), float("nan"), "1e999999999", "9Ei", True, 2**70],
                         ids=["inf", "nan", "huge-exponent", "beyond-int64", "bool", "huge-int"])
def test_a_quantity_kubernetes_would_refuse_is_skipped(value: object) -> None:
    # Found by tests/unit/fuzz: inf raised OverflowError from math.ceil, a bool raised InvalidOperation, and
    # 1e999999999 built an integer of a billion digits.
    assert resources({"cpu": value, "memory": "1Gi"}) == {"memory": 2**30}


def pod_json(**spec_extra: object) -> dict:
    return {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "labels": {"app": "x"},
                     "ownerReferences": [{"kind": "ReplicaSet", "name": "rs", "uid": "rs1", "controller": True}],
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"nodeName": "n1", "priority": 5,
                 "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                                                            "limits": {"cpu": "100m", "memory": "64Mi"}}},
                                {"name": "b", "resources": {"requests": {"cpu": "200m"}, "limits": {"cpu": "200m"}}}],
                 "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "1"}}}],
                 **spec_extra},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:05Z"},
    }


def test_pod_requests_take_the_larger_of_app_containers_and_the_biggest_init_container() -> None:
    p = records.pod(pod_json())
    assert p.requests == {"cpu": 1000, "memory": 64 * 2**20}
    assert p.key == "ns/p" and p.controller is not None and p.controller.uid == "rs1"
    assert p.start_time == dt.datetime(2026, 1, 1, 0, 0, 5, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([{"name": "a"}], "BestEffort"),
        ([{"name": "a", "resources": {"requests": {"cpu": "1"}}}], "Burstable"),
        ([{"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                      "limits": {"cpu": "1", "memory": "1Gi"}}}], "Guaranteed"),
        ([{"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}], "Guaranteed"),
    ],
    ids=["no-resources", "requests-only", "requests-equal-limits", "limits-only"],
)
def test_qos_class_is_derived_when_the_status_does_not_say(containers: list, qos: str) -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"containers": containers}, "status": {}}
    assert records.pod(obj).qos == qos


def test_container_images_are_recorded_sorted_init_containers_left_out() -> None:
    obj = {"metadata": {"name": "p"}, "status": {}, "spec": {
        "containers": [{"name": "b", "image": "sidecar:2"}, {"name": "a", "image": "app:1"}],
        "initContainers": [{"name": "i", "image": "migrate:1"}]}}
    assert records.pod(obj).images == ("app:1", "sidecar:2")  # RemoveDuplicates compares these


def test_local_storage_pvc_tolerations_and_required_affinity_are_recorded() -> None:
    p = records.pod(pod_json(
        volumes=[{"name": "v", "emptyDir": {}}, {"name": "c", "persistentVolumeClaim": {"claimName": "x"}}],
        tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
    ))
    assert p.has_local_storage and p.has_pvc
    assert p.tolerations[0].operator == "Exists"
    assert p.required_node_affinity[0].match_expressions[0].values == ("a",)


def test_required_pod_anti_affinity_terms_are_recorded_with_their_namespaces_resolved() -> None:
    web = {"matchLabels": {"app": "web"}}
    p = records.pod(pod_json(affinity={"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": web, "topologyKey": "kubernetes.io/hostname"},
            {"labelSelector": web, "topologyKey": "topology.kubernetes.io/zone", "namespaces": ["a", "b"]},
            {"labelSelector": web, "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {}},
            {"labelSelector": web},  # no topologyKey: the API server refuses it; nothing to evaluate
        ],
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "podAffinityTerm": {"labelSelector": web, "topologyKey": "kubernetes.io/hostname"}}],
    }}))
    own = p.namespace
    assert [(t.topology_key, t.namespaces, t.any_namespace) for t in p.required_anti_affinity] == [
        ("kubernetes.io/hostname", (own,), False), ("topology.kubernetes.io/zone", ("a", "b"), False),
        ("kubernetes.io/hostname", (), True)]
    assert p.required_anti_affinity[0].selector is not None
    assert p.required_anti_affinity[0].selector.match_labels == (("app", "web"),)
    assert p.required_affinity == ()
    near = records.pod(pod_json(affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": web, "topologyKey": "topology.kubernetes.io/zone"}]}}))
    assert [(t.topology_key, t.namespaces) for t in near.required_affinity] == [("topology.kubernetes.io/zone", (own,))]
    assert near.required_anti_affinity == ()


def test_spread_constraints_are_recorded_hard_and_soft_apart_with_match_label_keys_folded_in() -> None:
    p = records.pod(pod_json(topologySpreadConstraints=[
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
         "labelSelector": {"matchLabels": {"app": "x"}}, "matchLabelKeys": ["app", "missing"], "minDomains": 3,
         "nodeAffinityPolicy": "Ignore", "nodeTaintsPolicy": "Honor"},
        {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
         "labelSelector": {"matchLabels": {"app": "x"}}},
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
    ]))
    first, second = p.hard_spread
    assert (first.max_skew, first.topology_key, first.min_domains) == (1, "zone", 3)
    assert not first.honor_node_affinity and first.honor_node_taints
    assert first.selector is not None and [(r.key, r.operator, r.values) for r in first.selector.match_expressions] \
        == [("app", "In", ("x",))], "only keys the pod has are folded in"
    assert (second.max_skew, second.selector, second.honor_node_affinity, second.honor_node_taints) == (
        2, None, True, False)
    (soft,) = p.soft_spread
    assert (soft.max_skew, soft.topology_key) == (1, "kubernetes.io/hostname") and soft.selector is not None


def test_node_taints_conditions_and_allocatable_are_recorded_and_unknown_effects_dropped() -> None:
    n = records.node({
        "metadata": {"name": "n1", "annotations": {"a": "b"}},
        "spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "x", "effect": "Bogus"}],
                 "unschedulable": True},
        "status": {"allocatable": {"cpu": "7910m", "memory": "31Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                  {"type": "KernelDeadlock", "status": "True", "lastTransitionTime": "garbage"}]},
    })
    assert n.taints == (Taint("k", "v", Effect.NO_SCHEDULE),)
    assert n.unschedulable and n.ready
    assert n.allocatable == {"cpu": 7910, "memory": 31 * 2**30, "pods": 110}
    assert n.condition("KernelDeadlock") is not None and n.condition("KernelDeadlock").last_transition is None


EMPTY_POD, EMPTY_NODE, EMPTY_PDB = PodRecord("", "", ""), NodeRecord(""), PdbRecord("", "", None)
ANY_TAINT = [Taint("k", "", Effect.NO_SCHEDULE), Taint("k", "v", Effect.NO_EXECUTE)]  # a taint always has a key


@pytest.mark.parametrize(
    ("obj", "pod_fields"),
    [({}, {}),
     ({"metadata": None, "spec": "x", "status": 3}, {}),
     ({"metadata": {"labels": ["not", "a", "map"], "annotations": "x", "ownerReferences": {"a": 1}}}, {}),
     ({"spec": {"containers": "nope", "tolerations": [None, 1], "volumes": [3], "priority": "high"}},
      {"tolerations": (Toleration(), Toleration())}),
     ({"spec": {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
         None, 7, {"topologyKey": 5}, {"topologyKey": "k", "labelSelector": "x", "namespaces": "ns"}]}}}},
      {"required_anti_affinity": (PodAffinityTerm(None, ("",), False, "k"),)}),
     ({"status": {"phase": None, "startTime": 12, "conditions": "x", "allocatable": [1]}}, {})],
    ids=["empty", "wrong-types", "maps-of-the-wrong-type", "garbage-lists", "garbage-anti-affinity", "garbage-status"],
)
def test_garbage_objects_yield_default_records_instead_of_exceptions(obj: dict, pod_fields: dict) -> None:
    pod = records.pod(obj)
    assert pod == dataclasses.replace(EMPTY_POD, **pod_fields)
    assert not any(tolerated(pod.tolerations, t) for t in ANY_TAINT), "garbage tolerations tolerate nothing"
    assert records.node(obj) == EMPTY_NODE
    assert records.pdb(obj) == EMPTY_PDB


def test_container_statuses_keep_restarts_state_reasons_and_exit_codes_per_kind() -> None:
    rec = records.pod({
        "metadata": {"name": "p", "namespace": "default"},
        "status": {
            "phase": "Failed", "reason": "Evicted",
            "containerStatuses": [
                {"restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}},
                {"restartCount": 2, "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}},
            ],
            "initContainerStatuses": [{"restartCount": 4, "state": {"terminated": {"exitCode": 0}}}],
        },
    })
    assert (rec.phase, rec.reason) == ("Failed", "Evicted")
    assert rec.containers == ContainerStatuses(5, ("CrashLoopBackOff",), ("OOMKilled",), (137,))
    assert rec.init_containers == ContainerStatuses(4, (), (), (0,))


def test_a_healthy_pod_shares_the_one_empty_statuses_value() -> None:
    status = {"containerStatuses": [{"restartCount": 0, "state": {"running": {"startedAt": "2024-05-01T00:00:00Z"}}}]}
    rec = records.pod({"metadata": {"name": "p"}, "status": status})
    assert rec.containers is NO_STATUSES and rec.init_containers is NO_STATUSES


def test_the_claims_of_persistent_volume_claim_volumes_are_recorded() -> None:
    rec = records.pod({"metadata": {"name": "p"}, "spec": {"volumes": [
        {"name": "b", "persistentVolumeClaim": {"claimName": "data-b"}}, {"name": "tmp", "emptyDir": {}},
        {"name": "a", "persistentVolumeClaim": {"claimName": "data-a"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}})
    assert rec.claims == ("data-a", "data-b") and rec.has_pvc and rec.has_local_storage


def test_ephemeral_container_statuses_are_kept_apart() -> None:
    rec = records.pod({"metadata": {"name": "p"}, "status": {"ephemeralContainerStatuses": [
        {"name": "debug", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}})
    assert rec.ephemeral_containers == ContainerStatuses(terminated=("OOMKilled",), exit_codes=(137,))
    assert rec.containers is NO_STATUSES


def _running(name: str, created: str, ready: str) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": created}, "status": {"conditions": [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": created},
        {"type": "Ready", "status": "True", "lastTransitionTime": ready},
        {"type": "Initialized", "status": "True", "reason": "PodCompleted"}]}}


def test_pod_conditions_keep_type_status_reason_and_the_transition_time() -> None:
    rec = records.pod(_running("p", "2025-06-01T12:00:00Z", "2025-06-01T15:00:05Z"))
    assert [(c.type, c.status, c.reason, rec.transitioned(c)) for c in rec.conditions] == [
        ("PodScheduled", "True", "", dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)),
        ("Ready", "True", "", dt.datetime(2025, 6, 1, 15, 0, 5, tzinfo=dt.UTC)),
        ("Initialized", "True", "PodCompleted", None)]


def test_pods_whose_conditions_changed_as_long_after_their_creation_share_one_conditions_value() -> None:
    a = records.pod(_running("a", "2025-06-01T12:00:00Z", "2025-06-01T12:00:04Z"))
    b = records.pod(_running("b", "2025-06-02T08:30:00Z", "2025-06-02T08:30:04Z"))
    c = records.pod(_running("c", "2025-06-02T08:30:00Z", "2025-06-02T08:30:09Z"))
    assert a.conditions is b.conditions
    assert c.conditions is not a.conditions and c.conditions[0] is a.conditions[0]
    assert records.pod({"metadata": {"name": "d"}}).conditions == ()


def test_preferred_node_affinity_keeps_weights_and_terms() -> None:
    rec = records.pod({"metadata": {"name": "p"}, "spec": {"affinity": {"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}},
            {"weight": 0, "preference": {}},
        ]}}}})
    assert rec.preferred_node_affinity == (PreferredNodeTerm(20, NodeSelectorTerm(
        match_expressions=(SelectorRequirement("disk", "In", ("ssd",)),))),)


@pytest.mark.parametrize(("value", "problem"), [
    ("9999-12-31T23:59:59Z", "'9999-12-31T23:59:59Z' is outside 1970-01-01..2262-04-11"),
    ("0001-01-01T00:00:00Z", "'0001-01-01T00:00:00Z' is outside 1970-01-01..2262-04-11"),
    ("2262-04-12T00:00:00Z", "'2262-04-12T00:00:00Z' is outside 1970-01-01..2262-04-11"),
    ("2026-03-01T12:00:00", "'2026-03-01T12:00:00' has no UTC offset"),
    ("yesterday", "not an RFC 3339 time: 'yesterday'"),
    (1767225600, "not a string: 1767225600"),
], ids=["year-9999", "year-1", "past-go-nanoseconds", "no-offset", "garbage", "a-number"])
def test_a_time_planning_cannot_use_is_unknown_and_says_why(value: object, problem: str) -> None:
    # Issue 25: the API server stores any RFC 3339 time; a condition stamped in year 9999 made every planning cycle
    # raise OverflowError (a naive one, TypeError) and stopped remediation on every node.
    assert records.parse_time(value) is None
    assert records.time_problem(value) == problem


@pytest.mark.parametrize("value", ["1970-01-01T00:00:00Z", "2026-03-01T12:00:00+05:30", "2262-04-11T00:00:00Z"])
def test_a_usable_time_is_kept_and_has_no_problem(value: str) -> None:
    assert records.parse_time(value) is not None
    assert records.time_problem(value) is None


def test_unusable_times_name_each_field_of_a_node_or_pod() -> None:
    obj = {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
           "status": {"startTime": "2026-01-01T00:00:00",
                      "conditions": [{"type": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                     {"type": "KernelDeadlock", "lastTransitionTime": "9999-12-31T23:59:59Z"}]}}
    assert records.unusable_times(obj) == [
        "status.startTime: '2026-01-01T00:00:00' has no UTC offset",
        "status.conditions[1].lastTransitionTime: '9999-12-31T23:59:59Z' is outside 1970-01-01..2262-04-11"]
    node = records.node(obj)
    assert [c.last_transition for c in node.conditions] == [dt.datetime(2026, 1, 1, tzinfo=dt.UTC), None]
    assert records.pod(obj).start_time is None


def _replica(name: str, *, labels: dict[str, str], cpu: str) -> dict[str, object]:
    """A pod as the API server answers for one replica of a Deployment (every value a fresh object, as JSON gives)."""
    return {
        "metadata": {"name": name, "namespace": "".join(["sh", "op"]), "uid": f"uid-{name}",
                     "creationTimestamp": "2026-06-01T10:00:00Z", "labels": dict(labels),
                     "ownerReferences": [{"kind": "ReplicaSet", "name": "web-7f9c", "uid": "rs-1",
                                          "controller": True}]},
        "spec": {"nodeName": "".join(["node", "-1"]), "schedulerName": "default-scheduler",
                 "containers": [{"name": "app", "image": "example/web:1", "resources": {"requests": {"cpu": cpu}}}],
                 "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                                  "tolerationSeconds": 300}],
                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                "whenUnsatisfiable": "DoNotSchedule",
                                                "labelSelector": {"matchLabels": {"app": "web"}}}]},
        "status": {"phase": "".join(["Run", "ning"]), "qosClass": "Burstable", "startTime": "2026-06-01T10:00:05Z"},
    }


def test_replicas_hold_what_they_have_in_common_as_one_object_and_their_own_values_apart() -> None:
    web = {"app": "web", "pod-template-hash": "7f9c"}
    a = records.pod(_replica("web-1", labels=web, cpu="100m"))
    b = records.pod(_replica("web-2", labels=web, cpu="100m"))
    c = records.pod(_replica("web-3", labels={"app": "web", "pod-template-hash": "0000"}, cpu="200m"))
    shared = ("labels", "annotations", "owners", "tolerations", "node_selector", "hard_spread", "requests", "images",
              "namespace", "node_name", "phase", "qos", "scheduler_name", "start_time", "created")
    assert [f for f in shared if getattr(a, f) is not getattr(b, f)] == []
    assert a.labels == web and a.requests == {"cpu": 100} and a.hard_spread[0].max_skew == 1
    assert c.labels is not a.labels and c.labels["pod-template-hash"] == "0000"
    assert c.requests is not a.requests and c.requests == {"cpu": 200}
    assert (a.name, a.uid) != (b.name, b.uid)
    # Sharing changes what is held, not what is read: the record equals one built from its own values.
    assert a == dataclasses.replace(a, labels=dict(web), owners=tuple(a.owners), requests={"cpu": 100})


def test_large_annotations_stay_the_pod_s_own_so_no_table_keeps_them_after_the_pod_is_gone() -> None:
    big = {"kubectl.kubernetes.io/last-applied-configuration": "x" * (records.SHARED_ANNOTATIONS + 1)}
    small = {"team": "shop"}
    first, second = ({"metadata": {"name": n, "annotations": dict(big)}} for n in ("a", "b"))
    assert records.pod(first).annotations is not records.pod(second).annotations
    assert records.pod(first).annotations == big
    assert records.pod({"metadata": {"annotations": dict(small)}}).annotations is \
        records.pod({"metadata": {"annotations": dict(small)}}).annotations
