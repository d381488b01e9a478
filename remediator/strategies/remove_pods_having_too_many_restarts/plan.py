"""RemovePodsHavingTooManyRestarts: evict pods whose containers restarted `podRestartThreshold` times or more.

descheduler's algorithm (`removepodshavingtoomanyrestarts/toomanyrestarts.go`): over Ready nodes, every pod in
scope (terminal ones too: descheduler lists all pods here), restarts summed over the containers (and the init
containers with `includingInitContainers`); with `states`, the pod's phase or a container's waiting reason (init
containers' with `includingInitContainers`) must be listed. Per node, most restarts first.

nodemedic does more (DS-RST-1): a workload whose pods restart on one node while its pods on every other node run
without restarts points at that node, not at the workload, and no check of the agent sees it. The strategy then
reports a `CrashLoopNode` naming the node (report.py: an Event on the Node and the metric `nodemedic_crash_loop_node`),
besides the evictions themselves.
"""

from __future__ import annotations

from collections.abc import Iterator

from remediator.model.plan import PlannedEviction
from remediator.model.records import OwnerRef, PodRecord
from remediator.planning.gate import Gate
from remediator.planning.wants import Wants
from remediator.state.snapshot import Snapshot
from remediator.strategies.pod_scope import ready_nodes
from remediator.strategies.remove_pods_having_too_many_restarts.args import RemovePodsHavingTooManyRestartsArgs
from remediator.strategies.remove_pods_having_too_many_restarts.report import CrashLoopNode, CrashLoopNodes

NAME = "RemovePodsHavingTooManyRestarts"
KIND = "deschedule"
# One restarting replica on a node says little (a bad pod, bad luck); two or more, there and nowhere else, is the
# node's doing.
MIN_RESTARTING = 2


def restarts(pod: PodRecord, including_init_containers: bool) -> int:
    return pod.containers.restarts + (pod.init_containers.restarts if including_init_containers else 0)


def _in_state(pod: PodRecord, args: RemovePodsHavingTooManyRestartsArgs) -> bool:
    if not args.states or pod.phase in args.states:
        return True
    waiting = pod.containers.waiting + (pod.init_containers.waiting if args.including_init_containers else ())
    return any(w in args.states for w in waiting)


def restarting(pod: PodRecord, args: RemovePodsHavingTooManyRestartsArgs) -> bool:
    return restarts(pod, args.including_init_containers) >= args.pod_restart_threshold and _in_state(pod, args)


def plan(snapshot: Snapshot, args: RemovePodsHavingTooManyRestartsArgs, gate: Gate) -> Wants:
    found: list[CrashLoopNode] = []
    for c in candidates(snapshot, args):
        if isinstance(c, CrashLoopNode):
            found.append(c)
        else:
            gate.admit(c)
    return Wants(report=CrashLoopNodes(tuple(found)))


def candidates(snapshot: Snapshot, args: RemovePodsHavingTooManyRestartsArgs
               ) -> Iterator[PlannedEviction | CrashLoopNode]:
    notable = snapshot.notable()  # a pod without container statuses to speak of has no restarts
    for node in ready_nodes(snapshot):
        found = [p for p in notable.statuses.get(node.name, ()) if restarting(p, args) and args.scope.selects(p)]
        if not found:
            continue
        yield from _crash_loop_nodes(snapshot, node.name, found, args)
        found.sort(key=lambda p: (-restarts(p, args.including_init_containers), p.namespace, p.name))
        for pod in found:
            count = restarts(pod, args.including_init_containers)
            yield PlannedEviction(pod, NAME, f"{count} restarts >= podRestartThreshold {args.pod_restart_threshold}")


def _crash_loop_nodes(snapshot: Snapshot, node: str, found: list[PodRecord],
                      args: RemovePodsHavingTooManyRestartsArgs) -> Iterator[CrashLoopNode]:
    """A workload (controller owner) with at least MIN_RESTARTING pods on `node`, every one of them restarting,
    while all its pods elsewhere run without reaching the threshold, and at least one does."""
    by_owner: dict[OwnerRef, list[PodRecord]] = {}
    for p in found:
        owner = p.controller
        if owner is not None:
            by_owner.setdefault(owner, []).append(p)
    for owner, pods in sorted(by_owner.items(), key=lambda kv: kv[1][0].key):
        siblings = snapshot.pods_by_owner.get(owner.uid, [])
        here = [s for s in siblings if s.node_name == node]
        elsewhere = [s for s in siblings if s.node_name != node and s.node_name]
        if len(pods) < MIN_RESTARTING or len(here) != len(pods) or not elsewhere:
            continue
        if any(s.phase != "Running" or restarts(s, args.including_init_containers) >= args.pod_restart_threshold
               for s in elsewhere):
            continue
        yield CrashLoopNode(node=node, namespace=pods[0].namespace, owner=f"{owner.kind}/{owner.name}",
                            restarting=tuple(sorted(p.name for p in pods)), healthy_elsewhere=len(elsewhere))
