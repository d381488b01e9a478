"""SpreadIndex's tallies are kept sparse and moved incrementally as the plan moves pods: after any sequence of moves
(and moves taken back) every check answers as an index built with those moves from the start."""

from __future__ import annotations

import dataclasses
import random

import pytest

from remediator.model.records import LabelSelector, NodeRecord, PodRecord, SpreadConstraint
from remediator.scheduling.topologyspread import SpreadIndex
from tests.unit.remediator.scheduling.test_nodefit import cluster, node

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def _node(i: int) -> NodeRecord:
    return node(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i % 3}"})


def _constraints(app: str, rng: random.Random) -> tuple[SpreadConstraint, ...]:
    selector = LabelSelector(match_labels=(("app", app),))
    return tuple(SpreadConstraint(max_skew=rng.choice((1, 2)), topology_key=key, selector=selector,
                                  min_domains=rng.choice((1, 1, 4)))
                 for key in rng.sample((HOST, ZONE), rng.choice((1, 2))))


@pytest.mark.parametrize("seed", range(25))
def test_checks_after_incremental_moves_match_an_index_built_with_the_moves(seed: int) -> None:
    rng = random.Random(seed)
    nodes = [_node(i) for i in range(7)]
    spreads = {app: _constraints(app, rng) for app in ("web", "api")}
    pods = [PodRecord(namespace="ns", name=f"p{j}", uid=f"uid-p{j}", node_name=rng.choice(nodes).name,
                      phase=rng.choice(("Running", "Running", "Running", "Failed")), labels={"app": app},
                      hard_spread=spreads[app] if rng.random() < 0.5 else (),
                      soft_spread=spreads[app] if rng.random() < 0.5 else ())
            for j, app in enumerate(rng.choice(("web", "api")) for _ in range(14))]
    snap = cluster(*nodes, pods=tuple(pods))
    incremental = SpreadIndex(snap)
    for p in pods:  # tallies built before any move
        for n in nodes:
            incremental.violation(p, n)
            incremental.soft_worse(p, n)
    moved: dict[str, tuple[PodRecord, str]] = {}
    for _ in range(10):
        p = rng.choice(pods)  # a Failed pod's move places its replacement
        if p.uid in moved and rng.random() < 0.3:
            incremental.remove(p)
            del moved[p.uid]
        else:
            destination = rng.choice(nodes).name
            incremental.add(p, destination)
            moved[p.uid] = (p, destination)
    fresh = SpreadIndex(snap)
    for p, destination in moved.values():
        fresh.add(p, destination)
    for p in pods:
        for n in nodes:
            assert incremental.violation(p, n) == fresh.violation(p, n)
            assert incremental.soft_worse(p, n) == fresh.soft_worse(p, n)


def test_a_failed_pod_counts_nowhere_until_its_replacement_is_placed() -> None:
    """The scheduler counts live pods only: a Failed pod leaves no gap where it was, and its replacement fills one
    where the plan puts it, for the pod itself and for every pod checked after it."""
    nodes = [node(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i}"}) for i in range(3)]
    zone = (SpreadConstraint(max_skew=1, topology_key=ZONE, selector=LabelSelector(match_labels=(("app", "web"),))),)

    def web(name: str, on: str, phase: str = "Running") -> PodRecord:
        return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=on, phase=phase,
                         labels={"app": "web"}, hard_spread=zone)

    failed, other = web("failed", "n0", "Failed"), web("b", "n1")
    index = SpreadIndex(cluster(*nodes, pods=(web("a", "n0"), other, failed)))  # live: z0 1, z1 1, z2 0
    assert index.violation(failed, nodes[0]) == "topology spread", "z0 would hold 2 against z2's 0"
    assert index.violation(failed, nodes[2]) is None
    index.add(failed, "n2")  # live: z0 1, z1 1, z2 1
    assert index.violation(other, nodes[0]) == "topology spread", "z0 2, z1 0: the Failed pod left no gap in z0"
    index.remove(failed)  # live: z0 1, z1 1, z2 0 again
    assert index.violation(other, nodes[2]) is None
    assert index.violation(other, nodes[0]) == "topology spread"


def test_the_next_cycle_counts_on_the_domains_kept_for_equal_nodes_and_works_them_out_when_a_node_changed() -> None:
    """Which nodes are eligible, and their domains, read the node records alone: a later snapshot with equal nodes
    (its own dict of them) is answered from the kept ones; one where a node moved zone, from its own."""
    zone = (SpreadConstraint(max_skew=1, topology_key=ZONE, selector=LabelSelector(match_labels=(("app", "web"),))),)

    def web(name: str, on: str) -> PodRecord:
        return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=on, phase="Running",
                         labels={"app": "web"}, hard_spread=zone)

    nodes = [node(f"n{i}", labels={HOST: f"n{i}", ZONE: f"z{i}"}) for i in range(3)]
    a, b = web("a", "n0"), web("b", "n0")
    first = cluster(*nodes, pods=(a, b))
    assert SpreadIndex(first).violation(b, nodes[2]) is None, "z2 0 + 1 against 0"
    kept = first.derived.spread_domains
    assert len(kept) == 1
    again = dataclasses.replace(cluster(*[dataclasses.replace(n) for n in nodes], pods=(a, b)), derived=first.derived)
    assert SpreadIndex(again).violation(b, nodes[2]) is None
    assert SpreadIndex(again).violation(b, nodes[0]) == "topology spread", "z0 2 against 0"
    assert len(kept) == 1, "the same shape on equal nodes: its domains kept"
    moved = [nodes[0], nodes[1], node("n2", labels={HOST: "n2", ZONE: "z0"})]  # n2 joins z0: two domains
    later = dataclasses.replace(cluster(*moved, pods=(a, b)), derived=first.derived)
    assert SpreadIndex(later).violation(b, moved[2]) == "topology spread", \
        "z0 (n0, n2) would hold 2 against z1's 0: n2's new zone counted, not the kept one"
    assert SpreadIndex(later).violation(b, moved[1]) is None
