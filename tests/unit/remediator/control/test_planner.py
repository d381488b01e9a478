"""One planning cycle end to end on small hand-built snapshots: taints, candidates, protection, node fit, limits."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import (
    Condition,
    Effect,
    LabelSelector,
    NodeRecord,
    OwnerRef,
    PodRecord,
    Taint,
    Toleration,
)
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.policy.autoscaler import AutoscalerSettings
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.limits import Limits
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy, StrategyConfig
from remediator.policy.rules import TaintRule
from remediator.policy.safety import Safety
from remediator.policy.window import MaintenanceWindow
from remediator.read_side.plan_answer import PlanAnswer
from remediator.state.snapshot import KARPENTER_NODEPOOL_LABEL, NodeAutoscaler, Snapshot
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs
from remediator.strategies.remove_pods_violating_node_taints.plan import NAME

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
DEADLOCK = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
RULE = TaintRule(name="deadlock", condition_type="KernelDeadlock", condition_status="True",
                 for_=dt.timedelta(seconds=30), taint=DEADLOCK)
GiB = 1 << 30


def node(name: str, *, sick: bool = False, cpu: int = 4000, pods: int = 110, owned: bool = False,
         labels: dict[str, str] | None = None) -> NodeRecord:
    conditions = [Condition("Ready", "True", NOW - dt.timedelta(hours=1))]
    if sick:
        conditions.append(Condition("KernelDeadlock", "True", NOW - dt.timedelta(seconds=60),
                                    observed_at=NOW - dt.timedelta(seconds=60)))
    annotations = {}
    if owned:
        annotations[OWNED_TAINTS_ANNOTATION] = render_owned([OwnedTaint(DEADLOCK, ("deadlock",), "t", NOW)])
    return NodeRecord(name=name, conditions=tuple(conditions), labels=labels or {}, annotations=annotations,
                      taints=(DEADLOCK,) if owned else (),
                      allocatable={"cpu": cpu, "memory": 16 * GiB, "pods": pods})


def pod(name: str, node_name: str = "sick", *, owner: str = "ReplicaSet", cpu: int = 100, **kw: object) -> PodRecord:
    owners = (OwnerRef(owner, f"{name}-owner", f"uid-{name}-owner", controller=True),) if owner else ()
    return PodRecord(namespace="default", name=name, uid=f"uid-{name}", node_name=node_name, phase="Running",
                     owners=owners, requests={"cpu": cpu, "memory": 64 << 20}, **kw)  # type: ignore[arg-type]


def snap(nodes: list[NodeRecord], pods: list[PodRecord]) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    by_owner: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
        for o in p.owners:
            by_owner.setdefault(o.uid, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner=by_owner)


def policy(*, node_fit: bool = True, limits: Limits | None = None, **safety: object) -> Policy:
    return Policy(rules=(RULE,), evictor=EvictorArgs(node_fit=node_fit),
                  strategies=(StrategyConfig(NAME, RemovePodsViolatingNodeTaintsArgs()),),
                  limits=limits or Limits(owner_cooldown=dt.timedelta(0)),
                  safety=Safety(**safety))  # type: ignore[arg-type]


def names(items: list[object]) -> list[str]:
    return [i.pod.name for i in items]  # type: ignore[attr-defined]


def test_a_lasting_condition_taints_the_node_and_evicts_only_pods_that_do_not_tolerate_it() -> None:
    tolerant = pod("tolerant", tolerations=(Toleration(key=DEADLOCK.key, operator="Exists"),))
    s = snap([node("sick", sick=True), node("ok")], [pod("web"), tolerant, pod("elsewhere", "ok")])
    plan = make_plan(s, policy(), PlannerMemory())
    assert [(c.node, c.taint) for c in plan.taints_add] == [("sick", DEADLOCK)]
    assert names(plan.evictions) == ["web"]
    assert plan.evictions[0].strategy == NAME
    assert plan.protected == [] and plan.deferred == []


def test_a_node_without_problems_gets_no_taint_and_loses_no_pod() -> None:
    plan = make_plan(snap([node("sick"), node("ok")], [pod("web")]), policy(), PlannerMemory())
    assert plan.taints_add == [] and plan.evictions == [] and plan.protected == []


@pytest.mark.parametrize(("p", "why"), [
    (pod("ds", owner="DaemonSet"), "DaemonSet pod"),
    (pod("mirror", annotations={"kubernetes.io/config.mirror": "x"}), "mirror pod"),
    (pod("critical", priority=2_000_001_000), "system-critical priority"),
    (pod("scratch", has_local_storage=True), "local storage"),
    (pod("bare", owner=""), "bare pod"),
], ids=["daemonset", "mirror", "system-critical", "local-storage", "bare"])
def test_pods_the_default_evictor_protects_are_reported_not_evicted(p: PodRecord, why: str) -> None:
    plan = make_plan(snap([node("sick", sick=True), node("ok")], [p]), policy(), PlannerMemory())
    assert plan.evictions == []
    assert names(plan.protected) == [p.name]
    assert why in plan.protected[0].why


def test_a_pod_with_nowhere_to_go_stays_and_says_why() -> None:
    s = snap([node("sick", sick=True), node("full", cpu=500)], [pod("big", cpu=1000)])
    plan = make_plan(s, policy(), PlannerMemory())
    assert plan.evictions == []
    assert plan.protected[0].why.startswith("no other node fits: 0/2 nodes fit")


def test_without_node_fit_a_pod_is_evicted_even_with_nowhere_to_go() -> None:
    s = snap([node("sick", sick=True), node("full", cpu=500)], [pod("big", cpu=1000)])
    assert names(make_plan(s, policy(node_fit=False), PlannerMemory()).evictions) == ["big"]


def test_room_promised_to_one_moved_pod_is_not_promised_again() -> None:
    s = snap([node("sick", sick=True), node("small", cpu=1500)], [pod("a", cpu=1000), pod("b", cpu=1000)])
    plan = make_plan(s, policy(), PlannerMemory())
    assert names(plan.evictions) == ["a"]
    assert names(plan.protected) == ["b"]
    assert "insufficient cpu" in plan.protected[0].why


def test_pod_slots_promised_to_moved_pods_count_too() -> None:
    s = snap([node("sick", sick=True), node("tiny", pods=1)], [pod("a"), pod("b")])
    plan = make_plan(s, policy(), PlannerMemory())
    assert names(plan.evictions) == ["a"] and names(plan.protected) == ["b"]


def test_a_node_being_tainted_this_cycle_is_no_destination() -> None:
    s = snap([node("sick", sick=True), node("sick2", sick=True)], [pod("a")])
    plan = make_plan(s, policy(max_tainted_nodes=None, max_tainted_nodes_percent=None), PlannerMemory())
    assert len(plan.taints_add) == 2
    assert plan.evictions == [] and "excluded" in plan.protected[0].why


def test_a_sick_node_whose_taint_the_breaker_held_is_no_destination() -> None:
    s = snap([node("sick", sick=True), node("sicker-later", sick=True)], [pod("a")])  # equal age: name order
    plan = make_plan(s, policy(max_tainted_nodes=1), PlannerMemory())
    assert [h.node for h in plan.held] == ["sicker-later"]
    assert plan.evictions == [] and "excluded" in plan.protected[0].why


def test_a_pod_with_nowhere_to_go_does_not_use_up_a_limit() -> None:
    s = snap([node("sick", sick=True), node("ok", cpu=1000)], [pod("a-big", cpu=2000), pod("b-small"), pod("c-late")])
    plan = make_plan(s, policy(limits=Limits(max_pods_to_evict_total=1)), PlannerMemory())
    assert names(plan.protected) == ["a-big"]
    assert names(plan.evictions) == ["b-small"]
    assert names(plan.deferred) == ["c-late"]


def test_limits_defer_evictions_beyond_the_per_node_maximum() -> None:
    s = snap([node("sick", sick=True), node("ok")], [pod("a"), pod("b"), pod("c")])
    plan = make_plan(s, policy(limits=Limits(max_pods_to_evict_per_node=2)), PlannerMemory())
    assert names(plan.evictions) == ["a", "b"]
    assert names(plan.deferred) == ["c"] and plan.deferred[0].why.startswith("limit:")


def test_the_owner_cool_down_reads_the_controllers_memory() -> None:
    s = snap([node("sick", owned=True, sick=True), node("ok")], [pod("a")])
    memory = PlannerMemory(owner_last_eviction={"uid-a-owner": NOW - dt.timedelta(seconds=1)})
    plan = make_plan(s, policy(limits=Limits(owner_cooldown=dt.timedelta(seconds=5))), memory)
    assert plan.evictions == [] and names(plan.deferred) == ["a"]


def test_pausing_stops_every_eviction_and_new_taint_but_not_recovery() -> None:
    recovered = dataclasses.replace(node("healed", owned=True),
                                    conditions=(Condition("Ready", "True"), Condition("KernelDeadlock", "False",
                                                                                      NOW - dt.timedelta(hours=1))))
    s = snap([node("sick", sick=True), node("tainted", sick=True, owned=True), recovered, node("ok")],
             [pod("a"), pod("b", "tainted")])
    plan = make_plan(s, policy(paused=True), PlannerMemory())
    assert plan.evictions == [] and plan.taints_add == []
    assert [h.why for h in plan.held] == ["paused"]
    assert [c.node for c in plan.taints_remove] == ["healed"]


def test_pods_on_an_opted_out_node_are_protected_even_under_our_taint() -> None:
    opted_out = node("tainted", sick=True, owned=True, labels={"nodemedic.io/exclude": "true"})
    plan = make_plan(snap([opted_out, node("ok")], [pod("a", "tainted")]), policy(), PlannerMemory())
    assert plan.evictions == []
    assert [(p.pod.name, p.why.split(" (")[0]) for p in plan.protected] == [("a", "node opted out")]


def test_a_pod_two_strategies_want_is_planned_once_first_strategy_wins() -> None:
    base = policy()
    twice = dataclasses.replace(base, strategies=(
        StrategyConfig(NAME, RemovePodsViolatingNodeTaintsArgs(excluded_taints=(DEADLOCK.key,))),
        *base.strategies, *base.strategies))
    plan = make_plan(snap([node("sick", sick=True), node("ok")], [pod("a")]), twice, PlannerMemory())
    assert names(plan.evictions) == ["a"]


def test_the_plan_carries_the_timers_and_breaker_state() -> None:
    pending = dataclasses.replace(node("soon"), conditions=(
        Condition("Ready", "True"), Condition("KernelDeadlock", "True", NOW - dt.timedelta(seconds=10))))
    s = snap([node("sick", sick=True), node("sick2", sick=True), pending, node("ok")], [])
    plan = make_plan(s, policy(max_tainted_nodes=1), PlannerMemory())
    assert plan.breaker_open and plan.tainted_limit == 1
    assert [h.node for h in plan.held] == ["sick2"]
    # for 30s from a whole-second lastTransitionTime no watch saw happen: counted from one second later
    assert plan.next_check == NOW + dt.timedelta(seconds=21)


def test_the_plan_json_has_the_documented_keys() -> None:
    s = snap([node("sick", sick=True), node("ok")], [pod("web"), pod("ds", owner="DaemonSet")])
    doc = PlanAnswer.of(make_plan(s, policy(), PlannerMemory())).to_json()
    assert set(doc) == {"taints", "evictions", "protected", "deferred", "held", "breaker", "crashLoopNodes",
                        "zoneExposure", "schedulerLoops", "proposals"}
    assert doc["taints"] == {"add": [{"node": "sick", "key": DEADLOCK.key, "value": "true", "effect": "NoSchedule",
                                      "rule": "deadlock", "cause": "KernelDeadlock=True for 1m0s"}], "remove": []}
    assert doc["evictions"] == [{"namespace": "default", "name": "web", "node": "sick", "strategy": NAME,
                                 "reason": f"untolerated taint {DEADLOCK.key}=true:NoSchedule"}]
    assert [p["name"] for p in doc["protected"]] == ["ds"]  # type: ignore[index]
    assert doc["breaker"] == {"open": False, "taintedLimit": 1}


@pytest.mark.parametrize(("annotation", "taint"), [
    ({"karpenter.sh/do-not-disrupt": "true"}, None),
    ({"cluster-autoscaler.kubernetes.io/scale-down-disabled": "true"}, None),
    ({}, Taint("karpenter.sh/disrupted", "", Effect.NO_SCHEDULE)),
], ids=["karpenter-do-not-disrupt", "ca-scale-down-disabled", "karpenter-disrupting"])
def test_a_node_the_autoscaler_is_told_to_keep_or_is_removing_is_neither_tainted_further_nor_drained(
        annotation: dict[str, str], taint: Taint | None) -> None:
    """Already tainted by us (so the taint rule is satisfied), but the autoscaler's word holds the evictions."""
    sick = node("sick", sick=True, owned=True)
    sick = dataclasses.replace(sick, annotations={**sick.annotations, **annotation},
                               taints=sick.taints + ((taint,) if taint else ()))
    plan = make_plan(snap([sick, node("ok")], [pod("web")]), policy(), PlannerMemory())
    assert plan.evictions == []
    assert [(p.pod.name, p.why.split(" (")[0]) for p in plan.protected] == [
        ("web", "Karpenter is disrupting the node" if taint else "the node autoscaler is told to leave the node alone")]


