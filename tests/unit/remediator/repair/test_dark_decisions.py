"""DarkPlan: how many silent nodes each witness state counts, and the plan's JSON (nodes sorted, the optional
fields left out when empty)."""

from __future__ import annotations

import datetime as dt

from nodemedic_common.fence_contract import Evidence
from remediator.repair.dark_decisions import ClaimDelete, DarkPlan, Fence, Seen, SilentNode, Unfence

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)


def _node(name: str, seen: Seen, **fields: object) -> SilentNode:
    return SilentNode(node=name, seen=seen, kubelet_silent_since=None, agent_heard=None, why=f"why {name}",
                      **fields)  # type: ignore[arg-type]


def test_count_counts_the_nodes_in_one_witness_state() -> None:
    plan = DarkPlan(nodes={"a": _node("a", Seen.DARK), "b": _node("b", Seen.FENCED), "c": _node("c", Seen.DARK)})
    assert [plan.count(s) for s in Seen] == [0, 2, 1, 0, 0]


def test_an_empty_plan_has_empty_lists_and_maps() -> None:
    assert DarkPlan().to_json() == {"nodes": [], "fence": [], "deleteNodeClaim": [], "unfence": [], "halted": {}}


def test_nodes_are_sorted_by_name_and_carry_their_optional_fields_only_when_set() -> None:
    plan = DarkPlan(nodes={
        "n2": _node("n2", Seen.DARK, needs_evidence=True, halted=True),
        "n1": SilentNode(node="n1", seen=Seen.KUBELET_SILENT, kubelet_silent_since=T0,
                         agent_heard=T0 + dt.timedelta(seconds=90, microseconds=5), why="the agent still writes"),
    })
    assert plan.to_json()["nodes"] == [
        {"node": "n1", "seen": "kubelet-silent", "why": "the agent still writes",
         "kubeletSilentSince": "2026-01-02T03:00:00Z", "agentHeard": "2026-01-02T03:01:30Z"},
        {"node": "n2", "seen": "dark", "why": "why n2", "needsEvidence": True, "halted": True},
    ]


def test_fences_claim_deletes_and_unfences_keep_their_order_and_list_the_pods_they_free() -> None:
    plan = DarkPlan(
        fences=[Fence("n9", Evidence.PERSON, "confirmed off", pods=("ns/a", "ns/b")),
                Fence("n1", Evidence.REBOOT, "d")],
        claim_deletes=[ClaimDelete("n3", "claim-3", "dark for 10m", pods=("ns/c",))],
        unfences=[Unfence("n4", "Ready again", taint=False)],
        halted={"cluster": "5 of 6 dark"})
    doc = plan.to_json()
    assert doc["fence"] == [{"node": "n9", "evidence": "person", "detail": "confirmed off", "frees": ["ns/a", "ns/b"]},
                            {"node": "n1", "evidence": "reboot", "detail": "d", "frees": []}]
    assert doc["deleteNodeClaim"] == [{"node": "n3", "nodeClaim": "claim-3", "detail": "dark for 10m",
                                       "frees": ["ns/c"]}]
    assert doc["unfence"] == [{"node": "n4", "why": "Ready again", "taint": False}]
    assert doc["halted"] == {"cluster": "5 of 6 dark"}
