"""Silent nodes as the planner tells them apart: the agent as the second witness, the evidence a fence needs, the
partition halt, the way back."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace

from nodemedic_common.fence_contract import (
    CONFIRM_ANNOTATION,
    FENCE_ANNOTATION,
    OUT_OF_SERVICE_KEY,
    Evidence,
    FenceAction,
    FenceRecord,
)
from nodemedic_common.repair_contract import (
    ANSWER_CONDITION,
    OPT_OUT_LABEL,
    REPAIR_ANNOTATION,
    AnswerReason,
    RepairAction,
    answer_message,
    format_time,
)
from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import Condition, Effect, NodeRecord, Taint
from remediator.planning.dark_nodes import plan_dark
from remediator.policy.dark import DarkSettings
from remediator.policy.model import Policy
from remediator.policy.repair import RepairSettings
from remediator.read_side.plan_sections import DarkSection
from remediator.repair.dark_decisions import DarkPlan, Seen
from remediator.repair.state import LadderState
from remediator.state.snapshot import Snapshot

NOW = dt.datetime(2026, 11, 28, 12, 0, 0, tzinfo=dt.UTC)
MIN = dt.timedelta(minutes=1)
ZONE = "topology.kubernetes.io/zone"
OOS = Taint(OUT_OF_SERVICE_KEY, "nodeshutdown", Effect.NO_EXECUTE)


def node(name: str, *, ready: str = "True", ready_at: dt.datetime = NOW - 30 * MIN,
         agent: dt.datetime | None = NOW - MIN, zone: str = "a", claim: str = "",
         annotations: dict[str, str] | None = None, labels: dict[str, str] | None = None,
         taints: tuple[Taint, ...] = (), extra: tuple[Condition, ...] = ()) -> NodeRecord:
    conditions = [Condition("Ready", ready, ready_at, heartbeat=ready_at)]
    if agent is not None:
        conditions.append(Condition("KernelDeadlock", "False", NOW - 60 * MIN, heartbeat=agent))
    return NodeRecord(name=name, labels={ZONE: zone, **(labels or {})}, annotations=annotations or {},
                      conditions=(*conditions, *extra), claim=claim, taints=taints, resource_version="7")


def dark(name: str = "n1", **kw: object) -> NodeRecord:
    """Kubelet silent for 10 minutes, agent silent for 12."""
    return node(name, ready="Unknown", ready_at=NOW - 10 * MIN, agent=NOW - 12 * MIN, **kw)  # type: ignore[arg-type]


def fleet(*nodes: NodeRecord, healthy: int = 4) -> Snapshot:
    everyone = {n.name: n for n in nodes}
    for i in range(healthy):
        everyone[f"ok{i}"] = node(f"ok{i}")
    return Snapshot(now=NOW, nodes=everyone, pods_by_node={}, pods_by_owner={})


def plan(s: Snapshot, **dark_settings: object) -> DarkPlan:
    p = Policy(dark=DarkSettings(**dark_settings),  # type: ignore[arg-type]
               repair=RepairSettings(max_unhealthy_percent=100.0))
    return plan_dark(s, p, {})[0]


def test_a_kubelet_silent_while_its_agent_writes_is_not_dark_and_is_never_fenced() -> None:
    n = node("n1", ready="Unknown", ready_at=NOW - 10 * MIN, agent=NOW - 20 * dt.timedelta(seconds=1),
             annotations={CONFIRM_ANNOTATION: format_time(NOW - MIN)})
    d = plan(fleet(n))
    assert d.nodes["n1"].seen == Seen.KUBELET_SILENT and "its agent wrote at" in d.nodes["n1"].why
    assert d.fences == [] and d.claim_deletes == []


def test_a_dark_node_without_evidence_keeps_its_pods_and_asks_a_person() -> None:
    d = plan(fleet(dark()))
    n = d.nodes["n1"]
    assert n.seen == Seen.DARK and n.needs_evidence and d.fences == []
    assert "kubectl nodemedic fence n1 --confirm" in n.why and "agent since 2026-11-28T11:48:00Z" in n.why


def test_the_agent_must_be_silent_for_agent_silence_before_the_node_is_dark() -> None:
    n = node("n1", ready="Unknown", ready_at=NOW - 2 * MIN, agent=NOW - 3 * MIN)
    assert plan(fleet(n), agent_silence=5 * MIN).nodes["n1"].seen == Seen.KUBELET_SILENT
    assert plan(fleet(n), agent_silence=3 * MIN).nodes["n1"].seen == Seen.DARK
    p = Policy(dark=DarkSettings(agent_silence=5 * MIN))
    assert plan_dark(fleet(n), p, {})[1] == NOW + 2 * MIN  # planned again when the silence is long enough


def test_a_persons_confirmation_after_the_kubelet_went_silent_fences() -> None:
    confirmed = dark(annotations={CONFIRM_ANNOTATION: f"{format_time(NOW - MIN)} by alice"})
    d = plan(fleet(confirmed))
    (f,) = d.fences
    assert (f.node, f.evidence) == ("n1", Evidence.PERSON) and "by alice" in f.detail
    stale = dark(annotations={CONFIRM_ANNOTATION: format_time(NOW - 11 * MIN)})  # before the silence began
    assert plan(fleet(stale)).fences == []


def test_a_reboot_the_agent_began_before_it_went_silent_fences() -> None:
    state = LadderState(id="1764330000-1", rule="kernel-deadlock", step=0, action=RepairAction.REBOOT, service="",
                        requested=NOW - 13 * MIN, started=NOW - 13 * MIN, history=())
    answer = Condition(ANSWER_CONDITION, "True", NOW - 12 * MIN, reason=AnswerReason.ACTING,
                       message=answer_message(state.id, "rebooting (boot id x)"), heartbeat=NOW - 12 * MIN)
    d = plan(fleet(dark(annotations={REPAIR_ANNOTATION: state.to_annotation()}, extra=(answer,))))
    assert [(f.node, f.evidence) for f in d.fences] == [("n1", Evidence.REBOOT)]
    other = replace(answer, message=answer_message("1764329000-0", "rebooting"))  # an older ask's answer
    assert plan(fleet(dark(annotations={REPAIR_ANNOTATION: state.to_annotation()}, extra=(other,)))).fences == []


def test_a_karpenter_node_dark_past_replace_after_has_its_nodeclaim_deleted() -> None:
    early = plan(fleet(dark(claim="pool-abc")), replace_after=15 * MIN)
    assert early.claim_deletes == [] and "deleted at 2026-11-28T12:05:01Z" in early.nodes["n1"].why
    (c,) = plan(fleet(dark(claim="pool-abc")), replace_after=9 * MIN).claim_deletes
    assert (c.node, c.claim) == ("n1", "pool-abc")
    assert plan(fleet(dark(claim="pool-abc")), replace_after=None).claim_deletes == []


def test_one_nodeclaim_at_a_time_per_pool() -> None:
    pool = {"karpenter.sh/nodepool": "p"}
    d = plan(fleet(dark("n1", claim="c1", labels=pool), dark("n2", claim="c2", labels=pool, zone="b"), healthy=6),
             replace_after=9 * MIN)
    assert [c.node for c in d.claim_deletes] == ["n1"] and "being replaced already" in d.nodes["n2"].why


def test_three_of_five_dark_in_a_zone_is_a_partition_and_nothing_is_fenced() -> None:
    confirm = {CONFIRM_ANNOTATION: format_time(NOW - MIN)}
    nodes = [dark(f"d{i}", annotations=confirm, claim=f"c{i}") for i in range(3)]
    d = plan(fleet(*nodes, healthy=2), replace_after=MIN)
    assert d.fences == [] and d.claim_deletes == []
    assert "3 of 5 nodes in topology.kubernetes.io/zone=a are dark" in d.halted[f"{ZONE}=a"]
    assert all(n.halted for n in d.nodes.values())


def test_two_dark_nodes_are_never_a_partition_even_of_three() -> None:
    confirm = {CONFIRM_ANNOTATION: format_time(NOW - MIN)}
    d = plan(fleet(dark("d0", annotations=confirm), dark("d1", annotations=confirm), healthy=1))
    assert d.halted == {} and len(d.fences) == 2


def test_a_fenced_node_back_ready_keeps_the_taint_until_its_agent_reports() -> None:
    record = FenceRecord(NOW - 20 * MIN, FenceAction.TAINT, Evidence.PERSON, "confirmed").to_annotation()
    back = node("n1", ready="True", ready_at=NOW - 2 * MIN, agent=NOW - 25 * MIN, taints=(OOS,),
                annotations={FENCE_ANNOTATION: record, CONFIRM_ANNOTATION: format_time(NOW - 21 * MIN)})
    d = plan(fleet(back))
    assert d.unfences == [] and d.nodes["n1"].seen == Seen.RETURNING
    reported = replace(back, conditions=node("n1", ready_at=NOW - 2 * MIN, agent=NOW - MIN).conditions)
    (u,) = plan(fleet(reported)).unfences
    assert u.node == "n1" and u.taint and "its agent reported at 2026-11-28T11:59:00Z" in u.why


def test_a_fenced_node_still_dark_stays_fenced_and_is_not_fenced_twice() -> None:
    record = FenceRecord(NOW - 5 * MIN, FenceAction.TAINT, Evidence.PERSON, "confirmed").to_annotation()
    d = plan(fleet(dark(taints=(OOS,), annotations={FENCE_ANNOTATION: record,
                                                    CONFIRM_ANNOTATION: format_time(NOW - 6 * MIN)})))
    assert d.fences == [] and d.nodes["n1"].seen == Seen.FENCED


def test_a_taint_a_person_put_on_is_not_taken_off() -> None:
    record = FenceRecord(NOW - 5 * MIN, FenceAction.REPLACE, Evidence.NODECLAIM, "NodeClaim c1").to_annotation()
    back = node("n1", taints=(OOS,), annotations={FENCE_ANNOTATION: record})
    (u,) = plan(fleet(back)).unfences
    assert not u.taint  # nodemedic deleted a NodeClaim; it never put this taint on


def test_an_opted_out_node_is_left_alone() -> None:
    n = dark(labels={OPT_OUT_LABEL: "true"}, annotations={CONFIRM_ANNOTATION: format_time(NOW - MIN)})
    d = plan(fleet(n))
    assert d.fences == [] and "opted out" in d.nodes["n1"].why


def test_fences_count_towards_max_per_hour() -> None:
    record = FenceRecord(NOW - 30 * MIN, FenceAction.TAINT, Evidence.PERSON, "x").to_annotation()
    earlier = dark("n0", taints=(OOS,), annotations={FENCE_ANNOTATION: record})
    confirmed = dark(annotations={CONFIRM_ANNOTATION: format_time(NOW - MIN)})
    p = Policy(repair=RepairSettings(max_per_hour=1, max_unhealthy_percent=100.0))
    d = plan_dark(fleet(earlier, confirmed, healthy=6), p, {})[0]
    assert d.fences == [] and "repair.maxPerHour 1" in d.nodes["n1"].why


def test_an_unreadable_record_is_treated_as_nodemedics_fence() -> None:
    back = node("n1", taints=(OOS,), annotations={FENCE_ANNOTATION: "{not json"})
    (u,) = plan(fleet(back)).unfences
    assert u.taint


def test_a_stale_confirmation_on_a_ready_node_is_removed() -> None:
    (u,) = plan(fleet(node("n1", annotations={CONFIRM_ANNOTATION: format_time(NOW - MIN)}))).unfences
    assert not u.taint and "stale" in u.why


def test_the_planner_carries_the_dark_plan_and_wakes_for_it() -> None:
    s = fleet(dark(claim="c1"))
    p = make_plan(s, Policy(dark=DarkSettings(replace_after=15 * MIN)), PlannerMemory())
    assert p.dark.nodes["n1"].seen == Seen.DARK and p.next_check == NOW + 5 * MIN + dt.timedelta(seconds=1)
    assert DarkSection.of(p.dark).to_json()["nodes"] == [{"node": "n1", "seen": "dark", "why": p.dark.nodes["n1"].why,
                                                          "kubeletSilentSince": "2026-11-28T11:50:01Z",
                                                          "agentHeard": "2026-11-28T11:48:00Z"}]
