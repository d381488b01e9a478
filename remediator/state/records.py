"""API JSON (as the API server or `kubectl get -o json` prints it) → the slim records of `model/records.py`.

Shared by the watch caches and by `plan --snapshot`. Defensive on purpose: a field of the wrong type
yields a default, never an exception, so one odd object cannot stop a remediation cycle.
"""

from __future__ import annotations

import datetime as dt
import functools
import sys
from typing import Any

from remediator.model.records import (
    EARLIEST_TIME,
    LATEST_TIME,
    NO_STATUSES,
    Condition,
    ContainerStatuses,
    Effect,
    NodeRecord,
    OwnerRef,
    PdbRecord,
    PodCondition,
    PodRecord,
    Taint,
    Toleration,
    usable_time,
)
from remediator.state.json_values import as_dict, as_list, str_map
from remediator.state.pod_constraints import label_selector, pod_constraints
from remediator.state.quantity import resources
from remediator.state.sharing import SIZE, Shared, SharedMaps


def parse_time(value: Any) -> dt.datetime | None:
    """An API time, or None when absent or unusable (model.usable_time; `time_problem` says why)."""
    if not isinstance(value, str) or not value:
        return None
    return _parsed_time(value)


@functools.lru_cache(maxsize=4096)  # pods created in one second share their times (sharing.py)
def _parsed_time(value: str) -> dt.datetime | None:
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if usable_time(parsed) else None


def time_problem(value: Any) -> str | None:
    """Why `parse_time` treats a time that is present as unknown, or None when it is absent or usable."""
    if value is None or value == "" or parse_time(value) is not None:
        return None
    if not isinstance(value, str):
        return f"not a string: {value!r:.60}"
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return f"not an RFC 3339 time: {value!r:.60}"
    if parsed.tzinfo is None:
        return f"{value!r:.60} has no UTC offset"
    return f"{value!r:.60} is outside {EARLIEST_TIME:%Y-%m-%d}..{LATEST_TIME:%Y-%m-%d}"


def unusable_times(obj: Any) -> list[str]:
    """'<field>: <problem>' for each time of a Node or Pod that its record keeps as unknown (a Node's condition
    times and creationTimestamp; a Pod's creationTimestamp, startTime and condition times): what to tell the
    user, once, about an object whose times planning cannot use."""
    if not isinstance(obj, dict):
        return []
    meta, status = as_dict(obj.get("metadata")), as_dict(obj.get("status"))
    fields: list[tuple[str, Any]] = [("metadata.creationTimestamp", meta.get("creationTimestamp")),
                                     ("status.startTime", status.get("startTime"))]
    for i, c in enumerate(as_list(status.get("conditions"))):
        fields.append((f"status.conditions[{i}].lastTransitionTime", as_dict(c).get("lastTransitionTime")))
    return [f"{where}: {why}" for where, value in fields if (why := time_problem(value)) is not None]


def taint(raw: dict[str, Any]) -> Taint | None:
    try:
        effect = Effect(raw.get("effect", ""))
    except ValueError:
        return None
    return Taint(key=str(raw.get("key", "")), value=str(raw.get("value", "") or ""), effect=effect)


def taints(raw: Any) -> tuple[Taint, ...]:
    return tuple(t for t in (taint(as_dict(x)) for x in as_list(raw)) if t is not None)


def node(obj: dict[str, Any]) -> NodeRecord:
    meta, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    conditions = tuple(
        Condition(
            type=str(c.get("type", "")),
            status=str(c.get("status", "")),
            last_transition=parse_time(c.get("lastTransitionTime")),
            reason=str(c.get("reason", "") or ""),
            message=str(c.get("message", "") or ""),
            heartbeat=parse_time(c.get("lastHeartbeatTime")),
        )
        for c in map(as_dict, as_list(status.get("conditions")))
    )
    return NodeRecord(
        name=str(meta.get("name", "")),
        labels=str_map(meta.get("labels")),
        annotations=str_map(meta.get("annotations")),
        taints=taints(spec.get("taints")),
        unschedulable=bool(spec.get("unschedulable", False)),
        conditions=conditions,
        allocatable=resources(as_dict(status.get("allocatable"))),
        created=parse_time(meta.get("creationTimestamp")),
        deleting=meta.get("deletionTimestamp") is not None,
        resource_version=str(meta.get("resourceVersion", "")),
        claim=node_claim(meta.get("ownerReferences")),
    )


def node_claim(raw: Any) -> str:
    """The name of the Karpenter NodeClaim among a Node's ownerReferences (Karpenter sets it at registration)."""
    for ref in map(as_dict, as_list(raw)):
        if ref.get("kind") == "NodeClaim" and str(ref.get("apiVersion", "")).startswith("karpenter.sh/"):
            return str(ref.get("name", "") or "")
    return ""


