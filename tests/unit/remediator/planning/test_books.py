"""One plan's books: what a move books (room promised on its destination, freed on its source, the PDB disruption and
the limits it uses), what an earlier cycle's eviction under way books, and the order destinations are tried in."""

from __future__ import annotations

import datetime as dt

from remediator.model.plan import Plan, PlannedEviction, Protected
from remediator.model.records import LabelSelector, PdbRecord, PodRecord
from remediator.planning.books import SCREEN_LEAST, Books
from remediator.planning.memory import PlannerMemory
from remediator.policy.limits import Limits
from remediator.policy.model import Policy
from remediator.state.snapshot import Snapshot
from tests.unit.remediator.strategies.cluster import node, pod, snapshot

NO_COOLDOWN = Limits(owner_cooldown=dt.timedelta(0))


def books_for(s: Snapshot, *, leaving: tuple[tuple[PodRecord, str | None], ...] = ()) -> Books:
    return Books(s, Policy(limits=NO_COOLDOWN), Plan(), PlannerMemory(), exclude=set(), planned_taints={},
                 carrying={}, leaving=leaving)


def test_a_committed_move_frees_its_source_and_holds_room_on_its_destination() -> None:
    a = pod("a", "n1", cpu=300)
    books = books_for(snapshot([node("n1"), node("n2")], [a, pod("b", "n1", cpu=200)]))
    assert books.usage("n1")["cpu"] == 500 and books.usage("n2").get("cpu", 0) == 0
    destination, why = books.place(a, ["n2"], None, cache=False)
    assert (destination, why) == ("n2", "")
    books.commit(PlannedEviction(a, "Test", "test"), destination)
    assert books.usage("n1")["cpu"] == 200 and books.usage("n2")["cpu"] == 300
    assert books.receiving("n2") and not books.receiving("n1")
    assert books.moved_to == {a.uid: "n2"} and books.evicting == {a.key} and books.decided == {a.key}
    assert [e.destination for e in books.plan.evictions] == ["n2"]
    assert books.limits.taken == 1


def test_a_room_answer_kept_for_equal_requests_is_not_given_for_a_node_room_was_promised_on_since() -> None:
    # n2 has room for one of the two; the second asks after the first was placed there: n2 answered again, full.
    a, b = pod("a", "n1", cpu=3000), pod("b", "n1", cpu=3000)
    books = books_for(snapshot([node("n1", cpu=8000), node("n2")], [a, b]))
    assert books.find(b, ["n2"], None, books.reserved) == ("n2", "fits n2")  # kept: n2 takes 3000 of cpu
    assert books.place(a, ["n2"], None, cache=False) == ("n2", "")
    node_b, why = books.find(b, ["n2"], None, books.reserved)
    assert node_b is None and why == "0/1 nodes fit: 1 insufficient cpu"
    books.unplace(a, "n2")
    assert books.find(b, ["n2"], None, books.reserved) == ("n2", "fits n2")


def test_unplace_gives_back_the_room_a_place_took() -> None:
    a = pod("a", "n1", cpu=300)
    books = books_for(snapshot([node("n1"), node("n2")], [a]))
    books.place(a, ["n2"], None, cache=False)
    assert books.usage("n2")["cpu"] == 300
    books.unplace(a, "n2")
    assert books.usage("n2").get("cpu", 0) == 0 and not books.receiving("n2")


def test_a_pod_too_big_for_every_node_is_refused_and_its_shape_is_not_searched_again() -> None:
    big, twin = pod("big", "n1", cpu=4000), pod("twin", "n1", cpu=4000)
    books = books_for(snapshot([node("n1"), node("n2", cpu=1000)], [big, twin, pod("c", "n1", cpu=100)]))
    destination, why = books.place(big, None, None, cache=True)
    assert destination is None and why
    # The same shape (another pod of the same requests, labels aside) gets the remembered answer.
    assert books.place(twin, None, None, cache=True) == (None, why)


