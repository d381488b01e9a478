"""PodLifeTime: descheduler's cases (pod_lifetime_test.go) through the real gate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from remediator.model import ContainerStatuses, LabelSelector, PodRecord
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.strategies.pod_life_time.args import PodLifeTimeArgs
from remediator.strategies.pod_life_time.plan import NAME
from remediator.strategies.scope import PodScope
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

L = PodLifeTimeArgs
HOUR = dt.timedelta(hours=1)


def waiting(name: str, reason: str, *, init: bool = False, **kw: object) -> PodRecord:
    statuses = ContainerStatuses(waiting=(reason,))
    return pod(name, **({"init_containers": statuses} if init else {"containers": statuses}), **kw)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Case:
    id: str
    pods: list[PodRecord]
    args: PodLifeTimeArgs
    evicted: list[str]


CASES = [
    Case("one-new-one-old", [pod("new", age=HOUR), pod("old", age=30 * HOUR)],
         L(max_pod_life_time_seconds=86400), ["old"]),
    Case("both-new", [pod("a", age=HOUR), pod("b", age=HOUR)], L(max_pod_life_time_seconds=86400), []),
    Case("605s-over-600", [pod("a", age=dt.timedelta(seconds=605))], L(max_pod_life_time_seconds=600), ["a"]),
    Case("595s-under-600", [pod("a", age=dt.timedelta(seconds=595))], L(max_pod_life_time_seconds=600), []),
    Case("exactly-600-is-not-over", [pod("a", age=dt.timedelta(seconds=600))], L(max_pod_life_time_seconds=600), []),
    Case("oldest-first", [pod("b", age=2 * HOUR), pod("a", age=5 * HOUR), pod("c", age=3 * HOUR)],
         L(max_pod_life_time_seconds=60), ["a", "c", "b"]),
    Case("terminating-stays", [pod("a", terminating=True)], L(max_pod_life_time_seconds=60), []),
    Case("label-selector", [pod("a", labels={"app": "x"}), pod("b")],
         L(scope=PodScope(label_selector=LabelSelector(
             match_labels=(("app", "x"),))), max_pod_life_time_seconds=60), ["a"]),
    Case("namespace-include", [pod("a", namespace="batch"), pod("b")],
         L(scope=PodScope(Namespaces(include=("batch",))), max_pod_life_time_seconds=60), ["a"]),
    Case("container-creating", [waiting("a", "ContainerCreating"), pod("b")], L(states=("ContainerCreating",)), ["a"]),
    Case("crashloop", [waiting("a", "CrashLoopBackOff")], L(states=("CrashLoopBackOff",)), ["a"]),
    Case("image-pull-not-listed", [waiting("a", "ImagePullBackOff")], L(states=("ContainerCreating",)), []),
    Case("init-state-needs-flag", [waiting("a", "CreateContainerError", init=True)],
         L(states=("CreateContainerError",)), []),
    Case("init-state-with-flag", [waiting("a", "CreateContainerError", init=True)],
         L(states=("CreateContainerError",), including_init_containers=True), ["a"]),
    Case("pod-reason-node-lost", [pod("a", reason="NodeLost")], L(states=("NodeLost",)), ["a"]),
    Case("phase-succeeded", [pod("a", phase="Succeeded")], L(states=("Succeeded",)), ["a"]),
    Case("phase-failed", [pod("a", phase="Failed")], L(states=("Failed",)), ["a"]),
    Case("terminated-reason", [pod("a", containers=ContainerStatuses(terminated=("OOMKilled",)))],
         L(states=("OOMKilled",)), ["a"]),
    Case("age-and-state-both-needed", [waiting("a", "CrashLoopBackOff", age=HOUR), pod("b", age=30 * HOUR)],
         L(max_pod_life_time_seconds=600, states=("CrashLoopBackOff",)), ["a"]),
    Case("owner-kinds-exclude", [pod("a"), pod("b", owner="Job")],
         L(max_pod_life_time_seconds=60, owner_kinds_exclude=("Job",)), ["a"]),
    Case("owner-kinds-include", [pod("a"), pod("b", owner="Job")],
         L(max_pod_life_time_seconds=60, owner_kinds_include=("Job",)), ["b"]),
    Case("exit-codes", [pod("a", containers=ContainerStatuses(exit_codes=(137,))), pod("b")],
         L(exit_codes=(137,)), ["a"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_descheduler_cases(case: Case) -> None:
    s = snapshot([node("n1"), node("n2")], case.pods)
    assert evicted(cycle(s, NAME, case.args)) == case.evicted


def test_limits_take_the_oldest() -> None:
    s = snapshot([node("n1"), node("n2")], [pod("b", age=2 * HOUR), pod("a", age=5 * HOUR)])
    p = cycle(s, NAME, L(max_pod_life_time_seconds=60),
              limits=Limits(max_pods_to_evict_total=1, owner_cooldown=dt.timedelta(0)))
    assert evicted(p) == ["a"] and [d.pod.name for d in p.deferred] == ["b"]


def test_the_reason_gives_age_and_state() -> None:
    s = snapshot([node("n1"), node("n2")], [waiting("a", "CrashLoopBackOff", age=HOUR)])
    [e] = cycle(s, NAME, L(max_pod_life_time_seconds=600, states=("CrashLoopBackOff",))).evictions
    assert e.reason == "age 3600s > maxPodLifeTimeSeconds 600; state CrashLoopBackOff"
