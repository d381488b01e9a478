"""high_node_utilization/consolidation.py declares the consolidation taint and nothing else; tested through its
users: the node HighNodeUtilization empties gets it (NoSchedule, owned by "strategy:HighNodeUtilization"), and it is
a key the autoscaler must treat as a status taint exactly when the strategy's args put it on nodes."""

from __future__ import annotations

from remediator.model.records import Effect
from remediator.peer_config.autoscaler_flags import owned_taint_keys, status_taint_flags
from remediator.policy.model import Policy, StrategyConfig
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from tests.unit.remediator.strategies.cluster import cycle, node, pod, snapshot

ARGS = HighNodeUtilizationArgs(thresholds=(("cpu", 20.0),))


def test_the_node_being_emptied_gets_the_no_schedule_consolidation_taint() -> None:
    s = snapshot([node("idle"), node("busy")], [pod("app", "idle"), *(pod(f"b{i}", "busy", cpu=500) for i in range(5))])
    [change] = cycle(s, "HighNodeUtilization", ARGS).taints_add
    assert (change.node, change.taint.key, change.taint.value, change.taint.effect) == (
        "idle", "nodemedic.io/consolidating", "true", Effect.NO_SCHEDULE)
    assert change.rules == ("strategy:HighNodeUtilization",)


def test_the_autoscaler_is_told_the_key_only_when_drained_nodes_are_tainted() -> None:
    tainting = Policy(strategies=(StrategyConfig("HighNodeUtilization", ARGS),))
    assert owned_taint_keys(tainting) == ["nodemedic.io/consolidating"]
    assert status_taint_flags(tainting) == ["--status-taint=nodemedic.io/consolidating"]
    quiet = HighNodeUtilizationArgs(thresholds=(("cpu", 20.0),), taint_drained_nodes=False)
    assert owned_taint_keys(Policy(strategies=(StrategyConfig("HighNodeUtilization", quiet),))) == []
