"""ZoneSpread: a balance move is refused ("zone spread") only when it leaves the owner's zone skew above both its
current skew and 1, counted over the zones of schedulable nodes, and planned moves (and moves taken back) count."""

from __future__ import annotations

import datetime as dt

from remediator.model.records import NodeRecord, OwnerRef, PodRecord
from remediator.scheduling.zonespread import ZONE, ZoneSpread
from remediator.state.snapshot import Snapshot

OWNER = OwnerRef("ReplicaSet", "web", "rs-web", controller=True)


def _nodes(*zones: str, unschedulable: tuple[str, ...] = ()) -> list[NodeRecord]:
    return [NodeRecord(f"n-{z}", labels={ZONE: z}, unschedulable=z in unschedulable) for z in zones]


def _pods(**per_zone: int) -> list[PodRecord]:
    return [PodRecord(namespace="ns", name=f"web-{z}-{i}", uid=f"uid-{z}-{i}", node_name=f"n-{z}", phase="Running",
                      owners=(OWNER,))
            for z, n in per_zone.items() for i in range(n)]


def _spread(nodes: list[NodeRecord], pods: list[PodRecord]) -> ZoneSpread:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return ZoneSpread(Snapshot(now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), nodes={n.name: n for n in nodes},
                               pods_by_node=by_node, pods_by_owner={OWNER.uid: pods}))


def _node(nodes: list[NodeRecord], zone: str) -> NodeRecord:
    return next(n for n in nodes if n.labels.get(ZONE) == zone)


def test_a_move_that_worsens_an_even_spread_past_one_is_refused() -> None:
    nodes, pods = _nodes("a", "b"), _pods(a=2, b=2)
    assert _spread(nodes, pods).worse(pods[0], _node(nodes, "b")) == "zone spread"


def test_a_move_that_evens_the_spread_out_or_stays_within_one_is_fine() -> None:
    nodes = _nodes("a", "b", "c")
    pods = _pods(a=3, b=1, c=1)
    spread = _spread(nodes, pods)
    assert spread.worse(pods[0], _node(nodes, "b")) is None  # 2/2/1
    pods = _pods(a=1, b=1, c=0)
    assert _spread(nodes, pods).worse(pods[0], _node(nodes, "c")) is None  # skew 1 stays 1


def test_a_move_that_keeps_an_already_bad_skew_is_fine_but_one_that_raises_it_is_not() -> None:
    nodes = _nodes("a", "b", "c")
    pods = _pods(a=4, b=2, c=0)
    spread = _spread(nodes, pods)
    assert spread.worse(pods[4], _node(nodes, "a")) == "zone spread"  # b -> a: 5/1/0, skew 5 > 4
    assert spread.worse(pods[0], _node(nodes, "b")) is None  # a -> b: 3/3/0, skew 3


def test_moves_within_a_zone_unowned_pods_unzoned_nodes_and_one_zone_clusters_are_never_worse() -> None:
    nodes, pods = _nodes("a", "b"), _pods(a=2, b=2)
    spread = _spread(nodes, pods)
    assert spread.worse(pods[0], NodeRecord("n-a2", labels={ZONE: "a"})) is None
    assert spread.worse(pods[0], NodeRecord("bare")) is None
    assert spread.worse(pods[0], "n-b") is None  # not a NodeRecord
    lone = PodRecord(namespace="ns", name="lone", uid="uid-lone", node_name="n-a")
    assert spread.worse(lone, _node(nodes, "b")) is None
    one_zone, pods = _nodes("a", "b", unschedulable=("b",)), _pods(a=2)
    assert _spread(one_zone, pods).worse(pods[0], _node(one_zone, "b")) is None


def test_an_empty_schedulable_zone_counts_in_the_skew() -> None:
    nodes, pods = _nodes("a", "b", "c"), _pods(a=2, b=2)  # c empty: skew 2 already
    assert _spread(nodes, pods).worse(pods[0], _node(nodes, "c")) is None  # 1/2/1
    assert _spread(nodes, pods).worse(pods[0], _node(nodes, "b")) == "zone spread"  # 1/3/0


def test_finished_pods_do_not_count() -> None:
    nodes = _nodes("a", "b")
    old = PodRecord(namespace="ns", name="old", uid="uid-old", node_name="n-b", phase="Failed", owners=(OWNER,))
    pods = [*_pods(a=2, b=1), old]
    assert _spread(nodes, pods).worse(pods[0], _node(nodes, "b")) is None  # 1/2 live


def test_a_planned_move_counts_for_the_next_verdict_and_taking_it_back_restores_it() -> None:
    nodes, pods = _nodes("a", "b"), _pods(a=2, b=1)
    spread = _spread(nodes, pods)
    assert spread.worse(pods[0], _node(nodes, "b")) is None  # 1/2
    spread.add(pods[0], "n-b")
    assert spread.worse(pods[1], _node(nodes, "b")) == "zone spread"  # 0/3
    assert spread.worse(pods[0], _node(nodes, "a")) is None  # the moved pod back: 2/1
    spread.remove(pods[0], "n-b")
    assert spread.worse(pods[1], _node(nodes, "b")) is None


def test_a_move_planned_before_the_owner_was_counted_is_counted_from_the_plan() -> None:
    nodes, pods = _nodes("a", "b"), _pods(a=2, b=1)
    spread = _spread(nodes, pods)
    spread.add(pods[0], "n-b")  # nothing counted yet
    assert spread.worse(pods[1], _node(nodes, "b")) == "zone spread"
    assert _spread(nodes, pods).worse(pods[1], _node(nodes, "b")) is None
