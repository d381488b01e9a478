"""DarkPlan: how many silent nodes each witness state counts (the plan's JSON of it is the read side's:
tests/unit/remediator/read_side/test_plan_sections.py)."""

from __future__ import annotations

import datetime as dt

from remediator.repair.dark_decisions import DarkPlan, Seen, SilentNode

T0 = dt.datetime(2026, 1, 2, 3, 0, 0, tzinfo=dt.UTC)


def _node(name: str, seen: Seen, **fields: object) -> SilentNode:
    return SilentNode(node=name, seen=seen, kubelet_silent_since=None, agent_heard=None, why=f"why {name}",
                      **fields)  # type: ignore[arg-type]


def test_count_counts_the_nodes_in_one_witness_state() -> None:
    plan = DarkPlan(nodes={"a": _node("a", Seen.DARK), "b": _node("b", Seen.FENCED), "c": _node("c", Seen.DARK)})
    assert [plan.count(s) for s in Seen] == [0, 2, 1, 0, 0]


