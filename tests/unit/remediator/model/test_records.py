"""PodRecord.live against TERMINAL_PHASES: two tests that look alike and mean different things.

`live` is what kube-scheduler counts for topology spread and a workload counts as its replicas; a pod being deleted
is not live. What holds room on a node is every pod not Succeeded or Failed, a terminating one included: it keeps its
requests until the kubelet has stopped it. Node fit must go on counting it, so the two stay apart."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.model.records import TERMINAL_PHASES, PodRecord
from remediator.scheduling.nodefit import PODS, pod_request_summary
from remediator.scheduling.usage import live_pods
from remediator.state.snapshot import Snapshot


def pod(name: str, phase: str = "Running", *, terminating: bool = False, node: str = "n1") -> PodRecord:
    return PodRecord("default", name, f"uid-{name}", node_name=node, phase=phase, terminating=terminating,
                     requests={"cpu": 1000})


@pytest.mark.parametrize(("record", "live", "holds_room"), [
    (pod("running"), True, True),
    (pod("pending-unbound", "Pending", node=""), True, True),  # waits for a node: still a replica the owner counts
    (pod("terminating", terminating=True), False, True),  # being deleted: not counted, yet still holds its requests
    (pod("succeeded", "Succeeded"), False, False),
    (pod("failed", "Failed"), False, False),
    (pod("failed-and-terminating", "Failed", terminating=True), False, False),
], ids=lambda v: v.name if isinstance(v, PodRecord) else None)
def test_a_terminating_pod_is_not_live_but_still_holds_room(record: PodRecord, live: bool, holds_room: bool) -> None:
    assert record.live is live
    assert (record.phase not in TERMINAL_PHASES) is holds_room


def test_node_fit_counts_a_terminating_pod_that_usage_and_spread_leave_out() -> None:
    pods = [pod("a"), pod("b", terminating=True), pod("c", "Succeeded")]
    snapshot = Snapshot(now=dt.datetime(2026, 6, 1, tzinfo=dt.UTC), nodes={}, pods_by_node={"n1": pods},
                        pods_by_owner={})
    assert pod_request_summary(pods) == {"cpu": 2000, PODS: 2}  # the node is not free while b shuts down
    assert [p.name for p in live_pods(snapshot, "n1")] == ["a"]  # utilization: b is going
    assert [p.name for p in snapshot.live().in_namespace("default")] == ["a"]  # topology spread: b is not counted