def test_with_an_autoscaler_that_adds_nodes_a_drained_pod_with_no_room_elsewhere_counts_on_a_new_node_like_its_own(
) -> None:
    sick = node("sick", sick=True, labels={"kubernetes.io/hostname": "sick", "pool": "a"})
    full = node("ok", cpu=4000)
    pods = [pod("web-1", cpu=1500), pod("web-2", cpu=1500), pod("agent", owner="DaemonSet", cpu=800),
            pod("pinned", cpu=100, node_selector={"kubernetes.io/hostname": "sick"}),
            pod("filler", "ok", cpu=3950)]
    without = make_plan(snap([sick, full], pods), policy(), PlannerMemory())
    assert names(without.evictions) == []
    assert sorted(names(without.protected)) == ["agent", "pinned", "web-1", "web-2"]

    adds = dataclasses.replace(policy(), autoscaler=AutoscalerSettings(adds_nodes=True))
    plan = make_plan(snap([sick, full], pods), adds, PlannerMemory())
    assert sorted(names(plan.evictions)) == ["web-1", "web-2"]
    assert all("to a new node like sick from the node autoscaler" in e.reason for e in plan.evictions)
    why = {p.pod.name: p.why for p in plan.protected}
    assert why["pinned"].endswith("its node selector/affinity names this node")
    assert why["agent"].startswith("DaemonSet pod")


