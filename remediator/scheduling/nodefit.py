"""nodeFit: is there another node this pod could be scheduled to, and which one would we count on.

nodemedic never evicts a pod that has nowhere to go. The checks are descheduler's `NodeFit` (Ready, schedulable,
NoSchedule/NoExecute taints tolerated, nodeSelector and required node affinity, requests fit into what is left of
allocatable, a free pod slot, required inter-pod affinity, anti-affinity both ways, and hard topology spread),
plus what the planner knows and the cluster does not yet: taints it is about to add (`planned_taints`), room
already promised to pods it plans to move (`reserved`) and where those pods will be (`pod_affinity`, `spread`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from remediator.model.records import HOSTNAME_LABEL, TERMINAL_PHASES, Effect, NodeRecord, PodRecord, Taint
from remediator.scheduling.fit_screen import CURRENT_NODE, EXCLUDED, FitScreen, build_screen, refusals
from remediator.scheduling.offering import Offering
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.selectors import pod_fits_node_selection
from remediator.scheduling.tolerations import tolerated
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.state.snapshot import Snapshot

BLOCKING_EFFECTS = frozenset({Effect.NO_SCHEDULE, Effect.NO_EXECUTE})
PODS = "pods"
CPU = "cpu"
_NO_ROOM: Mapping[str, int] = {}
_UNASKED = "?"  # no node's reason: a node `node_reasons` holds no answer for yet


@dataclass(frozen=True)
class FitResult:
    node: str | None  # a destination, or None
    reason: str  # "3/7 nodes fit", or why none did: "0/7 nodes fit: 3 excluded, 2 insufficient cpu, ..."
    # When none fit: each node's first failure -> how many nodes, over `total` nodes (what `reason` sums up)
    rejections: Mapping[str, int] = field(default_factory=dict, compare=False)
    total: int = field(default=0, compare=False)


def no_fit(total: int, rejections: Mapping[str, int]) -> FitResult:
    """The answer of a search in which none of `total` nodes fit, each for its first failure in `rejections`."""
    summary = ", ".join(f"{count} {why}" for why, count in sorted(rejections.items(), key=lambda kv: (-kv[1], kv[0])))
    return FitResult(node=None, reason=f"0/{total} nodes fit: {summary or 'no nodes'}", rejections=rejections,
                     total=total)


def pod_request_summary(pods: Iterable[PodRecord]) -> dict[str, int]:
    """Summed requests of the non-terminal pods, plus "pods": how many there are (terminal pods hold nothing)."""
    total: dict[str, int] = {}
    get = total.get
    # Runs over every pod of the cluster once per cycle: kept tight (the phase test in a comprehension). The phase
    # alone: a terminating pod is not `live`, but it holds its requests here until it is gone.
    holding = [pod.requests for pod in pods if pod.phase not in TERMINAL_PHASES]
    for requests in holding:
        for resource, quantity in requests.items():
            total[resource] = get(resource, 0) + quantity
    total[PODS] = len(holding)
    return total


def _untolerated_taint(pod: PodRecord, taints: Iterable[Taint]) -> Taint | None:
    for taint in taints:
        if taint.effect in BLOCKING_EFFECTS and not tolerated(pod.tolerations, taint):
            return taint
    return None


def _placement_reason(pod: PodRecord, node: NodeRecord, exclude: Collection[str],
                      planned: Mapping[str, Sequence[Taint]], known: dict[str, str | None]) -> str | None:
    """The checks that need no pod list, cheapest first; the first failure is the node's reason. `known`: node ->
    `_node_reason`'s answers for pods alike in what it reads, filled in here."""
    if node.name == pod.node_name:
        return CURRENT_NODE
    if node.name in exclude:
        return EXCLUDED
    return _known_node_reason(pod, node, planned, known)


def _known_node_reason(pod: PodRecord, node: NodeRecord, planned: Mapping[str, Sequence[Taint]],
                       known: dict[str, str | None]) -> str | None:
    """`_node_reason` from `known`, filled in here."""
    why = known.get(node.name, _UNASKED)
    if why == _UNASKED:
        why = known[node.name] = _node_reason(pod, node, planned.get(node.name, ()))
    return why


def _node_reason(pod: PodRecord, node: NodeRecord, planned: Sequence[Taint]) -> str | None:
    """The last of those checks: they read only the node, the taints planned on it and the pod's tolerations and
    node selection, so pods alike in those get the same answer from a node."""
    if node.deleting:
        return "deleting"
    if not node.ready:
        return "NotReady"
    if node.unschedulable:
        return "unschedulable"
    taint = _untolerated_taint(pod, (*node.taints, *planned))
    if taint is not None:
        return f"untolerated taint {taint.key}"
    if not pod_fits_node_selection(pod, node):
        return "node selector/affinity mismatch"
    return None


def placement_reason(pod: PodRecord, node: NodeRecord, *, exclude: Collection[str] = (),
                     planned: Sequence[Taint] = ()) -> str | None:
    """Why `pod` may not go to `node` whatever room it has (Ready, schedulable, not excluded, taints tolerated,
    node selector and required node affinity), or None: the pool a pod can go to."""
    if node.name == pod.node_name:
        return CURRENT_NODE
    return EXCLUDED if node.name in exclude else _node_reason(pod, node, planned)


