"""nodeFit: where an evicted pod could go, and why nowhere when it cannot go anywhere."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from remediator.model.records import (
    Condition,
    Effect,
    LabelSelector,
    NodeRecord,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodRecord,
    SelectorRequirement,
    SpreadConstraint,
    Taint,
    Toleration,
)
from remediator.scheduling.nodefit import FitResult, find_destination, pod_request_summary
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
GI = 2**30
READY = (Condition(type="Ready", status="True"),)
BAD = Taint(key="nodemedic.io/bad", effect=Effect.NO_SCHEDULE)


def node(name: str, *, cpu: int = 4000, memory: int = 8 * GI, pods: int = 110, extra: dict[str, int] | None = None,
         conditions: tuple[Condition, ...] = READY, **fields: object) -> NodeRecord:
    allocatable = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    return NodeRecord(name=name, allocatable=allocatable, conditions=conditions, **fields)  # type: ignore[arg-type]


def pod(name: str = "mover", *, on: str = "n1", cpu: int = 500, memory: int = GI, phase: str = "Running",
        extra: dict[str, int] | None = None, **fields: object) -> PodRecord:
    requests = {"cpu": cpu, "memory": memory, **(extra or {})}
    return PodRecord(namespace="app", name=name, uid=f"uid-{name}", node_name=on, phase=phase,
                     requests=requests, **fields)  # type: ignore[arg-type]


def cluster(*nodes: NodeRecord, pods: tuple[PodRecord, ...] = ()) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner={})


HOME = node("n1")  # where the moving pod runs now; never a destination


@pytest.mark.parametrize(("candidate", "mover", "expected"), [
    (node("n2"), pod(), "n2"),
    (node("n2", taints=(BAD,)), pod(), "0/2 nodes fit: 1 current node, 1 untolerated taint nodemedic.io/bad"),
    (node("n2", taints=(BAD,)), pod(tolerations=(Toleration(key="nodemedic.io/bad", operator="Exists"),)), "n2"),
    (node("n2", taints=(Taint("gone", effect=Effect.NO_EXECUTE),)), pod(),
     "0/2 nodes fit: 1 current node, 1 untolerated taint gone"),
    (node("n2", taints=(Taint("meh", effect=Effect.PREFER_NO_SCHEDULE),)), pod(), "n2"),
    (node("n2", unschedulable=True), pod(), "0/2 nodes fit: 1 current node, 1 unschedulable"),
    (node("n2", conditions=(Condition(type="Ready", status="False"),)), pod(),
     "0/2 nodes fit: 1 NotReady, 1 current node"),
    (node("n2", conditions=(Condition(type="Ready", status="Unknown"),)), pod(),
     "0/2 nodes fit: 1 NotReady, 1 current node"),
    (node("n2", conditions=()), pod(), "0/2 nodes fit: 1 NotReady, 1 current node"),
    (node("n2", deleting=True), pod(), "0/2 nodes fit: 1 current node, 1 deleting"),
    (node("n2", labels={"pool": "gpu"}), pod(node_selector={"pool": "gpu"}), "n2"),
    (node("n2", labels={"pool": "cpu"}), pod(node_selector={"pool": "gpu"}),
     "0/2 nodes fit: 1 current node, 1 node selector/affinity mismatch"),
    (node("n2", labels={"zone": "b"}), pod(required_node_affinity=(NodeSelectorTerm(match_expressions=(
        SelectorRequirement(key="zone", operator="In", values=("a",)),)),)),
     "0/2 nodes fit: 1 current node, 1 node selector/affinity mismatch"),
    (node("n2", labels={"zone": "a"}), pod(required_node_affinity=(NodeSelectorTerm(match_expressions=(
        SelectorRequirement(key="zone", operator="In", values=("a",)),)),)), "n2"),
    (node("n2", cpu=499), pod(cpu=500), "0/2 nodes fit: 1 current node, 1 insufficient cpu"),
    (node("n2", cpu=500), pod(cpu=500), "n2"),
    (node("n2", memory=GI - 1), pod(memory=GI), "0/2 nodes fit: 1 current node, 1 insufficient memory"),
    (node("n2", pods=0), pod(), "0/2 nodes fit: 1 current node, 1 too many pods"),
    (node("n2"), pod(extra={"nvidia.com/gpu": 1}), "0/2 nodes fit: 1 current node, 1 no nvidia.com/gpu"),
    (node("n2", extra={"nvidia.com/gpu": 1}), pod(extra={"nvidia.com/gpu": 1}), "n2"),
    (node("n2", extra={"nvidia.com/gpu": 1}), pod(extra={"nvidia.com/gpu": 2}),
     "0/2 nodes fit: 1 current node, 1 insufficient nvidia.com/gpu"),
    (node("n2"), pod(extra={"example.com/dongle": 0}), "n2"),
    (node("n2"), pod(cpu=0, memory=0), "n2"),
], ids=["plain-node-fits", "untolerated-noschedule", "tolerated-noschedule", "untolerated-noexecute",
        "prefernoschedule-ignored", "unschedulable", "notready", "ready-unknown", "no-ready-condition",
        "deleting", "node-selector-matches", "node-selector-misses", "affinity-misses", "affinity-matches",
        "cpu-short-by-one", "cpu-exact", "memory-short", "no-pod-slot", "extended-resource-not-offered",
        "extended-resource-offered", "extended-resource-short", "zero-request-of-unoffered-resource",
        "best-effort-pod"])
def test_a_node_is_a_destination_only_when_every_check_passes(candidate: NodeRecord, mover: PodRecord,
                                                              expected: str) -> None:
    result = find_destination(mover, cluster(HOME, candidate), exclude=())
    assert (result.node or result.reason) == expected


@pytest.mark.parametrize(("existing", "reserved", "expected"), [
    ((), None, "n2"),
    ((pod("a", on="n2", cpu=3000),), None, "n2"),
    ((pod("a", on="n2", cpu=3000), pod("b", on="n2", cpu=600)), None, "insufficient cpu"),
    ((pod("a", on="n2", cpu=3000, phase="Succeeded"), pod("b", on="n2", cpu=600, phase="Failed")), None, "n2"),
    ((pod("a", on="n2", cpu=3000, terminating=True), pod("b", on="n2", cpu=600)), None, "insufficient cpu"),
    ((pod("a", on="n2", cpu=3000),), {"n2": {"cpu": 600}}, "insufficient cpu"),
    ((), {"n2": {"memory": 7 * GI + 1}}, "insufficient memory"),
    ((pod("a", on="n2", cpu=0), pod("b", on="n2", cpu=0)), None, "n2"),
    ((pod("a", on="n2", cpu=0), pod("b", on="n2", cpu=0)), {"n2": {"pods": 1}}, "too many pods"),
    ((pod("a", on="n2", cpu=0), pod("b", on="n2", cpu=0), pod("c", on="n2", cpu=0)), None, "too many pods"),
    ((), {"n3": {"cpu": 4000}}, "n2"),
], ids=["empty-node", "room-left-beside-a-pod", "full-of-running-pods", "terminal-pods-hold-nothing",
        "terminating-pods-still-hold-their-requests", "reserved-cpu-counts", "reserved-memory-counts",
        "last-pod-slot-free", "reserved-pod-slot-counts", "every-slot-taken-by-existing-pods",
        "reservations-elsewhere-do-not-count"])
def test_room_is_allocatable_minus_running_pods_minus_reservations(existing: tuple[PodRecord, ...],
                                                                   reserved: dict[str, dict[str, int]] | None,
                                                                   expected: str) -> None:
    candidate = node("n2", cpu=4000, memory=8 * GI, pods=3)
    result = find_destination(pod(), cluster(HOME, candidate, pods=existing), exclude=(), reserved=reserved)
    assert result.node == expected or result.reason.endswith(f"1 {expected}")


def test_a_planned_taint_repels_like_a_current_one() -> None:
    snap = cluster(HOME, node("n2"), node("n3", cpu=1000))
    result = find_destination(pod(), snap, exclude=(), planned_taints={"n2": [BAD]})
    assert result == FitResult(node="n3", reason="1/3 nodes fit")


def test_a_planned_taint_the_pod_tolerates_does_not_repel() -> None:
    mover = pod(tolerations=(Toleration(key="nodemedic.io/bad", value="", effect="NoSchedule"),))
    assert find_destination(mover, cluster(HOME, node("n2")), exclude=(), planned_taints={"n2": [BAD]}).node == "n2"


def test_excluded_nodes_and_the_current_node_are_never_chosen() -> None:
    snap = cluster(node("n1", cpu=64000), node("n2", cpu=32000), node("n3", cpu=1000))
    assert find_destination(pod(on="n1"), snap, exclude={"n2"}).node == "n3"
    assert find_destination(pod(on="n1"), snap, exclude={"n2", "n3"}) == FitResult(
        node=None, reason="0/3 nodes fit: 2 excluded, 1 current node")


@pytest.mark.parametrize(("nodes", "existing", "reserved", "expected"), [
    ((node("n2", cpu=2000), node("n3", cpu=3000)), (), None, "n3"),
    ((node("n3", cpu=3000), node("n2", cpu=3000)), (), None, "n2"),
    ((node("n2", cpu=2000), node("n3", cpu=3000)), (pod("x", on="n3", cpu=1500),), None, "n2"),
    ((node("n2", cpu=2000), node("n3", cpu=3000)), (), {"n3": {"cpu": 1500}}, "n2"),
    ((node("n2", cpu=8000, memory=GI // 2), node("n3", cpu=2000)), (), None, "n3"),
], ids=["most-free-cpu", "tie-broken-by-name-not-order", "existing-pods-reduce-free-cpu",
        "reservations-reduce-free-cpu", "roomiest-cpu-node-must-still-fit-memory"])
def test_the_choice_is_the_node_with_most_free_cpu_after_placement(nodes: tuple[NodeRecord, ...],
                                                                   existing: tuple[PodRecord, ...],
                                                                   reserved: dict[str, dict[str, int]] | None,
                                                                   expected: str) -> None:
    result = find_destination(pod(), cluster(HOME, *nodes, pods=existing), exclude=(), reserved=reserved)
    assert result.node == expected


def test_the_summary_counts_each_nodes_first_failure_most_common_first() -> None:
    snap = cluster(
        HOME, node("e1"), node("e2"), node("e3"),
        node("t1", taints=(BAD,)), node("t2", taints=(BAD,)),
        node("c1", cpu=100), node("c2", cpu=100, taints=(BAD,)),
    )
    result = find_destination(pod(), snap, exclude={"e1", "e2", "e3"})
    assert result == FitResult(node=None, reason=(
        "0/8 nodes fit: 3 excluded, 3 untolerated taint nodemedic.io/bad, 1 current node, 1 insufficient cpu"))


def test_kept_node_answers_give_the_same_results_and_are_what_a_later_search_reads() -> None:
    snap = cluster(HOME, node("n2", taints=(BAD,)), node("n3", unschedulable=True), node("n4", cpu=100),
                   node("n5", conditions=()), node("n6"))
    kept: dict[str, str | None] = {}
    first = find_destination(pod(), snap, exclude={"n6"}, node_reasons=kept)
    assert first == find_destination(pod(), snap, exclude={"n6"})
    assert first.reason == ("0/6 nodes fit: 1 NotReady, 1 current node, 1 excluded, 1 insufficient cpu, "
                            "1 unschedulable, 1 untolerated taint nodemedic.io/bad")
    # Only the answers that read the node and the pod's tolerations and node selection are kept: not the current
    # node, the excluded one, or room (n4 passed them and was then short of cpu).
    assert kept == {"n2": "untolerated taint nodemedic.io/bad", "n3": "unschedulable", "n4": None,
                    "n5": "NotReady"}
    # A second search of a pod alike in those reads the kept answers: one changed here shows in its summary.
    kept["n2"] = "deleting"
    again = find_destination(pod("other", on="n4"), snap, exclude={"n1", "n6"}, node_reasons=kept)
    assert again.reason == "0/6 nodes fit: 2 excluded, 1 NotReady, 1 current node, 1 deleting, 1 unschedulable"
    assert find_destination(pod("other", on="n4"), snap, exclude={"n1"}, node_reasons=kept).node == "n6"


def test_an_empty_cluster_says_so() -> None:
    assert find_destination(pod(), cluster(), exclude=()) == FitResult(node=None, reason="0/0 nodes fit: no nodes")


def test_precomputed_requests_are_used_instead_of_summing_the_pods() -> None:
    snap = cluster(HOME, node("n2"), node("n3", cpu=1000))  # n2 looks empty in the snapshot...
    requested = {"n2": {"cpu": 3800, "pods": 3}}  # ...but the caller's summary says it is nearly full
    result = find_destination(pod(), snap, exclude=(), requested=requested)
    assert result == FitResult(node="n3", reason="1/3 nodes fit")  # n3 absent from `requested`: summed, empty


def test_summing_on_demand_agrees_with_the_precomputed_summary() -> None:
    existing = (pod("a", on="n2", cpu=1000), pod("b", on="n3", cpu=1200))
    snap = cluster(HOME, node("n2"), node("n3"), pods=existing)
    requested = {name: pod_request_summary(snap.pods(name)) for name in snap.nodes}
    assert find_destination(pod(), snap, exclude=(), requested=requested) == find_destination(pod(), snap, exclude=())
    assert find_destination(pod(), snap, exclude=()).node == "n2"


def test_a_request_summary_sums_non_terminal_pods_and_counts_them() -> None:
    pods = [pod("a", cpu=100, memory=10, extra={"nvidia.com/gpu": 1}), pod("b", cpu=250, memory=5),
            pod("c", cpu=9999, phase="Succeeded"), pod("d", cpu=9999, phase="Failed"),
            pod("e", cpu=1, memory=1, phase="Pending")]
    assert pod_request_summary(pods) == {"pods": 3, "cpu": 351, "memory": 16, "nvidia.com/gpu": 1}
    assert pod_request_summary([]) == {"pods": 0}


# --- required inter-pod anti-affinity ---------------------------------------------------------------------------

HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
WEB = LabelSelector(match_labels=(("app", "web"),))


def zoned(name: str, zone: str | None = "z1", **fields: object) -> NodeRecord:
    labels = {HOSTNAME: name, **({ZONE: zone} if zone else {})}
    return node(name, labels=labels, **fields)


def away_from_web(key: str = HOSTNAME, namespaces: tuple[str, ...] = ("app",), any_namespace: bool = False,
                  selector: LabelSelector | None = WEB) -> tuple[PodAffinityTerm, ...]:
    return (PodAffinityTerm(selector=selector, namespaces=namespaces, any_namespace=any_namespace, topology_key=key),)


def web(name: str, on: str, **fields: object) -> PodRecord:
    return pod(name, on=on, labels={"app": "web"}, **fields)


@pytest.mark.parametrize(("nodes", "others", "mover", "expected"), [
    ((zoned("n2"), zoned("n3")), (web("w2", "n2"),), web("w1", "n1", required_anti_affinity=away_from_web()), "n3"),
    ((zoned("n2", "z2"), zoned("n3", "z2")), (web("w3", "n3"),),
     web("w1", "n1", required_anti_affinity=away_from_web(ZONE)), "0/3 nodes fit: 2 pod anti-affinity, 1 current node"),
    ((zoned("n2", None),), (web("w2", "n2"),), web("w1", "n1", required_anti_affinity=away_from_web(ZONE)), "n2"),
    ((zoned("n2"), zoned("n3")), (pod("guard", on="n2", required_anti_affinity=away_from_web()),), web("w1", "n1"),
     "n3"),
    ((zoned("n2"),), (pod("guard", on="n2", required_anti_affinity=away_from_web()),), web("w1", "n1"),
     "0/2 nodes fit: 1 current node, 1 existing pods' anti-affinity"),
    ((zoned("n2"),), (web("w2", "n2"),), web("w1", "n1", required_anti_affinity=away_from_web(namespaces=("other",))),
     "n2"),
    ((zoned("n2"),), (web("w2", "n2"),), web("w1", "n1", required_anti_affinity=away_from_web(
        namespaces=(), any_namespace=True)), "0/2 nodes fit: 1 current node, 1 pod anti-affinity"),
    ((zoned("n2"),), (web("w2", "n2"),), web("w1", "n1", required_anti_affinity=away_from_web(selector=None)), "n2"),
    ((zoned("n2"),), (web("w2", "n2", phase="Succeeded"),), web("w1", "n1", required_anti_affinity=away_from_web()),
     "n2"),
], ids=["hostname", "zone", "node-outside-every-zone", "existing-pods-term-elsewhere", "existing-pods-term",
        "other-namespace", "namespace-selector-counts-as-all", "null-selector-matches-nothing", "terminal-pod-gone"])
def test_required_anti_affinity_is_checked_both_ways(nodes: tuple[NodeRecord, ...], others: tuple[PodRecord, ...],
                                                     mover: PodRecord, expected: str) -> None:
    home = zoned("n1")
    result = find_destination(mover, cluster(home, *nodes, pods=(mover, *others)), exclude=set())
    assert (result.node or result.reason) == expected


def test_a_pod_planned_onto_a_node_counts_for_the_next_search() -> None:
    snap = cluster(zoned("n1"), zoned("n2"), zoned("n3"))
    a = web("a", "n1", required_anti_affinity=away_from_web())
    b = web("b", "n1", required_anti_affinity=away_from_web())
    index = PodAffinityIndex(snap)
    first = find_destination(a, snap, exclude=set(), pod_affinity=index)
    assert first.node == "n2"  # n2 and n3 tie on free cpu: by name
    index.add(a, "n2")
    assert find_destination(b, snap, exclude=set(), pod_affinity=index).node == "n3"
    index.add(b, "n3")
    c = web("c", "n1", required_anti_affinity=away_from_web())
    assert find_destination(c, snap, exclude=set(), pod_affinity=index).reason == (
        "0/3 nodes fit: 2 pod anti-affinity, 1 current node")


def near_web(key: str = HOSTNAME, **changes: object) -> tuple[PodAffinityTerm, ...]:
    (term,) = away_from_web(key)
    return (dataclasses.replace(term, **changes),)  # type: ignore[arg-type]


@pytest.mark.parametrize(("nodes", "others", "mover", "expected"), [
    ((zoned("n2"), zoned("n3")), (web("w3", "n3"),), pod("cache", required_affinity=near_web()), "n3"),
    ((zoned("n2", "z2"), zoned("n3", "z2")), (web("w3", "n3"),), pod("cache", required_affinity=near_web(ZONE)),
     "n2"),
    ((zoned("n2"),), (web("w1", "n1"),), pod("cache", required_affinity=near_web()),
     "0/2 nodes fit: 1 current node, 1 pod affinity"),
    ((zoned("n2", None),), (web("w2", "n2"),), pod("cache", required_affinity=near_web(ZONE)),
     "0/2 nodes fit: 1 current node, 1 pod affinity"),
    ((zoned("n2"),), (), web("first", "n1", required_affinity=near_web()), "n2"),
    ((zoned("n2"),), (web("w1", "n1"),), web("second", "n1", required_affinity=near_web()),
     "0/2 nodes fit: 1 current node, 1 pod affinity"),
    ((zoned("n2"),), (web("w2", "n2"),), pod("cache", required_affinity=near_web(namespaces=(), any_namespace=True)),
     "0/2 nodes fit: 1 current node, 1 pod affinity"),
], ids=["same-host", "same-zone", "only-partner-is-on-the-sick-node", "node-outside-every-zone",
        "first-of-its-group", "not-first-when-a-partner-exists", "namespace-selector-demands-more"])
def test_required_pod_affinity_needs_a_partner_in_the_domain(nodes: tuple[NodeRecord, ...],
                                                             others: tuple[PodRecord, ...], mover: PodRecord,
                                                             expected: str) -> None:
    result = find_destination(mover, cluster(zoned("n1"), *nodes, pods=(mover, *others)), exclude=set())
    assert (result.node or result.reason) == expected


# --- hard topology spread (DoNotSchedule) ------------------------------------------------------------------------

def spread_web(max_skew: int = 1, min_domains: int = 1) -> tuple[SpreadConstraint, ...]:
    return (SpreadConstraint(max_skew=max_skew, topology_key=ZONE, selector=WEB, min_domains=min_domains),)


@pytest.mark.parametrize(("nodes", "others", "mover", "expected"), [
    ((zoned("n2", "z2"), zoned("n3", "z3")), (web("w2", "n2"),), web("m", "n1", hard_spread=spread_web()), "n3"),
    ((zoned("n2", "z2"), zoned("n3", "z3"), zoned("n4", "z1")), (web("w2", "n2"), web("w3", "n3")),
     web("m", "n1", hard_spread=spread_web()), "n4"),
    ((zoned("n2", "z2"), zoned("n3", "z3")), (web("w2", "n2"), web("w2b", "n2"), web("w3", "n3")),
     web("m", "n1", hard_spread=spread_web()), "0/3 nodes fit: 2 topology spread, 1 current node"),
    ((zoned("n2", "z2"), zoned("n3", "z3")), (web("w2", "n2"), web("w2b", "n2"), web("w3", "n3")),
     web("m", "n1", hard_spread=spread_web(max_skew=2)), "n3"),
    ((zoned("n2", None),), (), web("m", "n1", hard_spread=spread_web()),
     "0/2 nodes fit: 1 current node, 1 topology spread (node lacks the topology key)"),
    ((zoned("n2", "z2"),), (web("w1", "n1"), web("w2", "n2")), web("m", "n1", hard_spread=spread_web()), "n2"),
    ((zoned("n2", "z2"),), (web("w1", "n1"), web("w2", "n2")), web("m", "n1", hard_spread=spread_web(min_domains=3)),
     "0/2 nodes fit: 1 current node, 1 topology spread"),
    ((zoned("n2", "z2"), zoned("n3", "z3")),
     (dataclasses.replace(web("w2", "n2"), namespace="other"), dataclasses.replace(web("w2b", "n2"), namespace="other"),
     web("w3", "n3")),
     web("m", "n1", hard_spread=spread_web()), "n2"),
    ((zoned("n2", "z2"), zoned("n3", "z3")), (web("w2", "n2", terminating=True), web("w3", "n3")),
     web("m", "n1", hard_spread=spread_web()), "n2"),
], ids=["to-the-emptier-zone", "only-its-own-zone-keeps-the-skew", "nowhere", "max-skew-2", "node-without-the-key",
        "balanced-two-zones", "min-domains-counts-missing-zones-as-empty", "other-namespace-not-counted",
        "terminating-pods-not-counted"])
def test_hard_topology_spread_keeps_the_skew(nodes: tuple[NodeRecord, ...], others: tuple[PodRecord, ...],
                                             mover: PodRecord, expected: str) -> None:
    result = find_destination(mover, cluster(zoned("n1", "z1"), *nodes, pods=(mover, *others)), exclude=set())
    assert (result.node or result.reason) == expected


def test_a_planned_move_counts_at_its_destination_for_the_next_search() -> None:
    a, b = web("a", "n1", hard_spread=spread_web()), web("b", "n1", hard_spread=spread_web())
    snap = cluster(zoned("n1", "z1"), zoned("n2", "z2"), zoned("n3", "z3"), pods=(a, b))
    spread = SpreadIndex(snap)
    assert find_destination(a, snap, exclude=set(), spread=spread).node == "n2"  # tie on free cpu: by name
    spread.add(a, "n2")
    assert find_destination(b, snap, exclude=set(), spread=spread).node == "n3"
