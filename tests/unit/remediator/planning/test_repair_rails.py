"""The repair rails: a node's group (pool, else zone, else cluster), its opt-outs, which groups are halted for too
many unhealthy nodes, the hourly rate from the ladders' annotations, and which pods a drain leaves or a selector
blocks on."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.repair_contract import OPT_OUT_LABEL, RepairAction
from remediator.model.records import Condition, LabelSelector, NodeRecord, OwnerRef, PodRecord, Taint
from remediator.planning.owned_taints import OwnedTaint
from remediator.planning.pod_protection import MIRROR_ANNOTATION
from remediator.planning.repair_rails import (
    blocking,
    group_of,
    halted_groups,
    left_to_drain,
    opted_out,
    started_within,
    stays_through,
    unhealthy,
)
from remediator.policy.model import Policy
from remediator.policy.repair import ZONE_LABEL, RepairSettings
from remediator.policy.safety import Safety
from remediator.repair.state import LadderState, Tried
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2026, 1, 2, 12, 0, 0, tzinfo=dt.UTC)
POOL = "karpenter.sh/nodepool"
READY = (Condition(type="Ready", status="True"),)
NOT_READY = (Condition(type="Ready", status="False"),)


def _node(name: str, *, ready: bool = True, **labels: str) -> NodeRecord:
    return NodeRecord(name=name, labels=labels, conditions=READY if ready else NOT_READY)


def _owned(*rules: str) -> OwnedTaint:
    return OwnedTaint(taint=Taint("nodemedic.io/x"), rules=rules, cause="", since=NOW)


def test_a_nodes_group_is_its_first_pool_label_else_its_zone_else_the_cluster() -> None:
    settings = RepairSettings(pool_labels=("a/pool", "b/pool"))
    assert group_of(NodeRecord("n", labels={"b/pool": "y", "a/pool": "x", ZONE_LABEL: "z"}), settings) == "a/pool=x"
    assert group_of(NodeRecord("n", labels={"b/pool": "y", ZONE_LABEL: "z"}), settings) == "b/pool=y"
    assert group_of(NodeRecord("n", labels={ZONE_LABEL: "z"}), settings) == f"{ZONE_LABEL}=z"
    assert group_of(NodeRecord("n", labels={ZONE_LABEL: ""}), settings) == "cluster"


def test_a_node_opts_out_with_the_repair_label_or_any_safety_hold() -> None:
    policy = Policy()
    assert opted_out(NodeRecord("n", labels={OPT_OUT_LABEL: "true"}), policy) == (
        f"the node opted out of repair ({OPT_OUT_LABEL}=true)")
    assert opted_out(NodeRecord("n", taints=(Taint("karpenter.sh/disrupted"),)), policy) == (
        "Karpenter is disrupting the node (taint karpenter.sh/disrupted)")
    assert opted_out(NodeRecord("n"), Policy(safety=Safety(paused=True))) == "paused"
    assert opted_out(NodeRecord("n", labels={OPT_OUT_LABEL: "false"}), policy) is None


def test_a_node_is_unhealthy_when_not_ready_or_carrying_a_rules_taint_not_a_strategys() -> None:
    assert not unhealthy(_node("n"), [])
    assert unhealthy(_node("n", ready=False), [])
    assert unhealthy(_node("n"), [_owned("disk")])
    assert not unhealthy(_node("n"), [_owned("strategy:Balance")])


def _snapshot(*nodes: NodeRecord, pods: tuple[PodRecord, ...] = ()) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner={})


def test_a_group_is_halted_when_more_nodes_are_unhealthy_than_its_share_allows() -> None:
    settings = RepairSettings(max_unhealthy_percent=20.0)
    # pool a: 10 nodes, 3 unhealthy > 2 allowed; pool b: 10 nodes, 2 unhealthy = allowed; pool c: 2 nodes, 1 sick
    nodes = ([_node(f"a{i}", ready=i >= 2, **{POOL: "a"}) for i in range(10)]
             + [_node(f"b{i}", ready=i >= 2, **{POOL: "b"}) for i in range(10)]
             + [_node(f"c{i}", ready=i >= 1, **{POOL: "c"}) for i in range(2)])
    halted = halted_groups(_snapshot(*nodes), settings, {"a5": [_owned("disk")], "b5": [_owned("strategy:S")]})
    assert halted == {f"{POOL}=a": f"3 of 10 nodes in {POOL}=a are unhealthy, more than 20% allows (2): the cause "
                                   "is likely not these nodes, so none of them is repaired"}


def test_one_unhealthy_node_is_always_allowed_even_in_a_small_group() -> None:
    settings = RepairSettings(max_unhealthy_percent=20.0)
    assert halted_groups(_snapshot(_node("n1", ready=False), _node("n2")), settings, {}) == {}
    assert list(halted_groups(_snapshot(_node("n1", ready=False), _node("n2", ready=False)), settings, {})) == [
        "cluster"]


def _ladder(action: RepairAction, requested: dt.datetime, *history: tuple[RepairAction, dt.datetime]) -> LadderState:
    return LadderState(id="x", rule="r", step=len(history), action=action, service="", requested=requested,
                       started=requested, history=tuple(Tried(i, a, "", t, t, "persisted")
                                                        for i, (a, t) in enumerate(history)))


def test_started_within_counts_acting_steps_asked_for_in_the_last_hour_including_the_history() -> None:
    recent, old = NOW - dt.timedelta(minutes=59), NOW - dt.timedelta(hours=1)
    states = [
        _ladder(RepairAction.REBOOT, recent, (RepairAction.RESTART, recent), (RepairAction.RESTART, old)),
        _ladder(RepairAction.PERSON, recent, (RepairAction.REPLACE, recent)),  # person acts on no node
        _ladder(RepairAction.RESTART, old),  # exactly an hour ago: outside
    ]
    assert started_within(states, NOW) == 3


def _pod(name: str, *, node: str = "n1", phase: str = "Running", **fields: object) -> PodRecord:
    return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=node, phase=phase,
                     **fields)  # type: ignore[arg-type]


def test_daemonset_mirror_and_finished_pods_stay_through_a_drain_but_a_terminating_pod_is_waited_for() -> None:
    assert stays_through(_pod("ds", owners=(OwnerRef("DaemonSet", "agent", "u1", controller=True),)))
    assert stays_through(_pod("static", annotations={MIRROR_ANNOTATION: "abc"}))
    assert stays_through(_pod("done", phase="Succeeded"))
    assert stays_through(_pod("failed", phase="Failed"))
    assert not stays_through(_pod("leaving", terminating=True))
    assert not stays_through(_pod("web", owners=(OwnerRef("ReplicaSet", "web", "u2", controller=True),)))


def test_left_to_drain_lists_the_nodes_pods_that_a_drain_must_move() -> None:
    pods = (_pod("web"), _pod("done", phase="Succeeded"), _pod("leaving", terminating=True), _pod("else", node="n2"))
    snap = _snapshot(_node("n1"), _node("n2"), pods=pods)
    assert [p.name for p in left_to_drain(snap, "n1")] == ["web", "leaving"]
    assert left_to_drain(snap, "n3") == []


def test_blocking_lists_the_live_pods_matching_the_selector_and_none_without_one() -> None:
    pods = (_pod("batch", labels={"job": "long"}), _pod("done", phase="Succeeded", labels={"job": "long"}),
            _pod("leaving", terminating=True, labels={"job": "long"}), _pod("web", labels={"app": "web"}),
            _pod("other", node="n2", labels={"job": "long"}))
    snap = _snapshot(_node("n1"), _node("n2"), pods=pods)
    settings = RepairSettings(blocking_pod_selector=LabelSelector(match_labels=(("job", "long"),)))
    assert [p.name for p in blocking(snap, "n1", settings)] == ["batch"]
    assert blocking(snap, "n1", RepairSettings()) == []
