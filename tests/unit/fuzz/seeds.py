"""A small cluster as `kubectl get nodes,pods,pdb,priorityclasses -A -o json` prints it: the seed the snapshot fuzz
mutates, and the cluster every fuzzed policy is planned against. It has something for every strategy to do: a node
whose KernelDeadlock condition has held for an hour (and the taint nodemedic owns for it), a hot node, idle nodes, a
PDB, a DaemonSet pod, a bare pod, a PriorityClass."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
HOUR_AGO = "2026-01-01T11:00:00Z"
OWNED = json.dumps([{"key": "nodemedic.io/kernel-deadlock", "value": "true", "effect": "NoSchedule",
                     "rules": ["kernel-deadlock"], "cause": "KernelDeadlock=True", "since": HOUR_AGO}])


def _node(name: str, zone: str, *, sick: bool = False) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": HOUR_AGO}]
    if sick:
        conditions.append({"type": "KernelDeadlock", "status": "True", "reason": "TaskHung",
                           "lastTransitionTime": HOUR_AGO})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone},
                         "annotations": {"nodemedic.io/owned-taints": OWNED} if sick else {},
                         "creationTimestamp": "2025-12-01T00:00:00Z", "resourceVersion": "10"},
            "spec": {"taints": [{"key": "nodemedic.io/kernel-deadlock", "value": "true", "effect": "NoSchedule"}]
                     if sick else []},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "conditions": conditions}}


def _pod(name: str, node: str, cpu: str, *, owner: str | None = "ReplicaSet", app: str = "web",
         **spec: Any) -> dict[str, Any]:
    owners = [{"apiVersion": "apps/v1", "kind": owner, "name": f"{app}-{owner.lower()}", "uid": f"uid-{app}-{owner}",
               "controller": True}] if owner else []
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "uid": f"uid-{name}", "labels": {"app": app},
                         "ownerReferences": owners, "creationTimestamp": "2025-12-31T00:00:00Z"},
            "spec": {"nodeName": node, "priority": 0,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}],
                     **spec},
            "status": {"phase": "Running", "startTime": "2025-12-31T00:00:05Z"}}


CLUSTER: dict[str, Any] = {"apiVersion": "v1", "kind": "List", "items": [
    _node("sick", "a", sick=True), _node("hot", "a"), _node("idle-1", "b"), _node("idle-2", "c"),
    _pod("s1", "sick", "500m"), _pod("s2", "sick", "250m", app="api"),
    _pod("ds", "sick", "50m", owner="DaemonSet", app="agent"), _pod("bare", "sick", "50m", owner=None, app="bare"),
    *[_pod(f"h{i}", "hot", "600m", app=f"batch{i % 2}") for i in range(6)],
    _pod("i1", "idle-1", "100m", app="api"),
    _pod("t1", "idle-2", "100m", app="web", tolerations=[{"key": "nodemedic.io/kernel-deadlock", "operator": "Exists"}],
         topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                     "whenUnsatisfiable": "ScheduleAnyway",
                                     "labelSelector": {"matchLabels": {"app": "web"}}}]),
    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "api", "namespace": "shop"},
     "spec": {"selector": {"matchLabels": {"app": "api"}}}, "status": {"disruptionsAllowed": 1}},
    {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
]}
