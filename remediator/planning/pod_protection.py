"""descheduler's DefaultEvictor `Filter`: may this pod be evicted at all, and if not, why not.

The checks and their order follow descheduler (see docs/reference descheduler.md §2). Like descheduler, every
failing check is reported, not just the first, so an operator sees all the reasons a pod is protected at once.

nodemedic differs in two places, both on purpose:
* terminal pods (Succeeded/Failed) are candidates only for the strategies descheduler lists them for
  (RemoveFailedPods, PodLifeTime, RemovePodsHavingTooManyRestarts: `terminal=True`). descheduler drops them when
  the other strategies list pods; here the filter says so itself, so callers cannot forget.
* `honor_safe_to_evict`: the node autoscalers' own pod opt-outs protect the pod too: cluster-autoscaler's
  `safe-to-evict: "false"` and Karpenter's `karpenter.sh/do-not-disrupt` ("true", or a duration after the pod
  started, read as Karpenter reads it: a malformed value protects nothing). The explicit descheduler evict
  annotation still wins over them: an owner who wrote "evict me" asked for exactly that, and only the namespace
  and labelSelector filters (which scope the policy, not the pod) still apply.
"""

from __future__ import annotations

import datetime as dt

from nodemedic_common.durations import format_duration, parse_duration, whole_seconds
from remediator.model.records import TERMINAL_PHASES, PodRecord
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.fields import Namespaces
from remediator.scheduling.selectors import matches_labels
from remediator.state.snapshot import Snapshot

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
EVICT_ANNOTATION = "descheduler.alpha.kubernetes.io/evict"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
CONFIG_SOURCE_ANNOTATION = "kubernetes.io/config.source"
SAFE_TO_EVICT_ANNOTATION = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DO_NOT_DISRUPT_ANNOTATION = "karpenter.sh/do-not-disrupt"


def _scope_reasons(pod: PodRecord, args: EvictorArgs) -> list[str]:
    """The policy's own scope (labelSelector, namespaces): applies even to pods that ask to be evicted."""
    reasons: list[str] = []
    if args.label_selector is not None and not matches_labels(args.label_selector, pod.labels):
        reasons.append("labels do not match labelSelector")
    reasons.extend(_namespace_reasons(pod.namespace, args.namespaces))
    return reasons


def _namespace_reasons(namespace: str, namespaces: Namespaces) -> list[str]:
    if namespaces.include and namespace not in namespaces.include:
        return [f"namespace {namespace} not included"]
    if namespace in namespaces.exclude:
        return [f"namespace {namespace} excluded"]
    return []


def _priority_reason(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs) -> str | None:
    if args.evict_system_critical_pods or pod.priority is None:
        return None
    if pod.priority >= SYSTEM_CRITICAL_PRIORITY:
        return f"system-critical priority {pod.priority}"
    threshold = args.priority_threshold
    if args.priority_threshold_name:
        threshold = snapshot.priority_classes.get(args.priority_threshold_name)
        if threshold is None:
            # descheduler refuses to start without the class; a running controller must not guess a value
            # either, so every pod with a priority stays put until the class exists.
            return f"priorityThreshold.name {args.priority_threshold_name}: no such PriorityClass"
    if threshold is not None and pod.priority >= threshold:
        return f"priority {pod.priority} >= threshold {threshold}"
    return None


def _bare_pod_reason(pod: PodRecord, args: EvictorArgs) -> str | None:
    # Any owner kind counts, as in descheduler; with evictFailedBarePods a Failed bare pod may go.
    if pod.owners or (args.evict_failed_bare_pods and pod.phase == "Failed"):
        return None
    return "bare pod (no owner)"


def _min_replicas_reason(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs) -> str | None:
    # descheduler only counts siblings for a pod with exactly one owner; several owners are ambiguous.
    if args.min_replicas <= 1 or len(pod.owners) != 1:
        return None
    owner = pod.owners[0]
    replicas = len(snapshot.pods_by_owner.get(owner.uid, ()))
    if replicas < args.min_replicas:
        return f"{owner.kind}/{owner.name} has {replicas} pods < minReplicas {args.min_replicas}"
    return None