def test_a_pdb_counts_each_committed_disruption_against_what_it_allows() -> None:
    a, b = pod("a", "n1", labels={"app": "web"}), pod("b", "n1", labels={"app": "web"})
    pdb = PdbRecord("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=2)
    s = snapshot([node("n1"), node("n2")], [a, b, pod("other", "n1")])
    s.pdbs = [pdb]
    books = books_for(s)
    assert books.pdb_headroom(a) == {"default/web": 2}
    assert books.pdb_headroom(pod("other", "n1")) == {}
    books.commit(PlannedEviction(a, "Test", "test"), None)
    assert books.pdb_headroom(b) == {"default/web": 1}


def test_replicas_sharing_one_labels_dict_are_matched_to_pdbs_once_and_each_namespace_on_its_own() -> None:
    web = {"app": "web"}
    a, b = pod("a", "n1", labels=web), pod("b", "n1", labels=web)
    elsewhere, equal = pod("c", "n1", labels=web, namespace="shop"), pod("d", "n1", labels={"app": "web"})
    web_pdb = PdbRecord("default", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=1)
    shop_pdb = PdbRecord("shop", "web", LabelSelector(match_labels=(("app", "web"),)), disruptions_allowed=1)
    s = snapshot([node("n1")], [a, b, elsewhere, equal])
    s.pdbs = [web_pdb, shop_pdb]
    books = books_for(s)
    assert books.pdbs_matching(a) == [web_pdb]
    assert books.pdbs_matching(b) is books.pdbs_matching(a), "the same labels dict: matched once"
    assert books.pdbs_matching(elsewhere) == [shop_pdb], "the same dict in another namespace: its own PDBs"
    assert books.pdbs_matching(equal) == [web_pdb]


def test_a_pod_is_decided_once_whatever_is_decided_after() -> None:
    a = pod("a", "n1")
    books = books_for(snapshot([node("n1")], [a]))
    books.decide(Protected(a, "first"), protected=True)
    books.decide(Protected(a, "second"), protected=False)
    assert [p.why for p in books.plan.protected] == ["first"] and books.plan.deferred == []


def test_an_earlier_cycles_eviction_under_way_is_booked_as_this_plans_own_but_not_against_its_limits() -> None:
    a = pod("a", "n1", cpu=300)
    books = books_for(snapshot([node("n1"), node("n2")], [a]), leaving=((a, "n2"),))
    assert a.key in books.decided and a.key in books.evicting and books.moved_to == {a.uid: "n2"}
    assert books.usage("n1").get("cpu", 0) == 0 and books.usage("n2")["cpu"] == 300
    assert books.limits.taken == 0 and books.plan.evictions == []


def test_destinations_are_tried_roomiest_first_then_by_name() -> None:
    s = snapshot([node("small", cpu=1000), node("b-big"), node("a-big")], [pod("x", "b-big", cpu=500)])
    books = books_for(s)
    assert books.by_room(["small", "b-big", "a-big", "gone"]) == ("a-big", "b-big", "small")
    assert books.every_by_room() == ("a-big", "b-big", "small")
    # Most of the nodes, as a set or a mapping (filtered from the whole order), or a few (sorted): the same order
    assert books.by_room({"small", "a-big", "gone"}) == books.by_room({"small": 1, "a-big": 2}) == ("a-big", "small")
    assert books.by_room(iter(["small", "a-big"])) == ("a-big", "small")


def test_searches_through_a_long_tuple_are_screened_after_one_found_no_node_and_answer_as_before() -> None:
    nodes = [node(f"n{i:03}", cpu=1000) for i in range(SCREEN_LEAST + 6)]
    movers = [pod(f"m{i}", "n000", cpu=2000) for i in range(3)]
    s = snapshot(nodes, [*movers, pod("small", "n000", cpu=100)])
    books, plain = books_for(s), books_for(s)
    order = books.every_by_room()
    assert isinstance(order, tuple) and len(order) >= SCREEN_LEAST
    answers = []
    for mover in movers:
        answers.append(books.find(mover, order, None, books.reserved))
        assert answers[-1] == plain.find(mover, list(order), None, plain.reserved)  # a list is never screened
    assert answers[0] == (None, f"0/{len(nodes)} nodes fit: {len(nodes) - 1} insufficient cpu, 1 current node")
    slots = list(books._screens.values())
    assert len(slots) == 1 and slots[0].screen is not None and slots[0].screen.open == ()
    # short tuples and room counted with what leaves are walked whole; no screen once room may shrink
    assert books._screen_slot(order[:SCREEN_LEAST - 1], (), books.reserved) is None
    assert books._screen_slot(order, (), {}) is None
    books.promise(pod("odd", "n000", cpu=-5), "n001")
    assert books._screen_slot(order, (), books.reserved) is None
