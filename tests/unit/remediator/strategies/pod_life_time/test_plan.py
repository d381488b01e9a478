"""PodLifeTime: descheduler's cases (pod_lifetime_test.go) through the real gate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest

from remediator.model.records import ContainerStatuses, LabelSelector, PodCondition, PodRecord
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.strategies.pod_life_time.args import ConditionFilter, PodLifeTimeArgs
from remediator.strategies.pod_life_time.plan import NAME
from remediator.strategies.pod_scope import PodScope
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

L = PodLifeTimeArgs
F = ConditionFilter
HOUR = dt.timedelta(hours=1)
AGE = dt.timedelta(days=2)  # the pods' age (cluster.pod's default)
OLD, NEW = 2 * HOUR, dt.timedelta(minutes=1)  # descheduler's oldTransitionTime and newTransitionTime, ago
FIVE_MINUTES, FOUR_HOURS = 300, 14400


def conditioned(name: str, *conditions: tuple[str, str, str, dt.timedelta | None], **kw: object) -> PodRecord:
    """A pod (created AGE ago) with status.conditions given as (type, status, reason, transitioned ago)."""
    return pod(name, age=AGE, conditions=tuple(
        PodCondition(t, s, r, None if ago is None else int((AGE - ago).total_seconds()))
        for t, s, r, ago in conditions), **kw)


def waiting(name: str, reason: str, *, init: bool = False, ephemeral: bool = False, **kw: object) -> PodRecord:
    statuses = ContainerStatuses(waiting=(reason,))
    which = "init_containers" if init else "ephemeral_containers" if ephemeral else "containers"
    return pod(name, **{which: statuses}, **kw)  # type: ignore[arg-type]


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
    # includingEphemeralContainers (TestPodLifeTime, TestStatesWithEphemeralContainers)
    Case("ephemeral-state-needs-flag", [waiting("a", "CreateContainerError", ephemeral=True)],
         L(states=("CreateContainerError",)), []),
    Case("ephemeral-state-with-flag", [waiting("a", "CreateContainerError", ephemeral=True)],
         L(states=("CreateContainerError",), including_ephemeral_containers=True), ["a"]),
    Case("ephemeral-terminated-with-flag",
         [pod("a", ephemeral_containers=ContainerStatuses(terminated=("OOMKilled",)))],
         L(states=("OOMKilled",), including_ephemeral_containers=True), ["a"]),
    Case("ephemeral-terminated-without-flag",
         [pod("a", ephemeral_containers=ContainerStatuses(terminated=("OOMKilled",)))], L(states=("OOMKilled",)), []),
    Case("init-flag-does-not-read-ephemeral", [waiting("a", "CreateContainerError", ephemeral=True)],
         L(states=("CreateContainerError",), including_init_containers=True), []),
    # conditions (TestConditionFiltering)
    Case("condition-reason-and-status",
         [conditioned("p1", ("Initialized", "True", "PodCompleted", OLD)),
          conditioned("p2", ("Initialized", "True", "OtherReason", OLD))],
         L(conditions=(F(reason="PodCompleted", status="True"),)), ["p1"]),
    Case("condition-type-only", [conditioned("p1", ("Ready", "False", "", OLD))],
         L(conditions=(F(type="Ready"),)), ["p1"]),
    Case("no-matching-condition", [conditioned("p1", ("Ready", "True", "SomethingElse", None))],
         L(conditions=(F(reason="PodCompleted"),)), []),
    Case("all-given-fields-must-match-one-condition",
         [conditioned("p1", ("Ready", "True", "", OLD), ("Initialized", "False", "", OLD))],
         L(conditions=(F(type="Ready", status="False"),)), []),
    Case("any-filter-may-match",
         [conditioned("p1", ("Ready", "False", "", OLD)), conditioned("p2", ("Initialized", "True", "", OLD))],
         L(conditions=(F(type="Nope"), F(type="Initialized"))), ["p2"]),
    # minTimeSinceLastTransitionSeconds (TestTransitionTimeFiltering)
    Case("old-transition", [conditioned("p1", ("Initialized", "True", "PodCompleted", OLD),
                                        ("Ready", "False", "PodCompleted", OLD), phase="Succeeded")],
         L(states=("Succeeded",), conditions=(F(reason="PodCompleted", status="True",
                                                min_time_since_last_transition_seconds=FIVE_MINUTES),)), ["p1"]),
    Case("recent-transition", [conditioned("p1", ("Ready", "False", "", NEW), phase="Succeeded")],
         L(states=("Succeeded",), conditions=(F(min_time_since_last_transition_seconds=FOUR_HOURS),)), []),
    Case("transition-time-of-the-matching-condition-only",
         [conditioned("p1", ("Initialized", "", "PodCompleted", OLD), ("Ready", "", "OtherReason", NEW))],
         L(conditions=(F(reason="PodCompleted", min_time_since_last_transition_seconds=FIVE_MINUTES),)), ["p1"]),
    Case("no-conditions-no-transition", [pod("p1")],
         L(states=("Running",), conditions=(F(min_time_since_last_transition_seconds=FIVE_MINUTES),)), []),
    Case("no-transition-time-never-old-enough", [conditioned("p1", ("Ready", "True", "", None))],
         L(conditions=(F(type="Ready", min_time_since_last_transition_seconds=0),)), []),
    Case("exactly-the-minimum-is-enough", [conditioned("p1", ("Ready", "False", "", dt.timedelta(seconds=300)))],
         L(conditions=(F(type="Ready", min_time_since_last_transition_seconds=FIVE_MINUTES),)), ["p1"]),
    Case("a-second-short-is-not", [conditioned("p1", ("Ready", "False", "", dt.timedelta(seconds=299)))],
         L(conditions=(F(type="Ready", min_time_since_last_transition_seconds=FIVE_MINUTES),)), []),
    # TestCombinedFilters
    Case("succeeded-completed-and-stale",
         [conditioned("stale-completed", ("Initialized", "True", "PodCompleted", OLD),
                      ("Ready", "False", "PodCompleted", OLD), phase="Succeeded"),
          conditioned("recent-completed", ("Initialized", "True", "PodCompleted", NEW), phase="Succeeded"),
          pod("running-pod")],
         L(states=("Succeeded",), conditions=(F(reason="PodCompleted", status="True",
                                                min_time_since_last_transition_seconds=FIVE_MINUTES),)),
         ["stale-completed"]),
    Case("condition-without-the-state", [conditioned("p1", ("Initialized", "True", "PodCompleted", OLD))],
         L(states=("Succeeded",), conditions=(F(reason="PodCompleted"),)), []),
    Case("failed-min-age-exclude-job",
         [pod("failed-rs", phase="Failed", containers=ContainerStatuses(terminated=("Error",))),
          pod("failed-job", phase="Failed", owner="Job")],
         L(states=("Failed",), max_pod_life_time_seconds=0, owner_kinds_exclude=("Job",)), ["failed-rs"]),
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


def test_the_reason_names_the_condition_and_how_long_ago_it_changed() -> None:
    s = snapshot([node("n1"), node("n2")], [conditioned("a", ("Ready", "False", "PodCompleted", 5 * HOUR),
                                                        phase="Succeeded")])
    [e] = cycle(s, NAME, L(states=("Succeeded",), conditions=(F(reason="PodCompleted", status="False",
                                                                 min_time_since_last_transition_seconds=60),))).evictions
    assert e.reason == "state Succeeded; condition Ready=False (PodCompleted) for 18000s"


def test_the_reason_gives_age_and_state() -> None:
    s = snapshot([node("n1"), node("n2")], [waiting("a", "CrashLoopBackOff", age=HOUR)])
    [e] = cycle(s, NAME, L(max_pod_life_time_seconds=600, states=("CrashLoopBackOff",))).evictions
    assert e.reason == "age 3600s > maxPodLifeTimeSeconds 600; state CrashLoopBackOff"
