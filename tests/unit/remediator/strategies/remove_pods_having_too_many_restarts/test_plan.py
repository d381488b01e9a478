"""RemovePodsHavingTooManyRestarts: descheduler's cases (toomanyrestarts_test.go) through the real gate, and the
node that holds a workload's only restarting replicas (DS-RST-1)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from remediator.model.records import ContainerStatuses, PodRecord
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.read_side.plan_answer import PlanAnswer
from remediator.strategies import STRATEGIES
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_pods_having_too_many_restarts.args import RemovePodsHavingTooManyRestartsArgs
from remediator.strategies.remove_pods_having_too_many_restarts.plan import KIND, NAME, candidates
from remediator.strategies.remove_pods_having_too_many_restarts.report import CrashLoopNodes
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot


def restarting(name: str, count: int, node_name: str = "n1", *, init: int = 0, waiting: str = "",
               init_waiting: str = "", **kw: object) -> PodRecord:
    return pod(name, node_name,
               containers=ContainerStatuses(restarts=count, waiting=(waiting,) if waiting else ()),
               init_containers=ContainerStatuses(restarts=init, waiting=(init_waiting,) if init_waiting else ()),
               **kw)


@dataclass(frozen=True)
class Case:
    id: str
    pods: list[PodRecord]
    args: RemovePodsHavingTooManyRestartsArgs
    evicted: list[str]
    other_node: dict[str, object] = field(default_factory=dict)
    limits: Limits = Limits(owner_cooldown=dt.timedelta(0))


T = RemovePodsHavingTooManyRestartsArgs
CASES = [
    Case("all-under-threshold", [restarting("a", 2), restarting("b", 9)], T(10), []),
    Case("over-and-at-threshold-most-restarts-first", [restarting("a", 10), restarting("b", 25), restarting("c", 3)],
         T(10), ["b", "a"]),
    Case("init-containers-counted-only-when-asked", [restarting("a", 5, init=5), restarting("b", 10)],
         T(10, including_init_containers=True), ["a", "b"]),
    Case("init-containers-not-counted-by-default", [restarting("a", 5, init=5), restarting("b", 10)], T(10), ["b"]),
    Case("per-node-limit", [restarting(f"p{i}", 10 + i) for i in range(5)], T(10), ["p4", "p3", "p2"],
         limits=Limits(max_pods_to_evict_per_node=3, owner_cooldown=dt.timedelta(0))),
    Case("other-node-unschedulable-no-fit", [restarting("a", 10)], T(10), [], other_node={"unschedulable": True}),
    Case("other-node-too-small-no-fit", [restarting("a", 10, cpu=3000)], T(10), [],
         other_node={"cpu": 1000}),
    Case("states-crashloop-matches-waiting-reason",
         [restarting("a", 10, waiting="CrashLoopBackOff"), restarting("b", 10)], T(10, states=("CrashLoopBackOff",)),
         ["a"]),
    Case("states-running-skips-pending", [restarting("a", 10), restarting("b", 10, phase="Pending")],
         T(10, states=("Running",)), ["a"]),
    Case("init-crashloop-only-with-init-containers",
         [restarting("a", 0, init=10, init_waiting="CrashLoopBackOff", phase="Pending")],
         T(10, states=("CrashLoopBackOff",), including_init_containers=True), ["a"]),
    Case("init-crashloop-ignored-without-init-containers",
         [restarting("a", 0, init=10, init_waiting="CrashLoopBackOff", phase="Pending")],
         T(10, states=("CrashLoopBackOff",)), []),
    Case("failed-pods-are-listed-too", [restarting("a", 12, phase="Failed")], T(10), ["a"]),
    Case("namespace-excluded", [restarting("a", 12, namespace="batch")],
         T(10, scope=PodScope(Namespaces(exclude=("batch",)))), []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_descheduler_cases(case: Case) -> None:
    s = snapshot([node("n1"), node("n2", **case.other_node)], case.pods)  # type: ignore[arg-type]
    assert evicted(cycle(s, NAME, case.args, limits=case.limits)) == case.evicted


def test_registered_as_a_deschedule_strategy_that_sees_terminal_pods() -> None:
    assert STRATEGIES[NAME].kind == KIND == "deschedule"
    assert STRATEGIES[NAME].terminal_pods


def test_the_reason_names_the_count_and_the_threshold() -> None:
    s = snapshot([node("n1"), node("n2")], [restarting("a", 12)])
    [e] = cycle(s, NAME, T(10)).evictions
    assert e.reason == "12 restarts >= podRestartThreshold 10"


def test_a_bare_failed_pod_stays_unless_the_evictor_allows_failed_bare_pods() -> None:
    s = snapshot([node("n1"), node("n2")], [restarting("a", 12, phase="Failed", owner="")])
    assert evicted(cycle(s, NAME, T(10))) == []
    assert evicted(cycle(s, NAME, T(10), evictor=EvictorArgs(evict_failed_bare_pods=True))) == ["a"]


def test_a_node_holding_the_only_restarting_replicas_of_a_healthy_workload_is_named() -> None:
    web = [restarting("web-1", 30, "bad", owner_name="web"), restarting("web-2", 40, "bad", owner_name="web"),
           restarting("web-3", 0, "n2", owner_name="web"), restarting("web-4", 1, "n3", owner_name="web")]
    s = snapshot([node("bad"), node("n2"), node("n3")], web)
    p = cycle(s, NAME, T(10))
    assert evicted(p) == ["web-2", "web-1"]
    report = p.reports[NAME]
    assert isinstance(report, CrashLoopNodes)
    [found] = report.nodes
    assert (found.node, found.owner, found.restarting, found.healthy_elsewhere) == (
        "bad", "ReplicaSet/web", ("web-1", "web-2"), 2)
    assert PlanAnswer.of(p).to_json()["crashLoopNodes"] == [
        {"node": "bad", "namespace": "default", "owner": "ReplicaSet/web", "pods": ["web-1", "web-2"],
         "healthyElsewhere": 2}]


@pytest.mark.parametrize(("pods", "why"), [
    ([restarting("w1", 30, "n1", owner_name="w"), restarting("w2", 30, "n2", owner_name="w")],
     "restarting-everywhere"),
    ([restarting("w1", 30, "n1", owner_name="w"), restarting("w2", 0, "n1", owner_name="w"),
      restarting("w3", 0, "n2", owner_name="w")], "healthy-replica-on-the-same-node"),
    ([restarting("w1", 30, "n1", owner_name="w")], "no-replica-elsewhere"),
    ([restarting("w1", 30, "n1", owner_name="w"), restarting("w2", 0, "n2", owner_name="w")],
     "a-single-restarting-replica"),
    ([restarting("w1", 30, "n1", owner_name="w"), restarting("w2", 0, "n2", owner_name="w", phase="Pending")],
     "replica-elsewhere-not-running"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_no_node_is_named_when_the_workload_itself_is_the_problem(pods: list[PodRecord], why: str) -> None:
    s = snapshot([node("n1"), node("n2")], pods)
    assert [c for c in candidates(s, T(10)) if not hasattr(c, "pod")] == [], why
