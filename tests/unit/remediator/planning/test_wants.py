"""Wants is pure declarations (no behaviour of its own): tested here as its users read it, through the smallest public
function that does, make_plan, with a fake balance strategy registered for the test that returns the Wants given.
What each field promises: `taint`/`untaint` become the strategy's own taint changes, `report` is carried under the
strategy's name as it is, `remember` is handed back next cycle (None keeps what it had), NOTHING changes nothing.
(The rails on those taints are tested through the planner's merge in tests/unit/remediator/control.)"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pytest

from remediator.control.planner import make_plan
from remediator.model.migration import Gain
from remediator.model.plan import NodeNotice, Nomination, Plan
from remediator.model.records import Taint
from remediator.planning.gate import Gate
from remediator.planning.memory import PlannerMemory, Remembered
from remediator.planning.wants import NOTHING, NodeCause, Wants
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.snapshot import Snapshot
from remediator.strategies import STRATEGIES
from remediator.strategies.strategy import Strategy
from tests.unit.remediator.strategies.cluster import NOW, node, snapshot

TAINT = Taint(key="example.com/wanted", value="true")


class Report:
    @property
    def json_key(self) -> str:
        return "wanted"

    def to_json(self) -> object:
        return {"found": 1}

    def why(self, node: str) -> Sequence[str]:
        return ()

    def notices(self) -> Sequence[NodeNotice]:
        return ()

    def nominations(self) -> Sequence[Nomination]:
        return ()

    def gain(self) -> Gain | None:
        return None


class Scripted:
    """The fake strategy's plan: returns the next Wants and records what the gate gave back to remember."""

    def __init__(self, *wants: Wants) -> None:
        self.wants = list(wants)
        self.remembered: list[Remembered] = []

    def __call__(self, s: Snapshot, args: object, gate: Gate) -> Wants:
        self.remembered.append(dict(gate.view.remembered))
        return self.wants.pop(0)


Cycles = Callable[..., tuple[list[Plan], Scripted, PlannerMemory]]  # Wants, one per cycle -> plans, script, memory


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch) -> Cycles:
    def cycles(*wants: Wants) -> tuple[list[Plan], Scripted, PlannerMemory]:
        script = Scripted(*wants)
        monkeypatch.setitem(STRATEGIES, "Wanting", Strategy("Wanting", "balance", lambda r, m: None, script,
                                                              taint=TAINT))
        policy = Policy(strategies=(StrategyConfig("Wanting", None),))
        s, memory = snapshot([node("n1"), node("n2")], []), PlannerMemory()
        plans = [make_plan(s, policy, memory) for _ in wants]
        return plans, script, memory
    return cycles


def test_nothing_wants_no_taint_no_report_and_keeps_no_memory(run: Cycles) -> None:
    (plan,), _, memory = run(NOTHING)
    assert (plan.taints_add, plan.taints_remove, plan.held) == ([], [], [])
    assert "Wanting" not in plan.reports and "Wanting" not in memory.strategies


def test_taint_and_untaint_become_the_strategys_own_taint_changes_on_nodes_of_the_plan(run: Cycles) -> None:
    wants = Wants(taint=(NodeCause("n1", "idle for 10m"), NodeCause("not-a-node", "idle")),
                  untaint=(NodeCause("n2", "busy again"),))
    (plan,), _, _ = run(wants)
    assert [(c.node, c.taint, c.rules, c.cause) for c in plan.taints_add] == [
        ("n1", TAINT, ("strategy:Wanting",), "idle for 10m")]
    assert [(c.node, c.taint, c.cause) for c in plan.taints_remove] == [("n2", TAINT, "busy again")]


def test_a_report_is_carried_under_the_strategys_name_as_it_is(run: Cycles) -> None:
    report = Report()
    (plan,), _, _ = run(Wants(report=report))
    assert plan.reports["Wanting"] is report


def test_remember_is_handed_back_next_cycle_and_none_keeps_what_it_had(run: Cycles) -> None:
    then = NOW - dt.timedelta(minutes=5)
    _, script, memory = run(Wants(remember={"n1": then}), Wants(remember=None), Wants(remember={}), NOTHING)
    assert script.remembered == [{}, {"n1": then}, {"n1": then}, {}]
    assert memory.strategies["Wanting"] == {}
