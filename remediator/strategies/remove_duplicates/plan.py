"""RemoveDuplicates: a node holding several replicas of one owner gives some up to nodes that can take them.

descheduler's algorithm (docs/balance-strategies.md lists each difference and why):
1. duplicates are the evictable pods in scope with the same namespace, owners and container images, on one Ready
   node; pods with no owner or an owner of an `excludeOwnerKinds` kind are ignored;
2. per set of duplicates, the target nodes are the nodes whose taints (NoSchedule, NoExecute) the replicas
   tolerate and whose labels their node selection accepts; fewer than two: nothing to do;
3. `upper = ceil(replicas / target nodes)`: a node holding more than `upper` of them gives up the rest.
nodemedic's changes: cordoned nodes and nodes the cycle keeps free are no targets (`dup-targets`); each replica
moves only to a target that fits it and ends with fewer of its replicas than the node it leaves, and at most
`upper` (`dup-dest`); the cycle gate refuses a move that makes the workload's zone spread worse (`dup-zones`),
and applies PDBs, the loop guard and the limits.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping

from remediator.model import Effect, NodeRecord, PlannedEviction, PodRecord, Snapshot
from remediator.planning.cycle import CYCLE, NODE, Cycle
from remediator.planning.defaultevictor import protection
from remediator.scheduling.selectors import matches_labels, pod_fits_node_selection
from remediator.scheduling.tolerations import untolerated
from remediator.scheduling.usage import eviction_order, live_pods
from remediator.strategies.remove_duplicates.args import RemoveDuplicatesArgs

NAME = "RemoveDuplicates"
KIND = "balance"

_BLOCKING = (Effect.NO_SCHEDULE, Effect.NO_EXECUTE)
# namespace, owners (kind, name), images: what makes two pods duplicates of each other
DuplicateKey = tuple[str, tuple[tuple[str, str], ...], tuple[str, ...]]


def plan(snapshot: Snapshot, args: RemoveDuplicatesArgs, cycle: Cycle) -> None:
    nodes = sorted(n for n, rec in snapshot.nodes.items() if rec.ready and not rec.deleting)
    replicas: Counter[DuplicateKey] = Counter()
    placed: dict[DuplicateKey, dict[str, list[PodRecord]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        for pod in live_pods(snapshot, node):
            key = _duplicate_key(pod, args)
            if key is None or protection(pod, snapshot, cycle.policy.evictor) is not None:
                continue
            replicas[key] += 1
            placed[key][node].append(pod)

    for key in sorted(placed):
        on_node = placed[key]
        if all(len(pods) < 2 for pods in on_node.values()):
            continue
        targets = _target_nodes(snapshot, nodes, on_node, cycle.exclude)
        if len(targets) < 2:
            continue
        upper = math.ceil(replicas[key] / len(targets))
        count = Counter({n: len(pods) for n, pods in on_node.items()})
        for source in sorted(on_node, key=lambda n: (-count[n], n)):
            if count[source] <= upper:
                continue
            if _relieve(cycle, key, source, on_node[source], count=count, upper=upper, targets=targets) == CYCLE:
                return


def _relieve(cycle: Cycle, key: DuplicateKey, source: str, pods: list[PodRecord], *, count: Counter[str],
             upper: int, targets: list[str]) -> str | None:
    """Move replicas off `source` until it holds `upper`; CYCLE when the cycle's limits are used up."""
    destinations = cycle.by_room(t for t in targets if t != source and t not in cycle.exclude)

    def fewer_there(pod: PodRecord, node: NodeRecord, after: Mapping[str, int]) -> str | None:
        there = count[node.name] + 1
        if there > upper or there >= count[source]:
            return f"would hold {there} replicas there"
        return None

    owners = ", ".join(f"{kind}/{name}" for kind, name in key[1])
    if cycle.hold(source) is not None:
        return None
    for pod in eviction_order(pods):
        if count[source] <= upper:
            break
        reason = (f"{count[source]} replicas of {owners} on {source}, more than {upper} "
                  f"(per node over the {len(targets)} nodes that can take them)")
        outcome = cycle.move(PlannedEviction(pod, NAME, reason), destinations, accept=fewer_there)
        if outcome.evicted and outcome.destination is not None:
            count[source] -= 1
            count[outcome.destination] += 1
        elif outcome.stop in (CYCLE, NODE):
            return outcome.stop
    return None


def _duplicate_key(pod: PodRecord, args: RemoveDuplicatesArgs) -> DuplicateKey | None:
    if not pod.owners or any(o.kind in args.exclude_owner_kinds for o in pod.owners):
        return None
    ns = args.namespaces
    if (ns.include and pod.namespace not in ns.include) or pod.namespace in ns.exclude:
        return None
    if args.label_selector is not None and not matches_labels(args.label_selector, pod.labels):
        return None
    return pod.namespace, tuple(sorted((o.kind, o.name) for o in pod.owners)), pod.images


def _target_nodes(snapshot: Snapshot, nodes: list[str], on_node: Mapping[str, list[PodRecord]],
                  exclude: set[str]) -> list[str]:
    """The nodes that can take some replica: one check per distinct (tolerations, node selection) of the replicas,
    a shape only counting when more than one node takes it (descheduler's getTargetNodes)."""
    shapes = {(p.tolerations, tuple(sorted(p.node_selector.items())), p.required_node_affinity): p
              for pods in on_node.values() for p in pods}
    targets: set[str] = set()
    for pod in shapes.values():
        fit = [n for n in nodes if _takes(snapshot.nodes[n], pod) and n not in exclude]
        if len(fit) > 1:
            targets.update(fit)
    return sorted(targets)


def _takes(node: NodeRecord, pod: PodRecord) -> bool:
    return (not node.unschedulable and not untolerated(pod.tolerations, node.taints, _BLOCKING)
            and pod_fits_node_selection(pod, node))