def _qos(containers: list[dict[str, Any]]) -> str:
    """Pod QoS class from container requests/limits (cpu and memory), as the kubelet computes it."""
    any_set, guaranteed = False, bool(containers)
    for c in containers:
        res = as_dict(c.get("resources"))
        req, lim = as_dict(res.get("requests")), as_dict(res.get("limits"))
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod_requests(spec: dict[str, Any]) -> dict[str, int]:
    """Effective requests: max(sum of app containers, largest init container) per resource, plus overhead."""
    total: dict[str, int] = {}
    for c in map(as_dict, as_list(spec.get("containers"))):
        for k, v in resources(as_dict(as_dict(c.get("resources")).get("requests"))).items():
            total[k] = total.get(k, 0) + v
    for c in map(as_dict, as_list(spec.get("initContainers"))):
        for k, v in resources(as_dict(as_dict(c.get("resources")).get("requests"))).items():
            total[k] = max(total.get(k, 0), v)
    for k, v in resources(as_dict(spec.get("overhead"))).items():
        total[k] = total.get(k, 0) + v
    return total


def container_statuses(raw: Any) -> ContainerStatuses:
    """Restart counts, state reasons and exit codes of one list of container statuses; the shared empty value when
    there is nothing to say (a healthy pod), so the cache keeps no per-pod object for it."""
    if not raw:  # most pods: no init or ephemeral containers
        return NO_STATUSES
    restarts = 0
    waiting: list[str] = []
    terminated: list[str] = []
    codes: list[int] = []
    for cs in map(as_dict, as_list(raw)):
        count = cs.get("restartCount")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            restarts += count
        state = as_dict(cs.get("state"))
        reason = as_dict(state.get("waiting")).get("reason")
        if isinstance(reason, str) and reason:
            waiting.append(reason)
        if isinstance(state.get("terminated"), dict):
            ended = state["terminated"]
            if isinstance(ended.get("reason"), str) and ended["reason"]:
                terminated.append(ended["reason"])
            code = ended.get("exitCode")
            if isinstance(code, int) and not isinstance(code, bool):
                codes.append(code)
    if not (restarts or waiting or terminated or codes):
        return NO_STATUSES
    return ContainerStatuses(restarts, tuple(waiting), tuple(terminated), tuple(codes))


# Most running pods have the same five conditions a few seconds after their creation: in bench-plan's cluster 135,000
# pods hold 4,544 distinct lists (most of them of the 3 % that restarted) and 9,091 condition objects instead of
# 675,000. The other tables: what a workload's replicas have in common (sharing.py).
_LABELS, _ANNOTATIONS, _NODE_SELECTOR = SharedMaps[str](), SharedMaps[str](), SharedMaps[str]()
SHARED_ANNOTATIONS = 1024  # characters of annotation values at most, for a pod's annotations to be shared
_REQUESTS = SharedMaps[int]()
_IMAGES = Shared[tuple[str, ...]]()


def pod_conditions(raw: Any, created: dt.datetime | None) -> tuple[PodCondition, ...]:
    """status.conditions, each transition time as seconds after `created` (see PodCondition)."""
    fields = []
    for c in map(as_dict, as_list(raw)):
        since = c.get("lastTransitionTime")
        fields.append((str(c.get("type", "") or ""), str(c.get("status", "") or ""), str(c.get("reason", "") or ""),
                       since if isinstance(since, str) else None))
    return _timed_conditions(tuple(fields), created) if fields else ()


# Looked up by the conditions' own text and the pod's creation time, before any time is parsed: most pods of a cluster
# share both with many others (pods created in one second, their conditions a few seconds after).
@functools.lru_cache(maxsize=SIZE)
def _timed_conditions(fields: tuple[tuple[str, str, str, str | None], ...],
                      created: dt.datetime | None) -> tuple[PodCondition, ...]:
    timed = []
    for kind, status, reason, stamp in fields:
        since = parse_time(stamp)
        after = None if since is None or created is None else int((since - created).total_seconds())
        timed.append((kind, status, reason, after))
    return _conditions(tuple(timed))


# The shared values found by their fields before any record is built: a pod has five conditions and two tolerations,
# and building them to look them up was 0.3 s of 15,000 pods (issue 43's one-shot ratio).
@functools.lru_cache(maxsize=SIZE)
def _conditions(fields: tuple[tuple[str, str, str, int | None], ...]) -> tuple[PodCondition, ...]:
    return tuple(_condition(*f) for f in fields)


@functools.lru_cache(maxsize=SIZE)
def _condition(kind: str, status: str, reason: str, after: int | None) -> PodCondition:
    return PodCondition(type=kind, status=status, reason=reason, seconds_after_created=after)


@functools.lru_cache(maxsize=SIZE)
def _owners(fields: tuple[tuple[str, str, str, bool], ...]) -> tuple[OwnerRef, ...]:
    return tuple(OwnerRef(kind=k, name=n, uid=u, controller=c) for k, n, u, c in fields)


@functools.lru_cache(maxsize=SIZE)
def _tolerations(fields: tuple[tuple[str, str, str, str], ...]) -> tuple[Toleration, ...]:
    return tuple(Toleration(key=k, operator=o, value=v, effect=e) for k, o, v, e in fields)


