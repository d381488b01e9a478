"""strategy.py: `admitting`, the plan of a deschedule strategy that hands each of its candidates to the gate and
wants nothing more; a Strategy record's defaults (it owns no taint, and `taints(args)` says yes), read by their users
(the autoscaler's status-taint keys) and the strategies registered with them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

from remediator.model.plan import PlannedEviction
from remediator.peer_config.autoscaler_flags import owned_taint_keys
from remediator.planning.gate import Gate
from remediator.planning.wants import NOTHING
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.snapshot import Snapshot
from remediator.strategies import STRATEGIES
from remediator.strategies.remove_failed_pods.args import RemoveFailedPodsArgs
from remediator.strategies.strategy import Strategy, admitting
from tests.unit.remediator.strategies.cluster import pod, snapshot


class _Gate:
    def __init__(self) -> None:
        self.admitted: list[PlannedEviction] = []

    def admit(self, c: PlannedEviction) -> None:
        self.admitted.append(c)


def test_an_admitting_plan_hands_every_candidate_to_the_gate_in_order_and_wants_nothing() -> None:
    s = snapshot([], [])
    seen: list[tuple[Snapshot, str]] = []

    def candidates(snap: Snapshot, args: str) -> Iterator[PlannedEviction]:
        seen.append((snap, args))
        yield PlannedEviction(pod("b"), "S", "one")
        yield PlannedEviction(pod("a"), "S", "two")

    gate = _Gate()
    assert admitting(candidates)(s, "the args", cast(Gate, gate)) is NOTHING
    assert seen == [(s, "the args")]
    assert [(c.pod.name, c.reason) for c in gate.admitted] == [("b", "one"), ("a", "two")]


def test_an_admitting_plan_with_no_candidates_admits_nothing() -> None:
    gate = _Gate()
    assert admitting(lambda snap, args: [])(snapshot([], []), None, cast(Gate, gate)) is NOTHING
    assert gate.admitted == []


def test_a_strategy_by_default_owns_no_taint_and_its_taints_check_says_yes_to_any_args() -> None:
    record = Strategy("X", "deschedule", lambda r, s: None, admitting(lambda snap, args: []))
    assert record.taint is None and not record.terminal_pods and not record.empties_nodes
    assert record.taints(object()) is True


def test_only_a_strategy_owning_a_taint_its_args_use_adds_an_autoscaler_status_taint() -> None:
    failed = StrategyConfig("RemoveFailedPods", RemoveFailedPodsArgs())
    assert STRATEGIES["RemoveFailedPods"].taint is None
    assert owned_taint_keys(Policy(strategies=(failed,))) == []

