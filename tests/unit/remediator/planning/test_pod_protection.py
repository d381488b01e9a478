"""descheduler's DefaultEvictor filter: every protection on and off by its arg, the evict override, all reasons."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from remediator.model.records import LabelSelector, OwnerRef, PodRecord, SelectorRequirement
from remediator.planning.pod_protection import SYSTEM_CRITICAL_PRIORITY, protection
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.fields import Namespaces
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2025, 1, 1, 12, 0, tzinfo=dt.UTC)
RS = OwnerRef(kind="ReplicaSet", name="web-7d", uid="rs-1", controller=True)
DS = OwnerRef(kind="DaemonSet", name="agent", uid="ds-1", controller=True)
EVICT = {"descheduler.alpha.kubernetes.io/evict": ""}
SAFE_FALSE = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
DO_NOT_DISRUPT = {"karpenter.sh/do-not-disrupt": "true"}


def pod(**changes: object) -> PodRecord:
    """A plain evictable pod: Running, owned by a ReplicaSet, started an hour ago; `changes` override fields."""
    base = PodRecord(namespace="app", name="web-1", uid="p-1", node_name="n1", phase="Running",
                     labels={"app": "web"}, owners=(RS,), start_time=NOW - dt.timedelta(hours=1))
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def snapshot(pods_by_owner: dict[str, list[PodRecord]] | None = None) -> Snapshot:
    return Snapshot(now=NOW, nodes={}, pods_by_node={}, pods_by_owner=pods_by_owner or {})


FAST_ONLY = EvictorArgs(ignore_pvc_pods=True, protected_storage_classes=("fast",))
CLAIMS = {"app/data-fast": "fast", "app/data-slow": "slow", "app/data-unset": ""}


@pytest.mark.parametrize(("claims", "expected"), [
    (("data-fast",), "PVC data-fast of protected storage class fast"),
    (("data-slow",), None),
    (("data-slow", "data-fast"), "PVC data-fast of protected storage class fast"),
    (("data-unset",), "PVC data-unset: storage class unknown (protectedStorageClasses)"),
    (("gone",), "PVC gone: storage class unknown (protectedStorageClasses)"),
    ((), None),  # an ephemeral volume only: descheduler looks up persistentVolumeClaim volumes' classes alone
], ids=["protected-class", "other-class", "any-claim-of-a-protected-class", "class-not-set", "claim-not-watched",
        "ephemeral-only"])
def test_protected_storage_classes_protect_only_pods_with_such_a_claim(claims: tuple[str, ...],
                                                                       expected: str | None) -> None:
    """descheduler's podProtections.config.PodsWithPVC.protectedStorageClasses: a class it cannot tell protects."""
    s = Snapshot(now=NOW, nodes={}, pods_by_node={}, pods_by_owner={}, claim_classes=CLAIMS)
    assert protection(pod(has_pvc=True, claims=claims), s, FAST_ONLY) == expected


def siblings(n: int) -> dict[str, list[PodRecord]]:
    return {RS.uid: [pod(name=f"web-{i}", uid=f"p-{i}") for i in range(n)]}


@pytest.mark.parametrize(("priority", "classes", "expected"), [
    (1000, {"high": 1000}, "priority 1000 >= threshold 1000"),
    (999, {"high": 1000}, None),
    (0, {}, "priorityThreshold.name high: no such PriorityClass"),
    (None, {}, None),
], ids=["at-named-threshold", "below-named-threshold", "missing-class-fails-closed", "no-priority-no-class"])
def test_a_named_priority_threshold_is_resolved_from_the_cluster(priority: int | None, classes: dict[str, int],
                                                                 expected: str | None) -> None:
    snap = dataclasses.replace(snapshot(), priority_classes=classes)
    assert protection(pod(priority=priority), snap, EvictorArgs(priority_threshold_name="high")) == expected


def test_a_plain_replicaset_pod_is_evictable() -> None:
    assert protection(pod(), snapshot(), EvictorArgs()) is None


