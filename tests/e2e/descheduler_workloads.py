"""Workloads that make the strategies of descheduler's own policies act, one per policy, in the scenario form of
descheduler_comparison_harness.py: the pods each policy must evict, and pods it must leave alone (bare pods, other
states, too young). Pod names say what each is there for."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Any

from tests.e2e.balance_comparison_scenarios import ZONE_SKEW_1, web
from tests.e2e.deschedule_comparison_scenarios import (
    avoids,
    failed,
    node_affinity_required,
    restarted,
    restarts_crashloop,
)
from tests.e2e.descheduler_comparison_harness import BROKEN_TAINT, Node, Pod, Scenario

A, B, C = "zone-a", "zone-b", "zone-c"
HOUR, DAY = 3600, 86400
NOW = dt.datetime.now(dt.UTC)


def _at(ago: int) -> str:
    return f"{NOW - dt.timedelta(seconds=ago):%Y-%m-%dT%H:%M:%SZ}"


def _completed(transitioned_ago: int) -> dict[str, Any]:
    """A Succeeded pod whose conditions say so since `transitioned_ago` seconds, as the kubelet writes them."""
    since = _at(transitioned_ago)
    return {"phase": "Succeeded", "conditions": [
        {"type": "Initialized", "status": "True", "reason": "PodCompleted", "lastTransitionTime": since},
        {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": since}]}


def _waiting(reason: str) -> dict[str, Any]:
    return {"containerStatuses": [{"name": "app", "restartCount": 0, "state": {"waiting": {"reason": reason}}}]}


def _three(prefix: str) -> tuple[Node, ...]:
    return Node(f"{prefix}-0", A), Node(f"{prefix}-1", B), Node(f"{prefix}-2", C)


def _failed_pods() -> Scenario:
    n = _three("xf")
    n0 = n[0].name
    return Scenario(
        "failed-pods",
        "Failed pods 2 h old: pod reason OutOfcpu, CreateContainerConfigError, Error; one OutOfcpu just created",
        n,
        (Pod("out-of-cpu", n0, 500, 512, 100, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("config-error", n0, 500, 512, 110, status={"phase": "Failed", **_waiting("CreateContainerConfigError")}),
         Pod("error", n0, 500, 512, 120, status=failed("Error", 1)),
         Pod("young-out-of-cpu", n[1].name, 500, 512, 130, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("bare-out-of-cpu", n[1].name, 500, 512, 140, owner=None, status={"phase": "Failed", "reason": "OutOfcpu"}),
         Pod("running", n[2].name, 500, 512, 150)),
        {"RemoveFailedPods": {}},
        created_ago={"out-of-cpu": 2 * HOUR, "config-error": 2 * HOUR, "error": 2 * HOUR, "bare-out-of-cpu": 2 * HOUR,
                     "running": 2 * HOUR},
    )


def _high_node_utilization() -> Scenario:
    full = (Node("xh-full-0", A), Node("xh-full-1", B))
    return Scenario(
        "high-node-utilization",
        "memory: two nodes at 59%, two under 20% (one pod, two pods)",
        (*full, Node("xh-idle-0", C), Node("xh-idle-1", A)),
        (*(Pod(f"{f.name}-{j}", f.name, 1000, 2000, 900 + j) for f in full for j in range(3)),
         Pod("q0", "xh-idle-0", 500, 300, 100),
         Pod("q1", "xh-idle-1", 500, 400, 110), Pod("q2", "xh-idle-1", 500, 400, 120)),
        {"HighNodeUtilization": {}},
        # nodemedic empties one node at a time (maxConsolidatingNodes 1, the emptiest first) and taints it
        only_descheduler={"q1": "hnu-taint", "q2": "hnu-taint"},
    )


def _low_node_utilization() -> Scenario:
    hot = "xl-hot"
    cold = (Node("xl-cold-0", B), Node("xl-cold-1", C), Node("xl-cold-2", A))
    return Scenario(
        "low-node-utilization",
        "memory: one node at 80% (target 70%), three at 10% (threshold 20%)",
        (Node(hot, A), *cold),
        (Pod("a", hot, 500, 1536, 100), Pod("b", hot, 500, 1536, 200), Pod("c", hot, 500, 1024, 300),
         Pod("d", hot, 500, 2048, 400), Pod("e", hot, 500, 2048, 500),
         *(Pod(f"{c.name}-pod", c.name, 500, 1024, 50) for c in cold)),
        {"LowNodeUtilization": {}},
    )


def _pod_life_time_transition() -> Scenario:
    n = _three("xt")
    return Scenario(
        "pod-life-time-transition",
        "namespace default: Succeeded pods PodCompleted 5 h ago (one bare) and 1 min ago, a running pod",
        n,
        (Pod("stale-completed", n[0].name, 500, 512, 100, status=_completed(5 * HOUR)),
         Pod("recent-completed", n[0].name, 500, 512, 110, status=_completed(60)),
         Pod("stale-completed-bare", n[1].name, 500, 512, 120, owner=None, status=_completed(5 * HOUR)),
         Pod("running", n[2].name, 500, 512, 130)),
        {"PodLifeTime": {}},
        namespace="default",
    )


def _pod_life_time() -> Scenario:
    n = _three("xp")
    return Scenario(
        "pod-life-time",
        "PodInitializing for 8 days (one bare), PodInitializing just created, running for 8 days",
        n,
        (Pod("old-initializing", n[0].name, 500, 512, 100, status=_waiting("PodInitializing")),
         Pod("old-initializing-bare", n[0].name, 500, 512, 110, owner=None, status=_waiting("PodInitializing")),
         Pod("young-initializing", n[1].name, 500, 512, 120, status=_waiting("PodInitializing")),
         Pod("old-running", n[2].name, 500, 512, 130)),
        {"PodLifeTime": {}},
        created_ago={"old-initializing": 8 * DAY, "old-initializing-bare": 8 * DAY, "old-running": 8 * DAY},
    )


def policy() -> Scenario:
    """A workload for each of the five plugins, on nodes of their own so that they do not meet. (Every pod of the
    harness runs the same image, so two pods of one owner on one node are duplicates: only `dup` is that.)"""
    hot, restarts, anti, mixed, spread = "xa-hot", "xa-restarts", "xa-anti", "xa-mixed", "xa-spread"
    return Scenario(
        "policy",
        "a node at 65% cpu/memory (target 50%); 150 restarts; two api pods that refuse to share a node; two "
        "replicas of one ReplicaSet on one node; a zone spread of 2/0/0 (maxSkew 1) over two nodes",
        (Node(hot, A), Node(restarts, B), Node(anti, C), Node(mixed, A), Node(spread, A)),
        (Pod("h1", hot, 3000, 3072, 300), Pod("h2", hot, 2000, 2048, 200), Pod("h3", hot, 1500, 1536, 100),
         Pod("r150", restarts, 500, 512, 150, status=restarted(150)),
         Pod("api-1", anti, 500, 512, 210, owner="api", affinity=avoids("api")),
         # another owner: two replicas of one owner on a node would be duplicates too, and whether descheduler's
         # RemoveDuplicates still sees api-1 after the anti-affinity plugin evicted it in the same dry-run cycle
         # is a race (its sandbox's lister): cycle 1 and cycle 2 of one run differed
         Pod("api-2", anti, 500, 512, 220, owner="api-b", labels=(("app", "api"),), affinity=avoids("api")),
         Pod("dup-a", mixed, 250, 256, 400, owner="dup"), Pod("dup-b", mixed, 250, 256, 400, owner="dup"),
         *web({mixed: (110,), spread: (120,)}, ZONE_SKEW_1, cpu=250)),
        {"RemoveDuplicates": {}, "LowNodeUtilization": {}, "RemovePodsViolatingTopologySpreadConstraint": {}},
        # descheduler pops the spread's highest-priority pod, nodemedic its lowest
        only_descheduler={f"web-{spread}-120": "tsc-order"},
        only_nodemedic={f"web-{mixed}-110": "tsc-order"},
    )


def _topology_spread() -> Scenario:
    return Scenario(
        "topology-spread-constraint",
        "the zone article's story: 3/3 in zone-a/b while zone-c had no node, then zone-c's node is back (skew 3)",
        (Node("xs-a", A), Node("xs-b", B), Node("xs-c", C)),
        web({"xs-a": (100, 110, 120), "xs-b": (130, 140, 200)}, ZONE_SKEW_1),
        {"RemovePodsViolatingTopologySpreadConstraint": {}},
        # both move one pod out of b towards c, descheduler the highest priority one; descheduler also one out of a,
        # which nodemedic's owner cool-down (5s: one replica of a ReplicaSet per cycle) leaves to the next cycle
        only_descheduler={"web-xs-a-120": "cooldown", "web-xs-b-200": "tsc-order"},
        only_nodemedic={"web-xs-b-130": "tsc-order"},
    )


# example file -> the workload that makes its strategies act
WORKLOADS = {
    "failed-pods.yaml": _failed_pods(),
    "high-node-utilization.yml": _high_node_utilization(),
    "low-node-utilization.yml": _low_node_utilization(),
    "node-affinity.yml": replace(node_affinity_required(), name="node-affinity"),
    "pod-life-time-transition.yml": _pod_life_time_transition(),
    "pod-life-time.yml": _pod_life_time(),
    "policy.yaml": policy(),
    "too-many-restarts.yml": replace(restarts_crashloop(), name="too-many-restarts"),
    "topology-spread-constraint.yaml": _topology_spread(),
}


def _chart_default() -> Scenario:
    """policy.yaml's workload, and a node with a taint that a pod on it does not tolerate (the chart also enables
    RemovePodsViolatingNodeTaints and RemovePodsViolatingNodeAffinity)."""
    s = policy()
    tainted = Node("xa-tainted", B, ((BROKEN_TAINT, "true", "NoSchedule"),))
    return replace(s, name="chart-default", about=s.about + "; a pod on a node with a taint it does not tolerate",
                   nodes=(*s.nodes, tainted), pods=(*s.pods, Pod("untolerated", tainted.name, 500, 512, 230)),
                   # nodemedic's RemovePodsViolatingNodeTaints without includedTaints acts on its own rules' taints
                   only_descheduler={**s.only_descheduler, "untolerated": "own-taints"})


CHART = "chart default"  # descheduler's chart's deschedulerPolicy: policy.yaml's plugins and more
PLANNED = {**WORKLOADS, CHART: _chart_default()}


def storage_classes() -> Scenario:
    bad = Node("xc-bad", A, ((BROKEN_TAINT, "true", "NoSchedule"),))
    claims = {"on-class-0": "storage-class-0", "on-class-1": "storage-class-1", "on-class-2": "storage-class-2",
              "on-no-class": ""}
    return Scenario(
        "pvc-storage-classes",
        "pods on a tainted node with PVCs of storage-class-0, -1 (protected), -2, none (cannot be told), no PVC",
        (bad, Node("xc-good-0", B), Node("xc-good-1", C)),
        (*(Pod(pod, bad.name, 500, 512, 100 + i, claims=(f"data-{pod}",)) for i, pod in enumerate(claims)),
         Pod("no-claim", bad.name, 500, 512, 200)),
        {"RemovePodsViolatingNodeTaints": {}},
        claims=tuple((f"data-{pod}", storage_class) for pod, storage_class in claims.items()),
    )
