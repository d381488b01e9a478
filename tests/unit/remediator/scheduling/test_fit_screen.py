"""The screen of a search's nodes: a screened search answers as a walk of every node does, node for node and count
for count, whatever the plan has since excluded or promised."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from remediator.model.records import PodRecord, Taint, Toleration
from remediator.scheduling.fit_screen import CURRENT_NODE, EXCLUDED, FitScreen, ScreenSlot, build_screen, refusals
from remediator.scheduling.nodefit import FitResult, find_destination, pod_request_summary, screen_nodes
from remediator.scheduling.offering import Offering
from remediator.state.snapshot import Snapshot
from tests.unit.remediator.scheduling.test_nodefit import BAD, GI, cluster, node, pod

GPU = "nvidia.com/gpu"


def random_cluster(rng: random.Random, count: int) -> Snapshot:
    """Nodes of every kind node fit's two kept checks tell apart (tainted, cordoned, labelled, GPU, full), with
    pods filling them."""
    nodes, pods = [], []
    for i in range(count):
        extra = {GPU: rng.choice((1, 2, 4))} if rng.random() < 0.3 else None
        nodes.append(node(f"n{i}", cpu=rng.choice((1000, 2000, 4000)), pods=rng.choice((3, 110)), extra=extra,
                          taints=(BAD,) if rng.random() < 0.1 else (), unschedulable=rng.random() < 0.05,
                          labels={"pool": rng.choice(("a", "b"))}))
        for j in range(rng.randrange(4)):
            pods.append(pod(f"p{i}-{j}", on=f"n{i}", cpu=rng.choice((100, 500, 900)), memory=GI,
                            extra={GPU: 1} if extra and rng.random() < 0.5 else None))
    return cluster(*nodes, pods=tuple(pods))


def random_mover(rng: random.Random, snap: Snapshot) -> PodRecord:
    return pod("mover", on=rng.choice([*snap.nodes, ""]), cpu=rng.choice((100, 600, 1500, 3500, 4500)),
               extra={GPU: 1} if rng.random() < 0.5 else None,
               node_selector={"pool": "a"} if rng.random() < 0.3 else {},
               tolerations=(Toleration(key=BAD.key, operator="Exists"),) if rng.random() < 0.3 else ())


@pytest.mark.parametrize("seed", range(40))
def test_a_screened_search_answers_as_a_walk_of_every_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_cluster(rng, rng.randrange(20, 80))
    order = tuple(rng.sample(sorted(snap.nodes), len(snap.nodes)))
    requested = {name: pod_request_summary(snap.pods(name)) for name in snap.nodes}
    offering = Offering(snap.nodes)
    screens: dict[tuple[object, ...], FitScreen] = {}
    reserved: dict[str, dict[str, int]] = {}
    exclude: set[str] = set()
    screened_some = 0
    for _ in range(30):
        mover = random_mover(rng, snap)
        placement = (mover.tolerations, tuple(mover.node_selector.items()))
        requests = tuple(mover.requests.items())
        node_reasons: dict[str, str | None] = {}
        room_reasons: dict[str, str | None] = {}
        key = (placement, requests)
        if key not in screens:  # built from a first pod; later pods alike read the same tables
            screens[key] = screen_nodes(mover, snap, order, offering=offering, planned_taints={},
                                        node_reasons=node_reasons, requested=requested, room_reasons=room_reasons)
        for first_fit in (True, False):
            kwargs = {"exclude": exclude, "reserved": reserved, "requested": requested, "nodes": order,
                      "offering": offering, "first_fit": first_fit}
            walked = find_destination(mover, snap, **kwargs)  # type: ignore[arg-type]
            screened = find_destination(mover, snap, screen=screens[key], **kwargs)  # type: ignore[arg-type]
            assert (screened.node, screened.reason, dict(screened.rejections), screened.total) == \
                (walked.node, walked.reason, dict(walked.rejections), walked.total)
            screened_some += walked.node is None
        # the plan goes on: a node excluded, room promised on another (only ever more of it)
        if rng.random() < 0.5:
            exclude.add(rng.choice(order))
        held = reserved.setdefault(rng.choice(order), {})
        for resource, quantity in (("cpu", rng.choice((100, 800))), ("pods", 1), (GPU, rng.choice((0, 1)))):
            held[resource] = held.get(resource, 0) + quantity
    assert screened_some  # some searches found no node: their counts were put right


def test_the_screen_walks_only_the_nodes_both_kept_checks_pass() -> None:
    snap = cluster(node("full", cpu=500), node("tainted", taints=(BAD,)), node("open"), node("open2"))
    mover = pod(on="open2", cpu=600)
    screen = screen_nodes(mover, snap, ("full", "tainted", "gone", "open", "open2"), offering=None, planned_taints={},
                          node_reasons={}, requested={n: {} for n in snap.nodes}, room_reasons={})
    assert screen.open == ("open", "open2")
    assert screen.refused == {"full": "insufficient cpu", "tainted": "untolerated taint nodemedic.io/bad"}
    assert screen.placed == {"tainted"}
    assert screen.total == 4  # "gone" is no node: not counted, as a walk does not count it


def test_refusals_put_right_the_own_excluded_and_promised_nodes() -> None:
    screen = build_screen(["own", "out", "held", "placed", "other"], Counter({"no gpu": 2}), {
        name: node(name) for name in ("own", "out", "held", "placed", "other")},
        placement=lambda n: "untolerated taint t" if n.name == "placed" else None,
        room=lambda n: "insufficient cpu")
    assert screen.base == Counter({"insufficient cpu": 4, "untolerated taint t": 1, "no gpu": 2})
    asked: list[str] = []

    def held_room(name: str) -> str | None:
        asked.append(name)
        return "too many pods"

    counts = refusals(screen, Counter({"lower preference": 3}), current="own", exclude={"out", "own"},
                      reserved={"held": {}, "placed": {}, "out": {}, "own": {}, "elsewhere": {}}, held_room=held_room)
    assert counts == {CURRENT_NODE: 1, EXCLUDED: 1, "too many pods": 1, "untolerated taint t": 1,
                      "insufficient cpu": 1, "no gpu": 2, "lower preference": 3}
    assert asked == ["held"]  # the own, excluded and placement-refused nodes are refused before room is looked at


def test_a_promise_that_made_a_refused_node_take_the_pod_is_no_screen_s_answer() -> None:
    screen = build_screen(["n1"], Counter(), {"n1": node("n1")}, placement=lambda n: None,
                          room=lambda n: "insufficient cpu")
    with pytest.raises(AssertionError, match="n1: room promised"):
        refusals(screen, Counter(), current="", exclude=(), reserved={"n1": {}}, held_room=lambda name: None)


def test_a_slot_is_due_for_a_screen_only_after_a_search_through_it_found_no_node() -> None:
    slot = ScreenSlot(("a", "b"))
    assert not slot.due()
    slot.failed = True
    assert slot.due()
    slot.screen = build_screen([], Counter(), {}, placement=lambda n: None, room=lambda n: None)
    assert not slot.due()


def test_a_screened_search_counts_every_node_when_none_fits_and_finds_the_same_first_fit() -> None:
    snap = cluster(*(node(f"n{i}", cpu=1000) for i in range(6)), node("big", cpu=8000),
                   pods=(pod("x", on="n0", cpu=900),))
    order = (*(f"n{i}" for i in range(6)), "big")
    requested = {n: pod_request_summary(snap.pods(n)) for n in snap.nodes}
    mover = pod(on="n1", cpu=2000, tolerations=(Toleration(key="k", operator="Exists"),))
    screen = screen_nodes(mover, snap, order, offering=None, planned_taints={"n2": [Taint("k2")]},
                          node_reasons={}, requested=requested, room_reasons={})
    assert screen.open == ("big",)
    found = find_destination(mover, snap, exclude=set(), requested=requested, nodes=order, first_fit=True,
                             planned_taints={"n2": [Taint("k2")]}, screen=screen)
    assert found == FitResult(node="big", reason="fits big")
    none = find_destination(mover, snap, exclude={"big"}, requested=requested, nodes=order, first_fit=True,
                            planned_taints={"n2": [Taint("k2")]}, screen=screen)
    assert none.reason == "0/7 nodes fit: 4 insufficient cpu, 1 current node, 1 excluded, 1 untolerated taint k2"