@pytest.mark.parametrize(("the_pod", "args", "expected"), [
    (pod(annotations={"kubernetes.io/config.mirror": "abc"}), EvictorArgs(), "mirror pod"),
    (pod(annotations={"kubernetes.io/config.source": "file"}), EvictorArgs(), "static pod (source file)"),
    (pod(annotations={"kubernetes.io/config.source": "api"}), EvictorArgs(), None),
    (pod(terminating=True), EvictorArgs(), "terminating"),
    (pod(priority=SYSTEM_CRITICAL_PRIORITY), EvictorArgs(), "system-critical priority 2000000000"),
    (pod(priority=SYSTEM_CRITICAL_PRIORITY), EvictorArgs(evict_system_critical_pods=True), None),
    (pod(priority=SYSTEM_CRITICAL_PRIORITY - 1), EvictorArgs(), None),
    (pod(priority=None), EvictorArgs(priority_threshold=0), None),
    (pod(priority=1000), EvictorArgs(priority_threshold=1000), "priority 1000 >= threshold 1000"),
    (pod(priority=999), EvictorArgs(priority_threshold=1000), None),
    (pod(priority=5000), EvictorArgs(priority_threshold=1000, evict_system_critical_pods=True), None),
    (pod(priority=SYSTEM_CRITICAL_PRIORITY), EvictorArgs(priority_threshold=1000),
     "system-critical priority 2000000000"),
    (pod(owners=()), EvictorArgs(), "bare pod (no owner)"),
    (pod(owners=()), EvictorArgs(evict_failed_bare_pods=True), "bare pod (no owner)"),
    (pod(owners=(OwnerRef(kind="Whatever", name="x", uid="x"),)), EvictorArgs(), None),
    (pod(has_local_storage=True), EvictorArgs(), "local storage (emptyDir/hostPath)"),
    (pod(has_local_storage=True), EvictorArgs(evict_local_storage_pods=True), None),
    (pod(owners=(DS,)), EvictorArgs(), "DaemonSet pod"),
    (pod(owners=(DS,)), EvictorArgs(evict_daemonset_pods=True), None),
    (pod(owners=(RS, DS)), EvictorArgs(), "DaemonSet pod"),
    (pod(has_pvc=True), EvictorArgs(), None),
    (pod(has_pvc=True), EvictorArgs(ignore_pvc_pods=True), "uses a PVC (ignorePvcPods)"),
    (pod(), EvictorArgs(label_selector=LabelSelector(match_labels=(("app", "web"),))), None),
    (pod(), EvictorArgs(label_selector=LabelSelector(match_labels=(("app", "db"),))),
     "labels do not match labelSelector"),
    (pod(), EvictorArgs(label_selector=LabelSelector()), None),
    (pod(), EvictorArgs(namespaces=Namespaces(include=("app",))), None),
    (pod(), EvictorArgs(namespaces=Namespaces(include=("other",))), "namespace app not included"),
    (pod(), EvictorArgs(namespaces=Namespaces(exclude=("app",))), "namespace app excluded"),
    (pod(), EvictorArgs(namespaces=Namespaces(exclude=("kube-system",))), None),
    (pod(annotations=SAFE_FALSE), EvictorArgs(), "safe-to-evict=false"),
    (pod(annotations=SAFE_FALSE), EvictorArgs(honor_safe_to_evict=False), None),
    (pod(annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}), EvictorArgs(), None),
    (pod(annotations=DO_NOT_DISRUPT), EvictorArgs(), "karpenter.sh/do-not-disrupt=true"),
    (pod(annotations=DO_NOT_DISRUPT), EvictorArgs(honor_safe_to_evict=False), None),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "2h"}), EvictorArgs(),
     "karpenter.sh/do-not-disrupt=2h after start (age 1h0m0s)"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "30m"}), EvictorArgs(), None),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "2h"}, start_time=None), EvictorArgs(),
     "karpenter.sh/do-not-disrupt=2h and not started yet"),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "false"}), EvictorArgs(), None),
    (pod(annotations={"karpenter.sh/do-not-disrupt": "soon"}), EvictorArgs(), None),
], ids=["mirror", "static-file-source", "api-source-is-not-static", "terminating", "system-critical",
        "system-critical-allowed", "just-below-system-critical", "no-priority-passes-any-threshold",
        "at-threshold", "below-threshold", "threshold-ignored-when-critical-allowed",
        "system-critical-wins-over-threshold", "bare", "bare-running-stays-protected-with-failed-bare-allowed",
        "any-owner-kind-counts", "local-storage", "local-storage-allowed", "daemonset", "daemonset-allowed",
        "daemonset-among-owners", "pvc-by-default-evictable", "pvc-ignored", "label-selector-matches",
        "label-selector-misses", "empty-label-selector", "namespace-included", "namespace-not-included",
        "namespace-excluded", "other-namespace-excluded", "safe-to-evict-false", "safe-to-evict-not-honored",
        "safe-to-evict-true", "do-not-disrupt", "do-not-disrupt-not-honored", "do-not-disrupt-window-active",
        "do-not-disrupt-window-over", "do-not-disrupt-window-not-started", "do-not-disrupt-false",
        "do-not-disrupt-malformed-is-absent"])
