"""PodAffinityIndex.conflict, directly: anti-affinity both ways per topology domain, affinity met by a matching pod in
the node's domain (or by the first pod of its group), namespaces, finished pods, and planned arrivals added and taken
back (nodeFit's view of the same index is tested in test_nodefit.py)."""

from __future__ import annotations

import datetime as dt

from remediator.model.records import LabelSelector, NodeRecord, PodAffinityTerm, PodRecord
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.state.snapshot import Snapshot

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
WEB = LabelSelector(match_labels=(("app", "web"),))
DB = LabelSelector(match_labels=(("app", "db"),))
QUEUE = LabelSelector(match_labels=(("app", "queue"),))


def _node(name: str, zone: str | None = "a") -> NodeRecord:
    labels = {HOST: name} | ({ZONE: zone} if zone is not None else {})
    return NodeRecord(name=name, labels=labels)


def _term(selector: LabelSelector | None, key: str = HOST, *, namespaces: tuple[str, ...] = ("ns",),
          any_namespace: bool = False) -> PodAffinityTerm:
    return PodAffinityTerm(selector, namespaces, any_namespace, key)


def _pod(name: str, node: str, app: str = "web", *, ns: str = "ns", phase: str = "Running",
         **fields: object) -> PodRecord:
    return PodRecord(namespace=ns, name=name, uid=f"uid-{name}", node_name=node, phase=phase,
                     labels={"app": app}, **fields)  # type: ignore[arg-type]


def _index(nodes: list[NodeRecord], pods: list[PodRecord]) -> PodAffinityIndex:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return PodAffinityIndex(Snapshot(now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), nodes={n.name: n for n in nodes},
                                     pods_by_node=by_node, pods_by_owner={}))


N1, N2, N3 = _node("n1"), _node("n2"), _node("n3", zone="b")


def test_a_pod_refusing_its_group_conflicts_with_a_node_in_a_domain_holding_one() -> None:
    index = _index([N1, N2, N3], [_pod("w2", "n2")])
    mover = _pod("w1", "n1", required_anti_affinity=(_term(WEB, ZONE),))
    assert index.conflict(mover, N2) == "pod anti-affinity"
    assert index.conflict(mover, N1) == "pod anti-affinity"  # same zone as n2
    assert index.conflict(mover, N3) is None


def test_a_node_without_the_topology_label_cannot_break_a_term() -> None:
    index = _index([N1, _node("bare", zone=None)], [_pod("w2", "n1")])
    mover = _pod("w1", "x", required_anti_affinity=(_term(WEB, ZONE),))
    assert index.conflict(mover, _node("bare", zone=None)) is None


def test_a_pod_never_conflicts_with_itself() -> None:
    mover = _pod("w1", "n1", required_anti_affinity=(_term(WEB),))
    assert _index([N1], [mover]).conflict(mover, N1) is None


def test_an_existing_pods_anti_affinity_keeps_a_matching_pod_out_of_its_domain() -> None:
    guard = _pod("guard", "n2", "db", required_anti_affinity=(_term(WEB, ZONE),))
    index = _index([N1, N2, N3], [guard])
    assert index.conflict(_pod("w1", "n3"), N1) == "existing pods' anti-affinity"
    assert index.conflict(_pod("w1", "n3"), N3) is None
    assert index.conflict(_pod("d1", "n3", "db"), N1) is None


def test_namespaces_a_namespace_selector_and_a_missing_selector() -> None:
    index = _index([N1], [_pod("w2", "n1", ns="other")])
    assert index.conflict(_pod("w1", "x", required_anti_affinity=(_term(WEB),)), N1) is None
    assert index.conflict(_pod("w1", "x", required_anti_affinity=(_term(WEB, any_namespace=True),)),
                          N1) == "pod anti-affinity"  # every namespace, for anti-affinity
    assert index.conflict(_pod("w1", "x", required_anti_affinity=(_term(WEB, namespaces=("other",)),)),
                          N1) == "pod anti-affinity"
    assert index.conflict(_pod("w1", "x", required_anti_affinity=(_term(None),)), N1) is None


