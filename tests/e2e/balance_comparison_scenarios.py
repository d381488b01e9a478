"""The scenarios of test_descheduler_comparison_balance.py (RemoveDuplicates and
RemovePodsViolatingTopologySpreadConstraint next to descheduler's), and the spread pods the workloads of
descheduler's own example policies (descheduler_workloads.py) are made of."""

from __future__ import annotations

from typing import Any

from hack.kcp import nodes
from tests.e2e.descheduler_comparison_harness import Node, Pod, Scenario

ZONE = "topology.kubernetes.io/zone"
A, B, C = nodes.ZONES
ZONE_SKEW_1 = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
SOFT_ZONE_SKEW_1 = {**ZONE_SKEW_1, "whenUnsatisfiable": "ScheduleAnyway"}
DUPLICATES = "RemoveDuplicates"
SPREAD = "RemovePodsViolatingTopologySpreadConstraint"


def web(zone_pods: dict[str, tuple[int, ...]], constraint: dict[str, Any], cpu: int = 500) -> tuple[Pod, ...]:
    """Pods of ReplicaSet `web` (one spread constraint on app=web): node -> the priorities of its pods."""
    return tuple(Pod(f"web-{node}-{prio}", node, cpu, 512, prio, owner="web", spread=constraint)
                 for node, prios in zone_pods.items() for prio in prios)


def _zone_came_back() -> Scenario:
    return Scenario(
        "zone-came-back",
        "the zone article's story: 3/3 in zone-a/b while zone-c had no node, then zone-c's node is back (skew 3)",
        (Node("z-a", A), Node("z-b", B), Node("z-c", C)),
        web({"z-a": (100, 110, 120), "z-b": (130, 140, 200)}, ZONE_SKEW_1),
        {SPREAD: {"constraints": ["DoNotSchedule"]}},
        # both move one pod out of a and one out of b towards c; descheduler pops the highest priority
        only_descheduler={"web-z-a-120": "tsc-order", "web-z-b-200": "tsc-order"},
        only_nodemedic={"web-z-a-100": "tsc-order", "web-z-b-130": "tsc-order"},
    )


def _zone_back_but_full() -> Scenario:
    return Scenario(
        "zone-back-but-full",
        "as zone-came-back, but zone-c's node has no room; topologyBalanceNodeFit: false",
        (Node("f-a", A), Node("f-b", B), Node("f-c", C)),
        (*web({"f-a": (100, 110, 120), "f-b": (130, 140, 200)}, ZONE_SKEW_1),
         Pod("filler", "f-c", 9800, 512, 900)),
        {SPREAD: {"constraints": ["DoNotSchedule"], "topologyBalanceNodeFit": False}},
        # descheduler evicts one per zone (each fits the other zone's node, so nodeFit lets it go): the scheduler
        # can only put them back. nodemedic: no node of zone-c takes one.
        only_descheduler={"web-f-a-120": "tsc-place", "web-f-b-200": "tsc-place"},
    )


def _schedule_anyway() -> Scenario:
    return Scenario(
        "schedule-anyway",
        "ScheduleAnyway listed: four pods in zone-a, none in zone-b; pods with equal priority are pinned",
        (Node("s-a", A), Node("s-b", B)),
        web({"s-a": (100, 110, 120, 130)}, SOFT_ZONE_SKEW_1),
        {SPREAD: {"constraints": ["DoNotSchedule", "ScheduleAnyway"]}},
        # a 4, b 0: two move; descheduler the two highest, nodemedic the two lowest
        only_descheduler={"web-s-a-120": "tsc-order", "web-s-a-130": "tsc-order"},
        only_nodemedic={"web-s-a-100": "tsc-order", "web-s-a-110": "tsc-order"},
    )


def _spread_balanced() -> Scenario:
    return Scenario(
        "spread-balanced",
        "2/2/1 over three zones with maxSkew 1, and a ScheduleAnyway workload not listed in constraints",
        (Node("b-a", A), Node("b-b", B), Node("b-c", C)),
        (*web({"b-a": (100, 110), "b-b": (120, 130), "b-c": (140,)}, ZONE_SKEW_1),
         *(Pod(f"soft-{i}", "b-a", 100, 128, 200 + 10 * i, owner="soft", spread=SOFT_ZONE_SKEW_1) for i in range(3))),
        {SPREAD: {}},
    )


def _bare_pod_counts() -> Scenario:
    return Scenario(
        "bare-pod-counts",
        "zone-a: two web replicas and a bare pod labelled app=web (not evictable), zone-b: one replica",
        (Node("c-a", A), Node("c-b", B)),
        (*web({"c-a": (100, 110), "c-b": (120,)}, ZONE_SKEW_1), Pod("web", "c-a", 500, 512, 900, owner=None)),
        {SPREAD: {}},
        # descheduler counts only what it may evict (a 2, b 1: balanced); the scheduler sees a 3, b 1
        only_nodemedic={"web-c-a-100": "tsc-count"},
    )


def _stacked() -> Scenario:
    return Scenario(
        "stacked",
        "three replicas of one ReplicaSet on one node of three, two of another spread already",
        (Node("d-0", A), Node("d-1", B), Node("d-2", C)),
        (*(Pod(f"web-{i}", "d-0", 500, 512, 100 + 10 * i, owner="web") for i in range(3)),
         Pod("api-0", "d-1", 500, 512, 300, owner="api"), Pod("api-1", "d-2", 500, 512, 310, owner="api")),
        {DUPLICATES: {}},
    )


def _stacked_excluded() -> Scenario:
    return Scenario(
        "stacked-excluded",
        "as stacked, with excludeOwnerKinds: [ReplicaSet]",
        (Node("x-0", A), Node("x-1", B), Node("x-2", C)),
        tuple(Pod(f"web-{i}", "x-0", 500, 512, 100 + 10 * i, owner="web") for i in range(3)),
        {DUPLICATES: {"excludeOwnerKinds": ["ReplicaSet"]}},
    )


def _duplicates_zone_worse() -> Scenario:
    return Scenario(
        "duplicates-zone-worse",
        "two replicas on the only node of zone-b, one on each of two nodes of zone-a, a third zone-a node empty",
        (Node("w-a1", A), Node("w-a2", A), Node("w-a3", A), Node("w-b1", B)),
        (*(Pod(f"web-b{i}", "w-b1", 500, 512, 100 + 10 * i, owner="web") for i in range(2)),
         Pod("web-a1", "w-a1", 500, 512, 200, owner="web"), Pod("web-a2", "w-a2", 500, 512, 210, owner="web")),
        {DUPLICATES: {}},
        # upper = ceil(4 / 4) = 1: w-b1 gives up one, whose only place is w-a3 (zones 2/2 -> 3/1)
        only_descheduler={"web@w-b1#1": "dup-zones"},
    )


SCENARIOS = [_zone_came_back(), _zone_back_but_full(), _schedule_anyway(), _spread_balanced(), _bare_pod_counts(),
             _stacked(),
             _stacked_excluded(), _duplicates_zone_worse()]