def _min_age_reason(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs) -> str | None:
    if args.min_pod_age is None:
        return None
    if pod.start_time is None:
        return f"not started yet (minPodAge {format_duration(args.min_pod_age)})"
    age = snapshot.now - pod.start_time
    if age < args.min_pod_age:
        return f"age {format_duration(whole_seconds(age))} < minPodAge {format_duration(args.min_pod_age)}"
    return None


def _do_not_disrupt_reason(pod: PodRecord, snapshot: Snapshot) -> str | None:
    value = pod.annotations.get(DO_NOT_DISRUPT_ANNOTATION)
    if value is None:
        return None
    if value == "true":
        return f"{DO_NOT_DISRUPT_ANNOTATION}=true"
    try:
        window = parse_duration(value)
    except ValueError:
        return None  # Karpenter too treats a malformed value as absent (and says so in an Event)
    if window <= dt.timedelta(0):
        return None
    if pod.start_time is None:
        return f"{DO_NOT_DISRUPT_ANNOTATION}={value} and not started yet"
    age = snapshot.now - pod.start_time
    if age < window:
        return f"{DO_NOT_DISRUPT_ANNOTATION}={value} after start (age {format_duration(whole_seconds(age))})"
    return None


def _pvc_reason(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs) -> str | None:
    if not args.ignore_pvc_pods or not pod.has_pvc:
        return None
    if not args.protected_storage_classes:
        return "uses a PVC (ignorePvcPods)"
    for claim in pod.claims:
        storage_class = snapshot.claim_classes.get(f"{pod.namespace}/{claim}", "")
        if not storage_class:  # as descheduler: a class it cannot tell protects the pod
            return f"PVC {claim}: storage class unknown (protectedStorageClasses)"
        if storage_class in args.protected_storage_classes:
            return f"PVC {claim} of protected storage class {storage_class}"
    return None


def _filter_reasons(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs) -> list[str]:
    """Every descheduler Filter check after the evict override, in descheduler's order, plus safe-to-evict."""
    annotations = pod.annotations
    source = annotations.get(CONFIG_SOURCE_ANNOTATION)
    checks: list[str | None] = [
        "mirror pod" if MIRROR_ANNOTATION in annotations else None,
        f"static pod (source {source})" if source is not None and source != "api" else None,
        "terminating" if pod.terminating else None,
        _priority_reason(pod, snapshot, args),
        _bare_pod_reason(pod, args),
        "local storage (emptyDir/hostPath)" if pod.has_local_storage and not args.evict_local_storage_pods else None,
        ("DaemonSet pod" if not args.evict_daemonset_pods and any(o.kind == "DaemonSet" for o in pod.owners)
         else None),
        _pvc_reason(pod, snapshot, args),
    ]
    reasons = [c for c in checks if c is not None]
    reasons.extend(_scope_reasons(pod, args))
    reasons.extend(r for r in (_min_replicas_reason(pod, snapshot, args), _min_age_reason(pod, snapshot, args))
                   if r is not None)
    if args.honor_safe_to_evict:
        if annotations.get(SAFE_TO_EVICT_ANNOTATION) == "false":
            reasons.append("safe-to-evict=false")
        do_not_disrupt = _do_not_disrupt_reason(pod, snapshot)
        if do_not_disrupt is not None:
            reasons.append(do_not_disrupt)
    return reasons


def protection(pod: PodRecord, snapshot: Snapshot, args: EvictorArgs, *, terminal: bool = False) -> str | None:
    """None when the DefaultEvictor filter lets `pod` be evicted, else every reason it does not, joined by "; ".
    `terminal`: the asking strategy may evict Succeeded/Failed pods (see the module docstring)."""
    if pod.phase in TERMINAL_PHASES and not terminal:
        return f"terminal phase {pod.phase}"
    if EVICT_ANNOTATION in pod.annotations:
        # The owner asked for eviction: only the policy's own scope still applies (see the module docstring).
        return "; ".join(_scope_reasons(pod, args)) or None
    return "; ".join(_filter_reasons(pod, snapshot, args)) or None