KARPENTER, CA = NodeAutoscaler.KARPENTER, NodeAutoscaler.CLUSTER_AUTOSCALER


@pytest.mark.parametrize(("labels", "detected", "reason"), [
    ({KARPENTER_NODEPOOL_LABEL: "default"}, {KARPENTER}, "to a new node like sick from Karpenter (detected)"),
    ({}, {KARPENTER}, None),
    ({}, {CA}, "to a new node like sick from cluster-autoscaler (detected)"),
    ({KARPENTER_NODEPOOL_LABEL: "default"}, set(), None),
], ids=["karpenter-nodepool-node", "karpenter-other-node", "cluster-autoscaler", "none-detected"])
def test_with_adds_nodes_auto_the_gate_counts_on_the_autoscaler_the_snapshot_says_was_detected(
        labels: dict[str, str], detected: set[NodeAutoscaler], reason: str | None) -> None:
    """The sick node's pod has room on no other node: it goes only when a detected autoscaler adds a node like its
    own (Karpenter: only a NodePool's node)."""
    s = snap([node("sick", sick=True, labels=labels), node("full", cpu=1000)], [pod("web", cpu=1500)])
    s.autoscalers = frozenset(detected)
    plan = make_plan(s, policy(), PlannerMemory())  # (Policy's default addsNodes is auto)
    if reason is None:
        assert names(plan.evictions) == []
        (kept,) = plan.protected
        assert kept.why.startswith("no other node fits: ")
        assert kept.why.endswith("no node autoscaler detected (autoscaler.addsNodes: auto)" if not detected else
                                 "Karpenter (detected) replaces only NodePool nodes and sick has no "
                                 "karpenter.sh/nodepool label")
    else:
        (evicted,) = plan.evictions
        assert evicted.reason.endswith(f"; no node has room now: {reason}") and evicted.destination == "sick"