def _room_reason(node: NodeRecord, wanted: Mapping[str, int], used: Mapping[str, int],
                 held: Mapping[str, int]) -> str | None:
    allocatable = node.allocatable
    if allocatable.get(PODS, 0) - used.get(PODS, 0) - held.get(PODS, 0) < 1:
        return "too many pods"
    for resource, quantity in wanted.items():
        if resource not in allocatable:
            return f"no {resource}"  # an extended resource the node does not offer at all
        if allocatable[resource] - used.get(resource, 0) - held.get(resource, 0) < quantity:
            return f"insufficient {resource}"
    return None


def _kept_room_reason(kept: dict[str, str | None], node: NodeRecord, wanted: Mapping[str, int],
                      used: Mapping[str, int]) -> str | None:
    """`_room_reason` on a node no room is promised on, from `kept` (find_destination's `room_reasons`), filled in
    here."""
    why = kept.get(node.name, _UNASKED)
    if why == _UNASKED:
        why = kept[node.name] = _room_reason(node, wanted, used, _NO_ROOM)
    return why


def find_destination(pod: PodRecord, snapshot: Snapshot, *, exclude: Collection[str],
                     planned_taints: Mapping[str, Sequence[Taint]] | None = None,
                     reserved: Mapping[str, Mapping[str, int]] | None = None,
                     requested: Mapping[str, Mapping[str, int]] | None = None,
                     pod_affinity: PodAffinityIndex | None = None, spread: SpreadIndex | None = None,
                     nodes: Iterable[str] | None = None, first_fit: bool = False,
                     accept: Callable[[PodRecord, NodeRecord, Mapping[str, int]], str | None] | None = None,
                     offering: Offering | None = None, node_reasons: dict[str, str | None] | None = None,
                     room_reasons: dict[str, str | None] | None = None,
                     screen: FitScreen | None = None) -> FitResult:
    """The node `pod` would fit on, other than its own and those in `exclude`, or why there is none.

    `exclude`: node names that must not receive the pod (pass a set: it is probed once per node).
    `planned_taints`: node -> taints the plan adds this cycle; they repel like the node's current taints.
    `reserved`: node -> resources (and "pods") already promised to pods planned to move there.
    `requested`: node -> `pod_request_summary(snapshot.pods(node))`, precomputed once per cycle by a caller that
    places many pods; a node missing from it (or no mapping at all) is summed from the snapshot on demand.
    `pod_affinity`, `spread`: the cycle's indexes of pods and planned moves (built from the snapshot when not given).
    `nodes`: the only nodes to consider (a balance strategy's destinations), in place of every node.
    `first_fit`: take the first fitting node of `nodes` (the caller ordered them, roomiest first) instead of
    searching them all: a planner placing hundreds of pods on thousands of nodes scans only until a fit.
    `accept`: a strategy's own last check, given the node's requests after the pod would arrive (e.g. "stays
    under its target"); it runs after every other check passed.
    `offering`: the cycle's index of the nodes offering the resources only some nodes have; a pod asking for one
    is checked on those nodes only, the others counted as lacking it (their other reasons untold).
    `node_reasons`: node -> what `_node_reason` answered a pod with this one's tolerations and node selection,
    kept by a caller whose searches share the nodes and planned taints (one plan's books), filled in here.
    `room_reasons`: node -> what the room check answered a pod with these requests on a node holding no `reserved`
    room, against `requested`: kept by a caller whose searches share `requested` (one plan's books), filled in here.
    `screen`: `screen_nodes` of these `nodes`, `node_reasons` and `room_reasons`, with `requested` and `reserved`
    room that only grows (fit_screen.py): only the nodes those two checks pass are walked, the others counted.
    Among fitting nodes the one with the most free CPU after placement wins, ties broken by name, so the
    same snapshot always gives the same answer.
    """
    planned_taints = planned_taints or {}
    reserved = reserved or {}
    node_reasons = {} if node_reasons is None else node_reasons
    # A zero request needs nothing, even of a resource the node does not list (as the scheduler skips them).
    wanted = {resource: quantity for resource, quantity in pod.requests.items() if quantity > 0}
    best: tuple[int, str] | None = None  # (-free cpu after placement, name): the smallest wins
    fitting = 0
    considered, rejections = ((screen.open, Counter()) if screen is not None
                              else _candidates(pod, snapshot.nodes.keys() if nodes is None else nodes, offering))
    total = sum(rejections.values())
    # The scheduler's filter checks the pod's DoNotSchedule constraints, its own or its scheduler's defaults.
    hard_spread = bool(pod.hard_spread or (spread is not None and spread.hard(pod)))
    # Worked out for the pod once, on first use (each keeps what a domain shared by many nodes answered):
    affinity_conflict: Callable[[NodeRecord], str | None] | None = None
    spread_violation: Callable[[NodeRecord], str | None] | None = None
    for name in considered:
        node = snapshot.nodes.get(name)
        if node is None:
            continue
        total += 1
        held = reserved.get(name, _NO_ROOM)
        why = _placement_reason(pod, node, exclude, planned_taints, node_reasons)
        if why is None:
            # Summing the node's pods is the expensive part, so it runs only for nodes that passed the rest.
            precomputed = requested.get(name) if requested is not None else None
            used = precomputed if precomputed is not None else pod_request_summary(snapshot.pods(name))
            kept = room_reasons if held is _NO_ROOM and precomputed is not None else None
            why = (_room_reason(node, wanted, used, held) if kept is None
                   else _kept_room_reason(kept, node, wanted, used))
        if why is None:
            if affinity_conflict is None:
                affinity_conflict = (pod_affinity if pod_affinity is not None
                                     else PodAffinityIndex(snapshot)).conflict_for(pod)
            why = affinity_conflict(node)
        if why is None and hard_spread:
            if spread_violation is None:
                spread_violation = (spread if spread is not None else SpreadIndex(snapshot)).filter_for(pod)
            why = spread_violation(node)
        if why is None and accept is not None:
            after = {r: used.get(r, 0) + held.get(r, 0) + wanted.get(r, 0) for r in {*used, *held, *wanted}}
            after[PODS] = after.get(PODS, 0) + 1
            why = accept(pod, node, after)
        if why is not None:
            rejections[why] += 1
            continue
        fitting += 1
        if first_fit:
            return FitResult(node=name, reason=f"fits {name}")
        free_cpu = node.allocatable.get(CPU, 0) - used.get(CPU, 0) - held.get(CPU, 0) - wanted.get(CPU, 0)
        candidate = (-free_cpu, name)
        if best is None or candidate < best:
            best = candidate
    if best is not None:
        return FitResult(node=best[1], reason=f"{fitting}/{total if screen is None else screen.total} nodes fit")
    return no_fit(total, rejections) if screen is None else no_fit(screen.total, refusals(
        screen, rejections, current=pod.node_name, exclude=exclude, reserved=reserved,
        held_room=lambda name: _room_reason(snapshot.nodes[name], wanted, (requested or {})[name], reserved[name])))