def test_an_existing_pods_anti_affinity_keeps_away_only_pods_of_the_namespaces_its_term_selects() -> None:
    guards = [_pod("own", "n1", "db", required_anti_affinity=(_term(WEB),)),  # its own namespace, "ns"
              _pod("listed", "n2", "db", required_anti_affinity=(_term(WEB, namespaces=("other", "third")),)),
              _pod("anywhere", "n3", "db", required_anti_affinity=(_term(WEB, any_namespace=True),)),
              _pod("blind", "n4", "db", required_anti_affinity=(_term(None),))]  # selects no pod
    nodes = [N1, N2, N3, _node("n4")]
    index = _index(nodes, guards)
    held = "existing pods' anti-affinity"
    assert [index.conflict(_pod("w", "x"), n) for n in nodes] == [held, None, held, None]
    assert [index.conflict(_pod("w", "x", ns="other"), n) for n in nodes] == [None, held, held, None]
    assert [index.conflict(_pod("w", "x", ns="third"), n) for n in nodes] == [None, held, held, None]
    assert [index.conflict(_pod("d", "x", "db", ns="other"), n) for n in nodes] == [None] * 4
    # A planned holder of two namespaces keeps both away until it is taken back.
    arrival = _pod("late", "x", "db", ns="third", required_anti_affinity=(_term(WEB, namespaces=("ns", "other")),))
    index.add(arrival, "n4")
    assert [index.conflict(_pod("w", "x", ns=ns), nodes[3]) for ns in ("ns", "other", "third")] == [held, held, None]
    index.remove(arrival, "n4")
    assert [index.conflict(_pod("w", "x", ns=ns), nodes[3]) for ns in ("ns", "other", "third")] == [None] * 3


def test_finished_pods_hold_nothing_and_keep_nothing_away() -> None:
    done = _pod("w2", "n1", phase="Succeeded", required_anti_affinity=(_term(WEB),))
    index = _index([N1], [done])
    assert index.conflict(_pod("w1", "x", required_anti_affinity=(_term(WEB),)), N1) is None
    assert index.conflict(_pod("w1", "x"), N1) is None


def test_affinity_is_met_by_a_matching_pod_in_the_nodes_domain() -> None:
    index = _index([N1, N2, N3], [_pod("db1", "n2", "db")])
    mover = _pod("w1", "n3", required_affinity=(_term(DB, ZONE),))
    assert index.conflict(mover, N1) is None  # zone a holds db1
    assert index.conflict(mover, N3) == "pod affinity"
    assert index.conflict(_pod("w1", "n3", required_affinity=(_term(DB),)), N1) == "pod affinity"  # n1 itself: none


def test_the_first_pod_of_its_group_may_go_anywhere_its_term_matches_itself() -> None:
    index = _index([N1, N3], [])
    first = _pod("w1", "n1", required_affinity=(_term(WEB, ZONE),))
    assert index.conflict(first, N3) is None
    assert index.conflict(_pod("x", "n1", "db", required_affinity=(_term(WEB, ZONE),)), N3) == "pod affinity"
    second = _index([N1, N3], [_pod("w2", "n1")])
    assert second.conflict(first, N3) == "pod affinity"  # a group exists now: it is in zone a


def test_a_namespace_selector_counts_as_no_extra_namespace_for_affinity() -> None:
    index = _index([N1], [_pod("db1", "n1", "db", ns="other")])
    mover = _pod("w1", "x", required_affinity=(_term(DB, any_namespace=True),))
    assert index.conflict(mover, N1) == "pod affinity"


def test_a_planned_arrival_counts_and_taking_it_back_forgets_it() -> None:
    index = _index([N1, N3], [])
    mover = _pod("w1", "x", required_anti_affinity=(_term(WEB, ZONE),))
    assert index.conflict(mover, N1) is None  # the zone domains are built now: the arrival must join them
    arrival = _pod("w2", "n3", required_anti_affinity=(_term(WEB, ZONE),))
    index.add(arrival, "n1")
    assert index.conflict(mover, N1) == "pod anti-affinity"
    assert index.conflict(_pod("w3", "x"), N1) == "existing pods' anti-affinity"  # the arrival's own term
    index.remove(arrival, "n1")
    assert index.conflict(mover, N1) is None
    assert index.conflict(_pod("w3", "x"), N1) is None


