"""Offering: node fit looks closely only at the nodes offering the scarce resources a pod asks for, and finds the
same node as a search of every node."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter

import pytest

from remediator.model.records import NodeRecord, PodRecord, Toleration
from remediator.scheduling.nodefit import find_destination
from remediator.scheduling.offering import Offering
from tests.unit.remediator.scheduling.test_nodefit import BAD, HOME, cluster, node, pod

GPU = "nvidia.com/gpu"
FPGA = "example.com/fpga"


def test_only_resources_some_node_lacks_narrow_a_search() -> None:
    offering = Offering({n.name: n for n in (node("a", extra={GPU: 1}), node("b"))})
    assert offering.wanted(pod(extra={GPU: 1})) == (GPU,)
    assert offering.wanted(pod()) == ()  # cpu and memory: every node offers them
    assert offering.wanted(pod(extra={GPU: 0})) == ()  # a zero request needs nothing
    assert offering.wanted(pod(extra={FPGA: 1})) == ()  # no node offers it: nothing to narrow to


def test_the_split_keeps_order_and_counts_each_node_left_out_under_the_first_resource_it_lacks() -> None:
    nodes = [node("both", extra={GPU: 1, FPGA: 1}), node("gpu", extra={GPU: 1}), node("fpga", extra={FPGA: 1}),
             node("none"), node("gpu2", extra={GPU: 2, FPGA: 0})]
    offering = Offering({n.name: n for n in nodes})
    found, lacking = offering.split(["gpu2", "none", "gpu", "ghost", "fpga", "both"], (FPGA, GPU))
    assert found == ["gpu2", "both"]  # a zero quantity is still offered: the room check says "insufficient"
    assert lacking == Counter({f"no {FPGA}": 2, f"no {GPU}": 1})  # "ghost" is no node: in neither


def test_the_split_of_a_tuple_is_kept_for_the_next_pod_and_of_a_list_is_not() -> None:
    offering = Offering({n.name: n for n in (node("a", extra={GPU: 1}), node("b"))})
    names = ("b", "a")
    first, _ = offering.split(names, (GPU,))
    assert offering.split(names, (GPU,))[0] is first
    assert offering.split(tuple(["b", "a"]), (GPU,))[0] is not first  # another tuple: split again
    listed = ["b", "a"]
    assert offering.split(listed, (GPU,))[0] is not offering.split(listed, (GPU,))[0]  # a list may change


def test_a_search_that_finds_nothing_counts_the_nodes_left_out_as_lacking_the_resource() -> None:
    snap = cluster(HOME, node("plain"), node("tainted", taints=(BAD,)), node("busy", extra={GPU: 1}),
                   pods=(pod("holder", on="busy", extra={GPU: 1}),))
    mover = pod(extra={GPU: 1})
    plain = find_destination(mover, snap, exclude=())
    assert plain.reason == ("0/4 nodes fit: 1 current node, 1 insufficient nvidia.com/gpu, 1 no nvidia.com/gpu, "
                            "1 untolerated taint nodemedic.io/bad")
    narrowed = find_destination(mover, snap, exclude=(), offering=Offering(snap.nodes))
    assert narrowed.node is None
    assert narrowed.reason == "0/4 nodes fit: 3 no nvidia.com/gpu, 1 insufficient nvidia.com/gpu"


def _random_cluster(rng: random.Random) -> tuple[list[NodeRecord], list[PodRecord]]:
    nodes = []
    for i in range(12):
        extra = {GPU: rng.choice((1, 2, 4))} if rng.random() < 0.3 else {}
        if rng.random() < 0.2:
            extra[FPGA] = rng.choice((0, 1))
        nodes.append(node(f"n{i}", cpu=rng.choice((1000, 4000)), extra=extra,
                          taints=(BAD,) if rng.random() < 0.2 else ()))
    pods = [pod(f"p{j}", on=f"n{rng.randrange(12)}", cpu=rng.choice((100, 900)),
                extra={r: 1 for r in (GPU, FPGA) if rng.random() < 0.3}) for j in range(20)]
    return nodes, pods


@pytest.mark.parametrize("first_fit", [True, False], ids=["first-fit", "best-fit"])
@pytest.mark.parametrize("seed", range(40))
def test_a_narrowed_search_finds_the_same_node_as_a_search_of_every_node(seed: int, first_fit: bool) -> None:
    rng = random.Random(seed)
    nodes, pods = _random_cluster(rng)
    snap = cluster(*nodes, pods=tuple(pods))
    shuffled = [n.name for n in nodes]
    rng.shuffle(shuffled)
    order = tuple(shuffled)
    offering = Offering(snap.nodes)
    tolerant = (Toleration(key=BAD.key, operator="Exists"),)
    for p in pods:
        mover = dataclasses.replace(p, tolerations=tolerant) if rng.random() < 0.5 else p
        every = find_destination(mover, snap, exclude=(), nodes=order, first_fit=first_fit)
        narrowed = find_destination(mover, snap, exclude=(), nodes=order, first_fit=first_fit, offering=offering)
        assert narrowed.node == every.node
        if every.node is not None:
            assert narrowed.reason == every.reason
        else:
            assert sum(map(int, _counts(narrowed.reason))) == sum(map(int, _counts(every.reason)))


def _counts(reason: str) -> list[str]:
    return [part.split()[0] for part in reason.split(": ", 1)[1].split(", ")]
