"""`snapshot`: the per-cycle indexes a `Snapshot` builds on first use and keeps: a node's pods, the notable pods per
node (container statuses or a terminal phase, node affinity, anti-affinity, spreading), and the live pods by
namespace and by label value (finished and terminating pods left out)."""

from __future__ import annotations

import datetime as dt
import gc
import weakref

from remediator.model.records import (
    ContainerStatuses,
    LabelSelector,
    NodeRecord,
    NodeSelectorTerm,
    PodAffinityTerm,
    PodRecord,
    PreferredNodeTerm,
    SpreadConstraint,
)
from remediator.state.snapshot import MeasuredUsage, Snapshot

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.UTC)


def _pod(name: str, node: str = "n1", namespace: str = "shop", phase: str = "Running", **fields: object) -> PodRecord:
    return PodRecord(namespace=namespace, name=name, uid=f"uid-{name}", node_name=node, phase=phase,
                     **fields)  # type: ignore[arg-type]


def _snapshot(pods: list[PodRecord]) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return Snapshot(now=NOW, nodes={n: NodeRecord(n) for n in by_node}, pods_by_node=by_node, pods_by_owner={})


def test_a_nodes_pods_are_its_list_and_an_unknown_node_has_none() -> None:
    a, b = _pod("a"), _pod("b", "n2")
    s = _snapshot([a, b])
    assert s.pods("n1") == [a] and s.pods("n2") == [b]
    assert s.pods("absent") == []


def test_a_new_snapshot_measures_nothing_and_found_no_autoscaler() -> None:
    s = _snapshot([])
    assert s.measured == MeasuredUsage() and s.measured.nodes == {} and s.measured.scores == {}
    assert s.autoscalers == frozenset() and s.pending == []


def test_notable_pods_are_sorted_by_node_into_each_list_they_belong_to() -> None:
    selector = LabelSelector()
    plain = _pod("plain")
    restarting = _pod("restarting", containers=ContainerStatuses(restarts=3))
    init_waiting = _pod("init-waiting", "n2", init_containers=ContainerStatuses(waiting=("CrashLoopBackOff",)))
    failed = _pod("failed", phase="Failed")
    required = _pod("required", required_node_affinity=(NodeSelectorTerm(),))
    preferred = _pod("preferred", "n2", preferred_node_affinity=(PreferredNodeTerm(1, NodeSelectorTerm()),))
    anti = _pod("anti", required_anti_affinity=(PodAffinityTerm(selector, ("shop",), False, "zone"),))
    hard = _pod("hard", hard_spread=(SpreadConstraint(1, "zone", selector),))
    soft = _pod("soft", "n2", soft_spread=(SpreadConstraint(1, "zone", selector),))
    s = _snapshot([plain, restarting, init_waiting, failed, required, preferred, anti, hard, soft])
    notable = s.notable()
    assert notable.statuses == {"n1": [restarting, failed], "n2": [init_waiting]}
    assert notable.node_affinity == {"n1": [required], "n2": [preferred]}
    assert notable.anti_affinity == {"n1": [anti]}
    assert notable.spreading == {"n1": [hard], "n2": [soft]}


def test_notable_pods_are_built_once_per_snapshot() -> None:
    s = _snapshot([_pod("a", phase="Succeeded")])
    first = s.notable()
    s.pods_by_node["n1"].append(_pod("late", phase="Failed"))
    assert s.notable() is first
    assert [p.name for p in first.statuses["n1"]] == ["a"]


def test_live_pods_by_namespace_leave_out_finished_and_terminating_pods() -> None:
    running = _pod("running")
    pending = _pod("pending", "n2", phase="Pending")
    other_namespace = _pod("other", namespace="ops")
    done = _pod("done", phase="Succeeded")
    failed = _pod("failed", phase="Failed")
    terminating = _pod("terminating", terminating=True)
    s = _snapshot([running, pending, other_namespace, done, failed, terminating])
    live = s.live()
    assert live is s.live()
    assert live.in_namespace("shop") == [running, pending]
    assert live.in_namespace("ops") == [other_namespace]
    assert live.in_namespace("nowhere") == []


def test_live_pods_by_namespace_come_node_by_node_in_each_node_s_order_from_what_a_node_keeps_flat() -> None:
    a1, b1, a2, a3 = _pod("a1"), _pod("b1", namespace="ops"), _pod("a2"), _pod("a3", "n2")
    b2, gone = _pod("b2", "n2", namespace="ops"), _pod("gone", "n3", phase="Succeeded")
    s = _snapshot([a1, b1, a2, a3, b2, gone])
    live = s.live()
    assert live.in_namespace("shop") == [a1, a2, a3]
    assert live.in_namespace("ops") == [b1, b2]
    assert list(live._by_namespace or {}) == ["shop", "ops"]  # each namespace where its first pod comes
    kept = s.derived.live
    assert kept.get("n1", s.pods_by_node["n1"], lambda pods: ()) == (a1, b1, a2)  # kept by the pass above, flat
    assert kept.get("n3", s.pods_by_node["n3"], lambda pods: (gone,)) == ()


def test_a_snapshot_of_the_very_same_pods_is_served_the_last_cycles_live_pods_and_a_changed_one_them_patched() -> None:
    web1, web2 = _pod("web1", labels={"app": "web"}), _pod("web2", "n2", labels={"app": "web"})
    first = _snapshot([web1, web2])
    assert first.live().labelled("shop", "app", "web") == [web1, web2]
    quiet = Snapshot(now=NOW, nodes=first.nodes, pods_by_node=dict(first.pods_by_node), pods_by_owner={},
                     derived=first.derived)
    assert quiet.live() is first.live(), "every node's list the same: the index (and its label lookups) kept"
    web3 = _pod("web3", "n2", labels={"app": "web"})
    changed = Snapshot(now=NOW, nodes=first.nodes, pods_by_node={"n1": first.pods_by_node["n1"], "n2": [web2, web3]},
                       pods_by_owner={}, derived=first.derived)
    assert changed.live() is not first.live()
    assert changed.live().labelled("shop", "app", "web") == [web1, web2, web3]
    equal = Snapshot(now=NOW, nodes=first.nodes, pods_by_node={"n1": [web1], "n2": [web2, web3]},
                     pods_by_owner={}, derived=first.derived)
    assert equal.live() is not changed.live(), "an equal list is another version (the cache's): not the same pods"
    reordered = Snapshot(now=NOW, nodes=first.nodes, pods_by_node=dict(reversed(equal.pods_by_node.items())),
                         pods_by_owner={}, derived=first.derived)
    assert reordered.live() is equal.live(), "the nodes in another order, each the same list: the same pods"


def test_a_dropped_derived_is_freed_by_reference_counting_alone_once_its_live_pods_were_built() -> None:
    # The kept LivePods reads the per-node table, not the Derived keeping it: no cycle, so a cold cycle's Derived
    # (and all it kept) goes as soon as it is dropped, without waiting for the cyclic collector.
    snapshot = _snapshot([_pod("web1", labels={"app": "web"}), _pod("web2", "n2", labels={"app": "web"})])
    assert snapshot.live().in_namespace("shop")
    gone = weakref.ref(snapshot.derived)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del snapshot
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