@pytest.mark.parametrize("adds_nodes", [True, False])
def test_adds_nodes_true_or_false_is_obeyed_whatever_was_detected(adds_nodes: bool) -> None:
    s = snap([node("sick", sick=True), node("full", cpu=1000)], [pod("web", cpu=1500)])
    s.autoscalers = frozenset() if adds_nodes else frozenset({KARPENTER, CA})
    said = dataclasses.replace(policy(), autoscaler=AutoscalerSettings(adds_nodes=adds_nodes))
    plan = make_plan(s, said, PlannerMemory())
    assert names(plan.evictions) == (["web"] if adds_nodes else [])


def test_the_new_node_is_filled_like_a_real_one_pods_that_would_not_fit_it_together_stay() -> None:
    """Three 1500m pods (plus an 800m DaemonSet pod) never fit one 4000m node together: the third stays."""
    sick = node("sick", sick=True)
    pods = [pod(f"web-{i}", cpu=1500) for i in range(3)] + [pod("agent", owner="DaemonSet", cpu=800)]
    adds = dataclasses.replace(policy(), autoscaler=AutoscalerSettings(adds_nodes=True))
    plan = make_plan(snap([sick], pods), adds, PlannerMemory())
    assert names(plan.evictions) == ["web-0", "web-1"]
    assert [(p.pod.name, p.why.rsplit("; ", 1)[1]) for p in plan.protected if p.pod.name == "web-2"] == [
        ("web-2", "insufficient cpu even on a new node")]


