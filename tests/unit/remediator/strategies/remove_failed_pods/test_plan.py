"""RemoveFailedPods: descheduler's cases (failedpods_test.go) through the real gate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from remediator.model.records import ContainerStatuses, PodRecord
from remediator.strategies import STRATEGIES
from remediator.strategies.remove_failed_pods.args import RemoveFailedPodsArgs
from remediator.strategies.remove_failed_pods.plan import NAME
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

A = RemoveFailedPodsArgs
ANY = A(min_pod_lifetime_seconds=0)


def failed(name: str, node_name: str = "n1", *, terminated: str = "", code: int | None = None,
           init_terminated: str = "", init_code: int | None = None, init_waiting: str = "", reason: str = "",
           **kw: object) -> PodRecord:
    return pod(name, node_name, phase="Failed", reason=reason,
               containers=ContainerStatuses(terminated=(terminated,) if terminated else (),
                                            exit_codes=() if code is None else (code,)),
               init_containers=ContainerStatuses(terminated=(init_terminated,) if init_terminated else (),
                                                 waiting=(init_waiting,) if init_waiting else (),
                                                 exit_codes=() if init_code is None else (init_code,)),
               **kw)


@dataclass(frozen=True)
class Case:
    id: str
    pods: list[PodRecord]
    args: RemoveFailedPodsArgs
    evicted: list[str]
    other_node: dict[str, object] = field(default_factory=dict)


CASES = [
    Case("no-failures", [pod("a"), pod("b")], ANY, []),
    Case("terminated-reason-any", [failed("a", terminated="NodeAffinity")], ANY, ["a"]),
    Case("exit-code-1", [failed("a", code=1)], A(exit_codes=(1,), min_pod_lifetime_seconds=0), ["a"]),
    Case("exit-code-1-expected-2", [failed("a", code=1)], A(exit_codes=(2,), min_pod_lifetime_seconds=0), []),
    Case("two-pods-one-code-listed", [failed("a", code=1), failed("b", code=2)],
         A(exit_codes=(1,), min_pod_lifetime_seconds=0), ["a"]),
    Case("init-exit-code-needs-init-containers", [failed("a", init_code=1)],
         A(exit_codes=(1,), min_pod_lifetime_seconds=0), []),
    Case("init-exit-code-with-init-containers", [failed("a", init_code=1)],
         A(exit_codes=(1,), min_pod_lifetime_seconds=0, including_init_containers=True), ["a"]),
    Case("init-waiting-reason", [failed("a", init_waiting="CreateContainerConfigError")],
         A(reasons=("CreateContainerConfigError",), min_pod_lifetime_seconds=0, including_init_containers=True),
         ["a"]),
    Case("init-waiting-reason-without-init-containers", [failed("a", init_waiting="CreateContainerConfigError")],
         A(reasons=("CreateContainerConfigError",), min_pod_lifetime_seconds=0), []),
    Case("reason-not-listed", [failed("a", terminated="NodeAffinity")],
         A(reasons=("CreateContainerConfigError",), min_pod_lifetime_seconds=0), []),
    Case("pod-status-reason-counts", [failed("a", reason="Shutdown"), failed("b", reason="Evicted")],
         A(reasons=("Shutdown",), min_pod_lifetime_seconds=0), ["a"]),
    Case("younger-than-default-hour", [failed("a", terminated="Error", age=dt.timedelta(minutes=59))], A(), []),
    Case("older-than-default-hour", [failed("a", terminated="Error", age=dt.timedelta(minutes=61))], A(), ["a"]),
    Case("excluded-owner-kind", [failed("a", terminated="Error")],
         A(exclude_owner_kinds=("ReplicaSet",), min_pod_lifetime_seconds=0), []),
    Case("other-owner-kind-excluded", [failed("a", terminated="Error")],
         A(exclude_owner_kinds=("DaemonSet",), min_pod_lifetime_seconds=0), ["a"]),
    Case("terminating-stays", [failed("a", terminated="Error", terminating=True)], ANY, []),
    Case("bare-failed-pod-protected-by-default", [failed("a", terminated="Error", owner="")], ANY, []),
    # DS-TERM-1: descheduler with nodeFit asks a Failed pod to fit elsewhere; nodemedic does not.
    Case("needs-no-destination", [failed("a", terminated="Error", cpu=8000)], ANY, ["a"],
         other_node={"unschedulable": True}),
    Case("running-pods-are-not-failed", [pod("a"), pod("b", phase="Succeeded")], ANY, []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_descheduler_cases(case: Case) -> None:
    s = snapshot([node("n1"), node("n2", **case.other_node)], case.pods)  # type: ignore[arg-type]
    assert evicted(cycle(s, NAME, case.args)) == case.evicted


def test_registered_with_terminal_pods_and_the_reason_says_why() -> None:
    assert STRATEGIES[NAME].terminal_pods and STRATEGIES[NAME].kind == "deschedule"
    s = snapshot([node("n1"), node("n2")], [failed("a", terminated="OOMKilled", code=137)])
    [e] = cycle(s, NAME, A(reasons=("OOMKilled",), exit_codes=(137,))).evictions
    assert e.reason == "Failed for a pod 172800s old; reason OOMKilled; exit code 137"


def test_a_not_ready_node_is_left_alone() -> None:
    s = snapshot([node("n1", ready=False), node("n2")], [failed("a", terminated="Error")])
    assert evicted(cycle(s, NAME, ANY)) == []
