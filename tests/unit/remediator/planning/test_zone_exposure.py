"""Zone-loss exposure of the zone article's Deployment D and of the cases where no better spread exists, and what a
workload keeps for the next cycle."""

from __future__ import annotations

import dataclasses

import pytest

from remediator.model.plan import ZoneMove
from remediator.model.records import Condition, OwnerRef, PodRecord
from remediator.planning.zone_exposure import zone_exposure
from tests.unit.remediator.strategies.cluster import node, pod, snapshot

ZONE = "topology.kubernetes.io/zone"
NODES = [node(f"n-{z}", labels={ZONE: z}) for z in ("a", "b", "c")]


def d(i: int, zone: str, rs: str = "d-7d9f") -> PodRecord:
    return pod(f"{rs}-{i}", f"n-{zone}", owner_name=rs, labels={"app": "d", "pod-template-hash": rs[2:]})


@pytest.mark.parametrize(("zones", "surviving", "best", "moves", "exposed"), [
    ("abbccc", 0.5, 4 / 6, (ZoneMove("c", "a", 1),), True),  # the article's first placement
    ("abcccc", 2 / 6, 4 / 6, (ZoneMove("c", "a", 1), ZoneMove("c", "b", 1)), True),  # after its rolling update
    ("aabbcc", 4 / 6, 4 / 6, (), False),
    ("ab", 0.5, 0.5, (), False),  # two replicas: half is the best three zones allow
    ("aa", 0.0, 0.5, (ZoneMove("a", "b", 1),), True),
    ("aaaaaaabbcc", 4 / 11, 7 / 11, (ZoneMove("a", "b", 2), ZoneMove("a", "c", 1)), True),
], ids=["1-2-3", "1-1-4", "2-2-2", "two-replicas-spread", "two-replicas-together", "7-2-2"])
def test_the_share_surviving_the_worst_zone_and_the_moves_to_the_best(
        zones: str, surviving: float, best: float, moves: tuple[ZoneMove, ...], exposed: bool) -> None:
    [z] = zone_exposure(snapshot(NODES, [d(i, zone) for i, zone in enumerate(zones)]), 0.6)
    assert (z.workload, z.surviving, z.best, z.moves) == ("Deployment/d", pytest.approx(surviving),
                                                          pytest.approx(best), moves if exposed else ())
    assert z.exposed(0.6) is exposed


def test_both_revisions_of_a_rollout_count_as_the_deployment() -> None:
    pods = [d(0, "c"), d(1, "c"), d(4, "c"), d(2, "a", rs="d-5b6c"), d(3, "b", rs="d-5b6c")]
    [z] = zone_exposure(snapshot(NODES, pods), 0.6)
    assert z.workload == "Deployment/d" and dict(z.per_zone) == {"a": 1, "b": 1, "c": 3}


def test_daemonsets_single_replicas_and_bare_pods_are_not_workloads_at_risk() -> None:
    ds = [pod(f"ds-{z}", f"n-{z}", owner="DaemonSet", owner_name="ds") for z in "abc"]
    single = [pod("one", "n-a", owner_name="one-rs")]
    bare = [PodRecord(namespace="default", name="bare", uid="bare", node_name="n-a", phase="Running",
                      owners=(OwnerRef("ReplicaSet", "x", "x", controller=False),))]
    assert zone_exposure(snapshot(NODES, ds + single + bare), 1.0) == []


def test_a_workload_of_one_owner_keeps_its_answer_while_its_pods_the_zones_and_the_share_stay() -> None:
    first = snapshot(NODES, [d(i, zone) for i, zone in enumerate("abbccc")])
    [z] = zone_exposure(first, 0.6)
    assert z.moves and zone_exposure(dataclasses.replace(first), 0.6) == [z]
    assert zone_exposure(dataclasses.replace(first), 0.6)[0] is z  # kept, not worked out again
    # A lower share: not exposed, no moves.
    [low] = zone_exposure(dataclasses.replace(first), 0.4)
    assert low.moves == () and low.surviving == z.surviving and low.best == pytest.approx(4 / 6)
    # Zone a's only node NotReady: two zones left, an even spread keeps half.
    gone = [*NODES[1:], dataclasses.replace(NODES[0], conditions=(Condition("Ready", "False"),))]
    [two] = zone_exposure(dataclasses.replace(first, nodes={n.name: n for n in gone}), 0.4)
    assert two.best == pytest.approx(0.5) and two.surviving == pytest.approx(0.5)
    # The owner's pods changed (a new list, as the cache hands it): one replica moved from c to a.
    owner = next(iter(first.pods_by_owner))
    moved = [d(i, zone) for i, zone in enumerate("aabbcc")]
    [even] = zone_exposure(dataclasses.replace(first, pods_by_owner={owner: moved}), 0.4)
    assert even.surviving == pytest.approx(4 / 6)
