"""A failed search answered again for an alike pod: the same answer a full search of that pod gives, node by node
(its own node and the other pod's asked again), only while the books stay as they were, and never for pods or nodes
that differ in what a search reads."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import remediator.planning.books as books_module
from remediator.model.records import HOSTNAME_LABEL, Effect, LabelSelector, NodeRecord, SpreadConstraint, Taint
from remediator.planning.alike_searches import AlikeSearches
from remediator.planning.books import Books
from remediator.planning.gate import Gate
from remediator.scheduling.nodefit import FitResult, find_destination
from remediator.scheduling.zonespread import ZONE
from tests.unit.remediator.planning.test_books import books_for
from tests.unit.remediator.strategies.cluster import node, pod, snapshot

TYPE = "node.kubernetes.io/instance-type"
KEEP_OUT = Taint("keep-out", "", Effect.NO_SCHEDULE)


def _zoned(name: str, zone: str, kind: str, **kw: object) -> NodeRecord:
    n = node(name, **kw)  # type: ignore[arg-type]
    return NodeRecord(name=n.name, labels={HOSTNAME_LABEL: name, ZONE: zone, TYPE: kind}, taints=n.taints,
                      unschedulable=n.unschedulable, conditions=n.conditions, allocatable=n.allocatable)


def _cluster(beside_r1: int = 4000) -> tuple[Books, list[str]]:
    """Three replicas (3 cores each) no node takes, each for its own reason; two replicas' nodes of another instance
    type than the third's, all in zone a. `beside_r1`: the cpu of the pod beside r1 (4000: no room for another)."""
    nodes = [_zoned("a1", "a", "big", cpu=8000), _zoned("a2", "a", "big", cpu=8000),
             _zoned("a3", "a", "small", cpu=8000, pods=2),
             NodeRecord(name="b1", labels={HOSTNAME_LABEL: "b1", ZONE: "b"}, taints=(KEEP_OUT,),
                        conditions=node("b1").conditions, allocatable=node("b1").allocatable),
             _zoned("b2", "b", "big", unschedulable=True), _zoned("c1", "c", "big", cpu=2000)]
    replicas = [pod(f"r{i}", f"a{i}", owner_name="web", cpu=3000, labels={"app": "web"}) for i in (1, 2, 3)]
    fillers = [pod("f1", "a1", cpu=beside_r1), pod("f2", "a2", cpu=4000), pod("f3", "a3", cpu=1000)]
    return books_for(snapshot(nodes, [*replicas, *fillers])), [n.name for n in nodes]