def test_each_protection_follows_its_arg(the_pod: PodRecord, args: EvictorArgs, expected: str | None) -> None:
    assert protection(the_pod, snapshot(), args) == expected


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_terminal_pods_are_never_candidates_whatever_the_args(phase: str) -> None:
    permissive = EvictorArgs(evict_failed_bare_pods=True, evict_local_storage_pods=True)
    assert protection(pod(phase=phase, owners=(), annotations=EVICT), snapshot(), permissive) == (
        f"terminal phase {phase}")


@pytest.mark.parametrize(("count", "min_replicas", "owners", "expected"), [
    (1, 2, (RS,), "ReplicaSet/web-7d has 1 pods < minReplicas 2"),
    (2, 3, (RS,), "ReplicaSet/web-7d has 2 pods < minReplicas 3"),
    (3, 3, (RS,), None),
    (1, 1, (RS,), None),
    (0, 0, (RS,), None),
    (1, 3, (RS, OwnerRef(kind="Custom", name="c", uid="c-1")), None),
], ids=["one-of-two", "two-of-three", "enough", "min-one-is-off", "min-zero-is-off", "two-owners-not-counted"])
def test_min_replicas_protects_a_pod_whose_owner_has_too_few_pods(count: int, min_replicas: int,
                                                                  owners: tuple[OwnerRef, ...],
                                                                  expected: str | None) -> None:
    the_pod = pod(owners=owners)
    assert protection(the_pod, snapshot(siblings(count)), EvictorArgs(min_replicas=min_replicas)) == expected


@pytest.mark.parametrize(("started", "min_age", "expected"), [
    (NOW - dt.timedelta(minutes=10), dt.timedelta(minutes=5), None),
    (NOW - dt.timedelta(minutes=5), dt.timedelta(minutes=5), None),
    (NOW - dt.timedelta(seconds=30), dt.timedelta(minutes=5), "age 30s < minPodAge 5m0s"),
    (None, dt.timedelta(minutes=5), "not started yet (minPodAge 5m0s)"),
    (None, None, None),
    (NOW - dt.timedelta(seconds=1), None, None),
], ids=["old-enough", "exactly-min-age", "too-young", "never-started", "no-min-age-unstarted",
        "no-min-age-young"])
def test_min_pod_age_protects_young_and_unstarted_pods(started: dt.datetime | None, min_age: dt.timedelta | None,
                                                       expected: str | None) -> None:
    assert protection(pod(start_time=started), snapshot(), EvictorArgs(min_pod_age=min_age)) == expected


STRICT = EvictorArgs(ignore_pvc_pods=True, min_replicas=3, min_pod_age=dt.timedelta(minutes=5))


@pytest.mark.parametrize(("args", "expected"), [
    (STRICT, None),
    (dataclasses.replace(STRICT, label_selector=LabelSelector(match_expressions=(
        SelectorRequirement(key="app", operator="In", values=("db",)),))), "labels do not match labelSelector"),
    (dataclasses.replace(STRICT, namespaces=Namespaces(exclude=("app",))), "namespace app excluded"),
], ids=["skips-every-pod-check", "label-selector-still-applies", "namespaces-still-apply"])
def test_the_evict_annotation_overrides_every_pod_check_but_not_the_policy_scope(args: EvictorArgs,
                                                                                 expected: str | None) -> None:
    doomed = pod(annotations={**EVICT, **SAFE_FALSE, "kubernetes.io/config.mirror": "x"}, owners=(DS,),
                 priority=SYSTEM_CRITICAL_PRIORITY, terminating=True, has_local_storage=True, has_pvc=True,
                 start_time=None)
    assert protection(doomed, snapshot(siblings(1)), args) == expected


def test_every_failing_check_is_reported_in_filter_order() -> None:
    the_pod = pod(owners=(), priority=SYSTEM_CRITICAL_PRIORITY + 5, has_local_storage=True, has_pvc=True,
                  terminating=True, start_time=None, annotations=SAFE_FALSE, namespace="kube-system")
    args = dataclasses.replace(STRICT, namespaces=Namespaces(exclude=("kube-system",)))
    assert protection(the_pod, snapshot(), args) == "; ".join([
        "terminating", "system-critical priority 2000000005", "bare pod (no owner)",
        "local storage (emptyDir/hostPath)", "uses a PVC (ignorePvcPods)", "namespace kube-system excluded",
        "not started yet (minPodAge 5m0s)", "safe-to-evict=false"])


def test_min_replicas_and_min_pod_age_reasons_are_joined() -> None:
    young = pod(start_time=NOW - dt.timedelta(seconds=10))
    assert protection(young, snapshot(siblings(2)), STRICT) == (
        "ReplicaSet/web-7d has 2 pods < minReplicas 3; age 10s < minPodAge 5m0s")
