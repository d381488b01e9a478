"""RemovePodsViolatingInterPodAntiAffinity: descheduler's cases (pod_antiaffinity_test.go) through the real gate."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import pytest

from remediator.model.records import LabelSelector, PodAffinityTerm, PodRecord
from remediator.policy.limits import Limits
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.args import (
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.plan import NAME, SMALL_DOMAIN
from tests.unit.remediator.strategies.cluster import cycle, evicted, node, pod, snapshot

ARGS = RemovePodsViolatingInterPodAntiAffinityArgs()
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def avoids(app: str, key: str = HOST) -> tuple[PodAffinityTerm, ...]:
    return (PodAffinityTerm(LabelSelector(match_labels=(("app", app),)), ("default",), False, key),)


def web(name: str, node_name: str = "n1", *, avoid: str = "web", key: str = HOST, **kw: object) -> PodRecord:
    return pod(name, node_name, labels={"app": "web"}, required_anti_affinity=avoids(avoid, key), **kw)


@dataclass(frozen=True)
class Case:
    id: str
    pods: list[PodRecord]
    evicted: list[str]
    limits: Limits = Limits(owner_cooldown=dt.timedelta(0))
    other_node: dict[str, object] = field(default_factory=dict)


CASES = [
    Case("two-repel-each-other-only-the-first-goes", [web("a"), web("b")], ["a"]),
    Case("lowest-priority-first", [web("a", priority=100), web("b", priority=10)], ["b"]),
    Case("no-priority-before-any", [web("a", priority=0), web("b")], ["b"]),
    Case("three-of-a-kind-two-go", [web("a"), web("b"), web("c")], ["a", "b"]),
    Case("per-node-limit", [web("a"), web("b"), web("c")], ["a"],
         limits=Limits(max_pods_to_evict_per_node=1, owner_cooldown=dt.timedelta(0))),
    Case("both-critical-none-goes",
         [web("crit", priority=2_000_000_000), pod("x", labels={"app": "web"}, required_anti_affinity=avoids("web"),
                                                   priority=2_000_000_001)], []),
    Case("critical-stays-the-other-goes",
         [web("crit", priority=2_000_000_000), web("low", priority=5)], ["low"]),
    Case("protected-first-pod-the-second-goes", [web("a", has_local_storage=True), web("b")], ["b"]),
    Case("only-other-node-unschedulable", [web("a"), web("b")], [], other_node={"unschedulable": True}),
    Case("only-other-node-too-small", [web("a", cpu=3000), web("b", cpu=3000)], [], other_node={"cpu": 1000}),
    Case("terminating-pods-stay", [web("a", terminating=True), web("b", terminating=True)], []),
    Case("different-nodes-same-zone", [web("a", key=ZONE), web("b", "n2", key=ZONE)], ["a"]),
    Case("different-zones-no-violation", [web("a", key=ZONE), web("b", "n3", key=ZONE)], []),
    Case("selector-matches-nobody", [web("a", avoid="db"), web("b", avoid="db")], []),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_descheduler_cases(case: Case) -> None:
    nodes = [node("n1", labels={HOST: "n1", ZONE: "a"}),
             node("n2", labels={HOST: "n2", ZONE: "a"}, **case.other_node),  # type: ignore[arg-type]
             node("n3", labels={HOST: "n3", ZONE: "b"}, **case.other_node)]  # type: ignore[arg-type]
    assert evicted(cycle(snapshot(nodes, case.pods), NAME, ARGS, limits=case.limits)) == case.evicted


def test_the_reason_names_the_other_pod_and_the_domain() -> None:
    s = snapshot([node("n1", labels={HOST: "n1"}), node("n2", labels={HOST: "n2"})], [web("a"), web("b")])
    [e] = cycle(s, NAME, ARGS).evictions
    assert e.reason == "required anti-affinity violated by default/b on the same node n1"


def test_a_large_domain_is_read_through_its_index_like_a_small_one() -> None:
    """A zone of more nodes than SMALL_DOMAIN goes through the per-key pod index; the answer is the same."""
    zone_a = [node(f"a{i:02d}", labels={HOST: f"a{i:02d}", ZONE: "a"}) for i in range(SMALL_DOMAIN + 2)]
    zone_b = [node("b00", labels={HOST: "b00", ZONE: "b"})]
    pods = [web("first", "a00", key=ZONE), pod("other", "a09", labels={"app": "web"})]
    s = snapshot([*zone_a, *zone_b], pods)
    [e] = cycle(s, NAME, ARGS).evictions
    assert e.pod.name == "first"
    assert e.reason == "required anti-affinity violated by default/other on the same topology.kubernetes.io/zone=a"