def _searched(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many nodes each search the books run looks at."""
    sizes: list[int] = []

    def counting(*args: object, nodes: Sequence[str], **kw: object) -> FitResult:
        sizes.append(len(nodes))
        return find_destination(*args, nodes=nodes, **kw)  # type: ignore[arg-type]
    monkeypatch.setattr(books_module, "find_destination", counting)
    return sizes


def test_an_alike_pod_gets_the_answer_its_own_full_search_gives_from_two_nodes_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    books, names = _cluster()
    fresh, _ = _cluster()
    destinations = tuple(names)
    sizes = _searched(monkeypatch)
    pods = {p.name: p for ps in books.snapshot.pods_by_node.values() for p in ps}
    first = books.place(pods["r1"], destinations, None, cache=False, alike=())
    assert first == (None, "0/6 nodes fit: 2 insufficient cpu, 1 current node, 1 too many pods, 1 unschedulable, "
                           "1 untolerated taint keep-out")
    assert sizes == [6]
    # r3's node takes no more pods, where r1's own node is short of cpu for r3: both asked again, nothing else.
    third = books.place(pods["r3"], destinations, None, cache=False, alike=())
    assert third == (None, "0/6 nodes fit: 3 insufficient cpu, 1 current node, 1 unschedulable, "
                           "1 untolerated taint keep-out")
    assert sizes == [6, 1, 1]
    assert third == fresh.place(pods["r3"], destinations, None, cache=False)  # a full search of its own
    assert books.place(pods["r2"], destinations, None, cache=False, alike=()) == fresh.place(
        pods["r2"], destinations, None, cache=False)


def test_the_other_pods_node_taking_this_one_is_its_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    books, names = _cluster(beside_r1=2000)  # r1 leaves 3 cores free on a1: another replica fits there
    fresh, _ = _cluster(beside_r1=2000)
    pods = {p.name: p for ps in books.snapshot.pods_by_node.values() for p in ps}
    destinations = tuple(names)
    sizes = _searched(monkeypatch)
    assert books.place(pods["r1"], destinations, None, cache=False, alike=())[0] is None
    assert books.place(pods["r2"], destinations, None, cache=False, alike=()) == ("a1", "")
    assert sizes == [6, 1]
    assert fresh.place(pods["r2"], destinations, None, cache=False) == ("a1", "")


def test_nothing_is_answered_again_once_the_books_changed_or_for_another_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    books, names = _cluster()
    pods = {p.name: p for ps in books.snapshot.pods_by_node.values() for p in ps}
    destinations = tuple(names)
    books.place(pods["r1"], destinations, None, cache=False, alike=())
    sizes = _searched(monkeypatch)
    books.promise(pod("elsewhere", "c1", cpu=1), "b2")  # room promised somewhere: the books moved on
    books.place(pods["r3"], destinations, None, cache=False, alike=())
    assert sizes == [6]
    books.place(pods["r2"], destinations, lambda p, n, after: None, cache=False, alike=())  # another rule
    books.place(pods["r2"], list(destinations), None, cache=False, alike=())  # other destinations
    books.place(pods["r2"], destinations, None, cache=False)  # a strategy that says nothing of its rule
    assert sizes == [6, 6, 6, 6]


def test_what_makes_two_searches_alike() -> None:
    searches, rule, destinations = AlikeSearches(), object(), ("a1", "b1")
    web = pod("w1", "a1", owner_name="web", labels={"app": "web"})
    twin = pod("w2", "a2", owner_name="web", labels={"app": "web"})
    a1, a2, b1 = _zoned("a1", "a", "big"), _zoned("a2", "a", "small"), _zoned("b1", "b", "big")

    def key(p: object, n: NodeRecord, **kw: object) -> object:
        args: dict[str, object] = {"destinations": destinations, "rule": rule, "alike": (), "spreads": ()} | kw
        return searches.key(p, n, **args)  # type: ignore[arg-type]
    assert key(web, a1) == key(twin, a2)  # the instance type is not read of a pod's own node
    assert key(web, a1) != key(twin, b1)  # its zone is (the workload's zone spread)
    assert key(web, a1) != key(pod("w3", "a2", owner_name="web", labels={"app": "web"}, cpu=101), a2)
    assert key(web, a1) != key(twin, a2, alike="zone-a")
    assert key(web, a1) != key(twin, a2, destinations=list(destinations))
    assert key(web, a1) != key(twin, a2, rule=object())
    per_host = SpreadConstraint(1, HOSTNAME_LABEL, LabelSelector(match_labels=(("app", "web"),)))
    assert key(web, a1, spreads=(per_host,)) is None  # its count per node differs between any two nodes
    per_type = SpreadConstraint(1, TYPE, LabelSelector(match_labels=(("app", "web"),)))
    assert key(web, a1, spreads=(per_type,)) != key(twin, a2, spreads=(per_type,))


def test_a_deschedule_strategy_asking_where_a_pod_could_go_gets_the_same_alike_answers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    books, _ = _cluster()
    pods = {p.name: p for ps in books.snapshot.pods_by_node.values() for p in ps}
    gate = Gate(books, strategy="RemovePodsViolatingNodeAffinity", terminal_pods=False, evict_taints={},
                breaker_open=False)
    fresh = Gate(_cluster()[0], strategy="RemovePodsViolatingNodeAffinity", terminal_pods=False, evict_taints={},
                 breaker_open=False)
    sizes = _searched(monkeypatch)
    assert [gate.fits(pods[r], alike=()) for r in ("r1", "r2", "r3")] == [None, None, None]
    assert sizes == [6, 1, 1, 1, 1]
    assert [fresh.fits(pods[r]) for r in ("r1", "r2", "r3")] == [None, None, None]
