"""The safety rails: why a node is held (pause first, then opt-out, the autoscaler's taints, its leave-alone
annotations) and the circuit breaker's limit (the smaller of count and percent, never below the floor)."""

from __future__ import annotations

import pytest

from remediator.model.plan import HoldReason
from remediator.model.records import Effect, NodeRecord, Taint
from remediator.planning.rails import Hold, safety_hold, tainted_limit
from remediator.policy.safety import EXCLUDE_LABEL, Safety


def test_a_plain_node_is_not_held() -> None:
    assert safety_hold(NodeRecord(name="n1", labels={EXCLUDE_LABEL: "false"}), Safety()) is None


def test_pause_holds_every_node_before_any_other_reason() -> None:
    node = NodeRecord(name="n1", labels={EXCLUDE_LABEL: "true"}, taints=(Taint("karpenter.sh/disrupted"),))
    assert safety_hold(node, Safety(paused=True)) == Hold(HoldReason.PAUSED, "paused")


def test_a_node_labelled_with_the_configured_exclude_label_is_opted_out() -> None:
    node = NodeRecord(name="n1", labels={"team/keep": "true"})
    assert safety_hold(node, Safety(exclude_label="team/keep")) == Hold(HoldReason.OPTED_OUT,
                                                                        "node opted out (team/keep=true)")
    assert safety_hold(node, Safety()) is None


@pytest.mark.parametrize(("key", "why"), [
    ("ToBeDeletedByClusterAutoscaler", "cluster-autoscaler is removing the node"),
    ("DeletionCandidateOfClusterAutoscaler", "cluster-autoscaler may remove the node soon"),
    ("karpenter.sh/disrupted", "Karpenter is disrupting the node"),
    ("karpenter.sh/unregistered", "Karpenter has not registered the node yet"),
])
def test_an_autoscaler_taint_holds_the_node_whatever_its_effect(key: str, why: str) -> None:
    node = NodeRecord(name="n1", taints=(Taint("other"), Taint(key, "x", Effect.PREFER_NO_SCHEDULE)))
    assert safety_hold(node, Safety()) == Hold(HoldReason.AUTOSCALER, f"{why} (taint {key})")


@pytest.mark.parametrize("key", ["cluster-autoscaler.kubernetes.io/scale-down-disabled", "karpenter.sh/do-not-disrupt"])
def test_a_leave_alone_annotation_set_to_true_holds_the_node(key: str) -> None:
    assert safety_hold(NodeRecord(name="n1", annotations={key: "true"}), Safety()) == Hold(
        HoldReason.AUTOSCALER, f"the node autoscaler is told to leave the node alone ({key}=true)")
    assert safety_hold(NodeRecord(name="n1", annotations={key: "false"}), Safety()) is None


@pytest.mark.parametrize(("safety", "total", "limit"), [
    (Safety(), 100, 3),  # 3 nodes < 10 %
    (Safety(), 20, 2),  # 10 % of 20 < 3
    (Safety(), 5, 1),  # 10 % of 5 floors to 0: the floor of 1 holds
    (Safety(max_tainted_nodes=None), 55, 5),
    (Safety(max_tainted_nodes_percent=None), 10, 3),
    (Safety(max_tainted_nodes=None, max_tainted_nodes_percent=None), 42, 42),  # no bound: every node
    (Safety(max_tainted_nodes=0, max_tainted_nodes_percent=None, min_tainted_nodes=0), 10, 0),
    (Safety(max_tainted_nodes=1, min_tainted_nodes=4), 100, 4),  # the floor wins over both bounds
])
def test_the_tainted_limit_is_the_smaller_bound_but_never_below_the_floor(safety: Safety, total: int,
                                                                          limit: int) -> None:
    assert tainted_limit(safety, total) == limit