def test_outside_the_maintenance_window_nothing_is_evicted_but_the_sick_node_is_still_tainted() -> None:
    window = MaintenanceWindow(start=dt.time(1), end=dt.time(5), time_zone="UTC")  # NOW is 12:00 UTC
    s = snap([node("sick", sick=True), node("ok")], [pod("web")])
    closed = make_plan(s, dataclasses.replace(policy(), window=window), PlannerMemory())
    assert [(c.node, c.taint) for c in closed.taints_add] == [("sick", DEADLOCK)]
    assert closed.evictions == []
    assert [(d.pod.name, d.why.split(": ")[0]) for d in closed.deferred] == [
        ("web", "outside the maintenance window (01:00-05:00 UTC, every day)")]
    assert closed.next_check == dt.datetime(2024, 5, 2, 1, 0, tzinfo=dt.UTC)

    opened = dataclasses.replace(window, start=dt.time(11), end=dt.time(13))
    plan = make_plan(s, dataclasses.replace(policy(), window=opened), PlannerMemory())
    assert names(plan.evictions) == ["web"]


def test_a_node_selector_keeps_the_policy_to_its_nodes_breaker_and_destinations_included() -> None:
    # Outside the selection: an older sick node (which would take the breaker's one slot) and the only node with
    # room for the sick node's pod. Inside: the sick node, and a node too small to take its pod.
    pool = {"pool": "a"}
    s = snap([node("outside-sick", cpu=64000), node("outside-roomy", cpu=64000),
              node("sick", sick=True, labels=pool), node("small", cpu=50, labels=pool)],
             [pod("web"), pod("other", "outside-sick")])
    s.nodes["outside-sick"] = dataclasses.replace(s.nodes["outside-sick"], conditions=(
        *s.nodes["outside-sick"].conditions,
        Condition("KernelDeadlock", "True", NOW - dt.timedelta(hours=5), observed_at=NOW - dt.timedelta(hours=5))))
    unscoped = make_plan(s, policy(max_tainted_nodes=1), PlannerMemory())
    assert [c.node for c in unscoped.taints_add] == ["outside-sick"] and unscoped.breaker_open
    assert names(unscoped.evictions) == ["other"]  # to outside-roomy

    scoped = dataclasses.replace(policy(max_tainted_nodes=1), node_selector=LabelSelector((("pool", "a"),)))
    plan = make_plan(s, scoped, PlannerMemory())
    assert [c.node for c in plan.taints_add] == ["sick"] and not plan.breaker_open
    assert plan.evictions == []  # outside-roomy is no destination, and "other" is outside
    assert [(p.pod.name, p.why) for p in plan.protected] == [
        ("web", "no other node fits: 0/2 nodes fit: 1 current node, 1 insufficient cpu; "  # the two selected
                "no node autoscaler detected (autoscaler.addsNodes: auto)")]


@pytest.mark.parametrize("stamp", [
    dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
    dt.datetime(1, 1, 1, tzinfo=dt.UTC),
    dt.datetime(2024, 5, 1, 11, 0),  # no offset: cannot be compared with the aware `now`
], ids=["year-9999", "year-1", "naive"])
def test_a_node_whose_condition_time_is_unusable_costs_only_that_node(stamp: dt.datetime) -> None:
    # Issue 25: one condition stamped "9999-12-31T23:59:59Z" raised OverflowError in every cycle, so no node anywhere
    # was remediated. Now its time is unknown: that node cannot prove its condition has lasted `for`, the rest go on.
    bad = dataclasses.replace(node("bad"), conditions=(Condition("Ready", "True", NOW - dt.timedelta(hours=1)),
                                                       Condition("KernelDeadlock", "True", stamp, observed_at=NOW)))
    plan = make_plan(snap([bad, node("sick", sick=True), node("sick-2", sick=True), node("well")],
                           [pod("a", "bad"), pod("b", "sick"), pod("c", "sick-2")]),
                      policy(max_tainted_nodes=10, max_tainted_nodes_percent=100.0), PlannerMemory())
    assert sorted(c.node for c in plan.taints_add) == ["sick", "sick-2"]
    assert sorted(e.pod.name for e in plan.evictions) == ["b", "c"]
