"""The `evictor` section: descheduler's DefaultEvictor arguments, which every strategy's evictions go through."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.model.records import LabelSelector
from remediator.policy.fields import Namespaces, read_label_selector, read_namespaces
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT32, dns_subdomain_problem

_EVICTOR_KEYS = ("evictLocalStoragePods", "evictDaemonSetPods", "evictSystemCriticalPods", "evictFailedBarePods",
                 "ignorePvcPods", "priorityThreshold", "labelSelector", "namespaces", "minReplicas", "minPodAge",
                 "nodeFit", "honorSafeToEvict", "protectedStorageClasses")


@dataclass(frozen=True)
class EvictorArgs:
    """descheduler's DefaultEvictor arguments, same names and semantics (see docs/remediator.md)."""

    evict_local_storage_pods: bool = False
    evict_daemonset_pods: bool = False
    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    ignore_pvc_pods: bool = False
    # With ignorePvcPods: protect only pods with a PVC of one of these storage classes (descheduler's
    # podProtections.config.PodsWithPVC.protectedStorageClasses); empty: every pod with a PVC.
    protected_storage_classes: tuple[str, ...] = ()
    priority_threshold: int | None = None  # value; None = system-critical (2e9) as in descheduler
    priority_threshold_name: str = ""  # a PriorityClass name, resolved each cycle from the watched PriorityClasses
    label_selector: LabelSelector | None = None
    namespaces: Namespaces = Namespaces()
    min_replicas: int = 0
    min_pod_age: dt.timedelta | None = None
    # descheduler defaults nodeFit to false; nodemedic to true: never evict a pod that has nowhere to go.
    node_fit: bool = True
    honor_safe_to_evict: bool = True  # cluster-autoscaler.kubernetes.io/safe-to-evict: "false" protects


def read_evictor(r: Reader, top: Section) -> EvictorArgs:
    m = r.section(top, "evictor", _EVICTOR_KEYS)
    d = EvictorArgs()
    p = r.section(m, "priorityThreshold", ("value", "name"))
    threshold = r.optional_integer(p, "value", d.priority_threshold, minimum=INT32[0], maximum=INT32[1])
    threshold_name = r.text(p, "name", d.priority_threshold_name,
                            check=lambda s: dns_subdomain_problem(s, "PriorityClass name"))
    if "value" in p.values and "name" in p.values:
        r.error(p.where(), p.path, "value and name are mutually exclusive; give one of them")
    ignore_pvc_pods = r.flag(m, "ignorePvcPods", d.ignore_pvc_pods)
    classes = r.strings(m, "protectedStorageClasses", lambda s: None if s else "must not be empty") or ()
    if classes and not ignore_pvc_pods:
        r.error(m.values["protectedStorageClasses"], m.at("protectedStorageClasses"),
                "needs ignorePvcPods: true (it narrows which pods with a PVC are protected)")
    return EvictorArgs(
        evict_local_storage_pods=r.flag(m, "evictLocalStoragePods", d.evict_local_storage_pods),
        evict_daemonset_pods=r.flag(m, "evictDaemonSetPods", d.evict_daemonset_pods),
        evict_system_critical_pods=r.flag(m, "evictSystemCriticalPods", d.evict_system_critical_pods),
        evict_failed_bare_pods=r.flag(m, "evictFailedBarePods", d.evict_failed_bare_pods),
        ignore_pvc_pods=ignore_pvc_pods,
        protected_storage_classes=classes,
        priority_threshold=threshold,
        priority_threshold_name=threshold_name,
        label_selector=read_label_selector(r, m),
        namespaces=read_namespaces(r, m),
        min_replicas=r.integer(m, "minReplicas", d.min_replicas),
        min_pod_age=r.optional_duration(m, "minPodAge", d.min_pod_age),
        node_fit=r.flag(m, "nodeFit", d.node_fit),
        honor_safe_to_evict=r.flag(m, "honorSafeToEvict", d.honor_safe_to_evict),
    )