def screen_nodes(pod: PodRecord, snapshot: Snapshot, nodes: Iterable[str], *, offering: Offering | None,
                 planned_taints: Mapping[str, Sequence[Taint]], node_reasons: dict[str, str | None],
                 requested: Mapping[str, Mapping[str, int]], room_reasons: dict[str, str | None]) -> FitScreen:
    """`find_destination`'s screen of `nodes` for pods alike in `node_reasons` and `room_reasons` (fit_screen.py):
    the nodes both kept checks pass, the reasons of the others."""
    wanted = {resource: quantity for resource, quantity in pod.requests.items() if quantity > 0}

    def placement(node: NodeRecord) -> str | None:
        return _known_node_reason(pod, node, planned_taints, node_reasons)

    def room(node: NodeRecord) -> str | None:
        used = requested.get(node.name)
        return None if used is None else _kept_room_reason(room_reasons, node, wanted, used)  # None: walked in full

    return build_screen(*_candidates(pod, nodes, offering), snapshot.nodes, placement, room)


def _candidates(pod: PodRecord, nodes: Iterable[str], offering: Offering | None) -> tuple[Iterable[str], Counter[str]]:
    """The nodes to look at closely, and the rejections of the others (those lacking a resource the pod asks for)."""
    scarce = offering.wanted(pod) if offering is not None else ()
    if offering is None or not scarce:
        return nodes, Counter()
    offered, lacking = offering.split(nodes, scarce)
    return offered, Counter(lacking)


def new_node_reason(pod: PodRecord, source: NodeRecord, snapshot: Snapshot, *, drop_taints: Collection[str],
                    held: Mapping[str, int]) -> str | None:
    """Why `pod` would not fit a new, empty node like `source` (None when it would): the node a node autoscaler adds
    for pods that fit nowhere else.

    The new node is `source` as its pool makes it: the same labels but its own hostname, the same allocatable, the
    source's DaemonSet pods already running, none of the taints in `drop_taints` (the ones nodemedic or an autoscaler
    put on `source`), Ready and schedulable. `held`: room already promised on it to pods leaving `source` this cycle.
    Inter-pod affinity and topology spread are taken as unchanged: the pod stays in its zone, among the same pods.
    """
    twin = dataclasses.replace(
        source, name=f"(new node like {source.name})",
        labels={k: v for k, v in source.labels.items() if k != HOSTNAME_LABEL},
        taints=tuple(t for t in source.taints if t.key not in drop_taints), unschedulable=False)
    taint = _untolerated_taint(pod, twin.taints)
    if taint is not None:
        return f"a new node would carry taint {taint.key}"
    if not pod_fits_node_selection(pod, twin):
        return "its node selector/affinity names this node"
    daemons = pod_request_summary(p for p in snapshot.pods(source.name)
                                  if any(o.kind == "DaemonSet" for o in p.owners))
    wanted = {resource: quantity for resource, quantity in pod.requests.items() if quantity > 0}
    why = _room_reason(twin, wanted, daemons, held)
    return None if why is None else f"{why} even on a new node"
