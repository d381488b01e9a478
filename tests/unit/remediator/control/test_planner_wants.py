"""What a strategy returns besides evictions (Wants) reaches the plan through the planner, behind the same rails for
every strategy: its declared taint, held on a node a rail protects or while the breaker is open; its memory."""

from __future__ import annotations

import datetime as dt

from remediator.control import planner
from remediator.model.plan import HoldReason, Plan
from remediator.model.records import Taint
from remediator.planning.gate import Gate
from remediator.planning.memory import PlannerMemory
from remediator.planning.wants import NodeCause, Wants
from remediator.policy.model import Policy
from remediator.policy.safety import EXCLUDE_LABEL
from remediator.state.snapshot import Snapshot
from remediator.strategies.strategy import Strategy
from tests.unit.remediator.strategies.cluster import NOW, node, snapshot

TAINT = Taint(key="example.com/busy", value="true")


def _plan(s: Snapshot, args: bool, gate: Gate) -> Wants:
    raise AssertionError("not called: the test merges Wants directly")


def _uses_taint(args: bool) -> bool:
    return args


FAKE = Strategy("Fake", "balance", lambda r, m: True, _plan, taint=TAINT, taints=_uses_taint)


def merged(wants: Wants, *, breaker_open: bool = False, args: bool = True) -> tuple[Plan, PlannerMemory]:
    s = snapshot([node("n1"), node("held", labels={EXCLUDE_LABEL: "true"})], [])
    plan, memory = Plan(breaker_open=breaker_open), PlannerMemory()
    planner._merge(plan, wants, snapshot=s, policy=Policy(), memory=memory, strategy=FAKE, args=args)
    return plan, memory


def test_a_strategys_taint_is_the_one_it_declares_owned_as_the_strategys() -> None:
    plan, _ = merged(Wants(taint=(NodeCause("n1", "idle"),), untaint=(NodeCause("n1", "done"),)))
    assert [(c.node, c.taint, c.rules, c.cause) for c in plan.taints_add] == [("n1", TAINT, ("strategy:Fake",), "idle")]
    assert [(c.node, c.cause) for c in plan.taints_remove] == [("n1", "done")]


def test_a_strategys_taint_passes_the_rails_and_the_breaker() -> None:
    plan, _ = merged(Wants(taint=(NodeCause("held", "idle"), NodeCause("gone", "idle"))))
    assert plan.taints_add == [] and [(h.node, h.reason) for h in plan.held] == [("held", HoldReason.OPTED_OUT)]
    plan, _ = merged(Wants(taint=(NodeCause("n1", "idle"),)), breaker_open=True)
    assert plan.taints_add == [] and [(h.node, h.reason) for h in plan.held] == [("n1", HoldReason.CIRCUIT_BREAKER)]


def test_no_taint_when_the_args_do_not_use_it() -> None:
    plan, _ = merged(Wants(taint=(NodeCause("n1", "idle"),)), args=False)
    assert plan.taints_add == [] and plan.held == []


def test_memory_is_what_the_strategy_returned_and_kept_when_it_returns_none() -> None:
    then = NOW - dt.timedelta(minutes=1)
    _, memory = merged(Wants(remember={"n1": then}))
    assert memory.strategies == {"Fake": {"n1": then}}
    _, memory = merged(Wants())
    assert memory.strategies == {}