def test_a_domain_first_asked_about_after_arrivals_counts_those_still_planned() -> None:
    # Each domain is built when a term first asks about it: zone a before the arrivals, zone b after them.
    index = _index([N1, N2, N3], [_pod("db1", "n2", "db")])
    mover = _pod("w1", "x", required_anti_affinity=(_term(WEB, ZONE),))
    assert index.conflict(mover, N1) is None
    kept, taken_back = _pod("w2", "x"), _pod("w3", "x")
    index.add(kept, "n3")
    index.add(taken_back, "n1")
    index.add(taken_back, "n3")
    index.remove(taken_back, "n3")
    assert index.conflict(mover, N1) == "pod anti-affinity"  # zone a, built before: the arrival joined it
    assert index.conflict(mover, N3) == "pod anti-affinity"  # zone b, built now: from the arrivals
    index.remove(kept, "n3")
    index.remove(taken_back, "n1")
    assert index.conflict(mover, N1) is None
    assert index.conflict(mover, N3) is None
    host_mover = _pod("w4", "x", required_anti_affinity=(_term(DB),))
    assert [index.conflict(host_mover, n) for n in (N1, N2, N3)] == [None, "pod anti-affinity", None]


def test_removing_one_of_two_placements_of_the_same_pod_keeps_the_other() -> None:
    index = _index([N1, N3], [])
    arrival = _pod("w2", "x", required_anti_affinity=(_term(WEB, ZONE),))
    index.add(arrival, "n1")
    index.add(arrival, "n3")
    index.remove(arrival, "n3")
    assert index.conflict(_pod("w3", "x"), N1) == "existing pods' anti-affinity"
    assert index.conflict(_pod("w3", "x"), N3) is None


def test_one_search_answers_every_node_as_a_question_asked_alone_and_keeps_no_zone_answer_for_another_zone() -> None:
    # Zone a holds a web pod and a db pod refusing web pods in its zone; zone b holds a db pod the mover needs in
    # its zone; hostname-level terms make each node its own domain. The search keeps one answer per zone.
    nodes = [_node("a1"), _node("a2"), _node("b1", zone="b"), _node("b2", zone="b"), _node("c1", zone="c"),
             _node("bare", zone=None)]
    pods = [_pod("w2", "a1"), _pod("guard", "a2", "db", required_anti_affinity=(_term(WEB, ZONE),)),
            _pod("db1", "b1", "db")]
    index = _index(nodes, pods)
    movers = [_pod("w1", "c1", required_anti_affinity=(_term(WEB, ZONE),)),
              _pod("w3", "c1", required_affinity=(_term(DB, ZONE),)),
              _pod("w4", "c1", required_anti_affinity=(_term(WEB),), required_affinity=(_term(DB, ZONE),)),
              _pod("w5", "c1", required_affinity=(_term(DB),)),  # per node: only b1 holds a db pod
              _pod("q1", "c1", "queue", required_affinity=(_term(QUEUE),))]  # the first of its group: anywhere
    for mover in movers:
        search = index.conflict_for(mover)
        together = [search(n) for n in nodes + nodes]  # each node twice: the kept answers
        alone = [_index(nodes, pods).conflict(mover, n) for n in nodes + nodes]
        assert together == alone, mover.name
    assert [index.conflict_for(movers[0])(n) for n in nodes] == [
        "pod anti-affinity", "pod anti-affinity", None, None, None, None]
    assert [index.conflict_for(movers[1])(n) for n in nodes] == [
        "existing pods' anti-affinity", "existing pods' anti-affinity", None, None, "pod affinity", "pod affinity"]
    assert [index.conflict_for(movers[3])(n) for n in nodes] == [
        "existing pods' anti-affinity", "existing pods' anti-affinity", None, "pod affinity", "pod affinity",
        "pod affinity"]
    assert [index.conflict_for(movers[4])(n) for n in nodes] == [None] * len(nodes)