def _annotations(raw: Any) -> dict[str, str]:
    """Shared while small: one annotation may hold up to 256 KiB (kubectl's last-applied-configuration), and a table
    keeps its last SIZE values alive after their pods are gone."""
    annotations = str_map(raw)
    return _ANNOTATIONS(annotations) if sum(map(len, annotations.values())) <= SHARED_ANNOTATIONS else annotations


def pod(obj: dict[str, Any]) -> PodRecord:
    """One pod's record; what it has in common with other pods is the object they hold (sharing.py)."""
    meta, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    labels = _LABELS(str_map(meta.get("labels")))
    namespace = sys.intern(str(meta.get("namespace", "")))
    volumes = list(map(as_dict, as_list(spec.get("volumes"))))
    constraints = pod_constraints(spec, labels, namespace)
    priority = spec.get("priority")
    scheduled = next((c for c in map(as_dict, as_list(status.get("conditions")))
                      if c.get("type") == "PodScheduled"), {})
    refused = scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable"
    created = parse_time(meta.get("creationTimestamp"))
    containers = list(map(as_dict, as_list(spec.get("containers"))))
    return PodRecord(
        namespace=namespace,
        name=str(meta.get("name", "")),
        # The API always sets a uid; a hand-written snapshot may not, and pods sharing "" would share one identity
        # in every per-pod book (an eviction of one would count as a move of all).
        uid=str(meta.get("uid") or (f"{meta.get('namespace', '')}/{meta['name']}" if meta.get("name") else "")),
        node_name=sys.intern(str(spec.get("nodeName", "") or "")),
        phase=sys.intern(str(status.get("phase", "Pending") or "Pending")),
        labels=labels,
        annotations=_annotations(meta.get("annotations")),
        owners=_owners(tuple(
            (str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")), bool(o.get("controller", False)))
            for o in map(as_dict, as_list(meta.get("ownerReferences")))
        )),
        priority=priority if isinstance(priority, int) else None,
        priority_class=sys.intern(str(spec.get("priorityClassName", "") or "")),
        scheduler_name=sys.intern(str(spec.get("schedulerName") or "default-scheduler")),
        tolerations=_tolerations(tuple(
            (str(t.get("key", "") or ""), str(t.get("operator", "") or "Equal"), str(t.get("value", "") or ""),
             str(t.get("effect", "") or ""))
            for t in map(as_dict, as_list(spec.get("tolerations")))
        )),
        node_selector=_NODE_SELECTOR(str_map(spec.get("nodeSelector"))),
        required_node_affinity=constraints.required_node,
        preferred_node_affinity=constraints.preferred_node,
        required_anti_affinity=constraints.anti_affinity,
        required_affinity=constraints.affinity,
        hard_spread=constraints.hard_spread,
        soft_spread=constraints.soft_spread,
        requests=_REQUESTS(_pod_requests(spec)),
        images=_IMAGES(tuple(sorted(str(c.get("image", "")) for c in containers))),
        qos=sys.intern(str(status.get("qosClass") or _qos(containers))),
        has_local_storage=any("emptyDir" in v or "hostPath" in v for v in volumes),
        has_pvc=any("persistentVolumeClaim" in v or "ephemeral" in v for v in volumes),
        claims=tuple(sorted(str(as_dict(v["persistentVolumeClaim"]).get("claimName", "")) for v in volumes
                            if "persistentVolumeClaim" in v)),
        terminating=meta.get("deletionTimestamp") is not None,
        start_time=parse_time(status.get("startTime")),
        created=created,
        reason=sys.intern(str(status.get("reason", "") or "")),
        containers=container_statuses(status.get("containerStatuses")),
        init_containers=container_statuses(status.get("initContainerStatuses")),
        ephemeral_containers=container_statuses(status.get("ephemeralContainerStatuses")),
        conditions=pod_conditions(status.get("conditions"), created),
        unschedulable=str(scheduled.get("message") or "Unschedulable") if refused else "",
    )


def priority_class(obj: dict[str, Any]) -> tuple[str, int] | None:
    """(name, value) of a PriorityClass; None when the object has no usable value."""
    name, value = as_dict(obj.get("metadata")).get("name"), obj.get("value")
    if not isinstance(name, str) or not name or not isinstance(value, int) or isinstance(value, bool):
        return None
    return name, value


def claim_class(obj: dict[str, Any]) -> tuple[str, str]:
    """("ns/name", storageClassName or "") of a PersistentVolumeClaim."""
    meta = as_dict(obj.get("metadata"))
    storage_class = as_dict(obj.get("spec")).get("storageClassName")
    return (f"{meta.get('namespace', '')}/{meta.get('name', '')}",
            storage_class if isinstance(storage_class, str) else "")


def pdb(obj: dict[str, Any]) -> PdbRecord:
    meta, spec, status = as_dict(obj.get("metadata")), as_dict(obj.get("spec")), as_dict(obj.get("status"))
    allowed = status.get("disruptionsAllowed", 0)
    return PdbRecord(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        selector=label_selector(spec.get("selector")),
        disruptions_allowed=allowed if isinstance(allowed, int) else 0,
    )
