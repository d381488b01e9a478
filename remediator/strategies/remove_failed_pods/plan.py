"""RemoveFailedPods: evict (delete through the Eviction API) pods in phase Failed.

descheduler's algorithm (`removefailedpods/failedpods.go`): over Ready nodes, the pods in scope with phase Failed
that are at least `minPodLifetimeSeconds` old (from creationTimestamp; default 3600), have no owner of an
`excludeOwnerKinds` kind, and, when given, match one of `reasons` (a container's waiting or terminated reason, the
pod's status reason, init containers' with `includingInitContainers`) and one of `exitCodes` (a terminated
container's exit code, init containers' likewise). The DefaultEvictor still applies: a bare Failed pod is protected
unless `evictFailedBarePods`. A Failed pod needs no destination, so the gate asks no node fit for it (DS-TERM-1).
"""

from __future__ import annotations

from collections.abc import Iterator

from remediator.model.plan import PlannedEviction
from remediator.model.records import PodRecord
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_scope import ready_nodes
from remediator.strategies.remove_failed_pods.args import RemoveFailedPodsArgs

NAME = "RemoveFailedPods"
KIND = "deschedule"


def _reason(pod: PodRecord, args: RemoveFailedPodsArgs, snapshot: Snapshot) -> str | None:
    if pod.created is None:
        return None
    age = int((snapshot.now - pod.created).total_seconds())
    if age < args.min_pod_lifetime_seconds:
        return None
    if any(o.kind in args.exclude_owner_kinds for o in pod.owners):
        return None
    groups = (pod.containers, pod.init_containers) if args.including_init_containers else (pod.containers,)
    parts = [f"Failed for a pod {age}s old"]
    if args.reasons:
        reasons = [r for c in groups for r in (*c.waiting, *c.terminated)] + ([pod.reason] if pod.reason else [])
        hit = next((r for r in reasons if r in args.reasons), None)
        if hit is None:
            return None
        parts.append(f"reason {hit}")
    if args.exit_codes:
        code = next((x for c in groups for x in c.exit_codes if x in args.exit_codes), None)
        if code is None:
            return None
        parts.append(f"exit code {code}")
    return "; ".join(parts)


def candidates(snapshot: Snapshot, args: RemoveFailedPodsArgs) -> Iterator[PlannedEviction]:
    notable = snapshot.notable()  # terminal pods are among the notable ones
    for node in ready_nodes(snapshot):
        failed = [p for p in notable.statuses.get(node.name, ()) if p.phase == "Failed"]
        for pod in sorted(failed, key=lambda p: (p.namespace, p.name)):
            if args.scope.selects(pod) and (reason := _reason(pod, args, snapshot)):
                yield PlannedEviction(pod, NAME, reason)
