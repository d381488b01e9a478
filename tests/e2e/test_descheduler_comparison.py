"""nodemedic's utilization strategies next to descheduler v0.36.0's, both in dry-run, on the same kwok cluster.

Every scenario builds its own nodes and pods in a private control plane whose only nodes are the scenario's
(nodemedic's policy has no node selector), runs one descheduler cycle (`hack/kcp/descheduler.py`) and
`nodemedic-remediator plan --json` with equivalent policies, and compares the pods each would evict. What only
one of them evicts must be exactly the scenario's declared differences, each tagged with the ID of a documented
difference (docs/utilization.md).

The harness (scenario building, the two runs, the report) is descheduler_comparison_harness.py.

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_comparison.py -q -s  (-s prints the report)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hack.kcp import nodes
from tests.e2e.conftest import LocalCluster
from tests.e2e.descheduler_comparison_harness import (  # the fixtures, by name, give this module its own cluster
    BROKEN_TAINT,
    Node,
    Pod,
    Scenario,
    build,  # noqa: F401
    compare,
    compare_cluster,  # noqa: F401
    undocumented,
)

# One xdist worker runs the whole module: its tests share one comparison cluster (module-scoped compare_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("descheduler_comparison")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "utilization.md"

LNU_ARGS: dict[str, Any] = {
    "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
    "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    "useDeviationThresholds": False,
    "numberOfNodes": 0,
    "evictableNamespaces": {"exclude": ["kube-system"]},
}
HNU_ARGS: dict[str, Any] = {
    "thresholds": {"cpu": 20, "memory": 20},
    "numberOfNodes": 0,
    "evictableNamespaces": {"exclude": ["kube-system"]},
}


def cold(prefix: str, count: int, *, zones: tuple[str, ...] = nodes.ZONES, cpu: int = 1000,
         mem: int = 1024) -> tuple[tuple[Node, ...], tuple[Pod, ...]]:
    """`count` underutilized nodes, each with one pod of cpu/mem (10%/10% by default)."""
    ns = tuple(Node(f"{prefix}-cold-{i}", zones[i % len(zones)]) for i in range(count))
    return ns, tuple(Pod(f"{n.name}-pod", n.name, cpu, mem) for n in ns)


def _balanced() -> Scenario:
    ns = tuple(Node(f"b-{i}", nodes.ZONES[i % 3]) for i in range(4))
    return Scenario(
        "balanced",
        "four nodes at 36% cpu / 35% memory: neither under 20% nor over 50%",
        ns,
        tuple(Pod(f"{n.name}-{j}", n.name, 1200, 1200, 100 + j) for n in ns for j in range(3)),
        {"LowNodeUtilization": LNU_ARGS, "HighNodeUtilization": HNU_ARGS},
        nodemedic_args={"HighNodeUtilization": {"taintDrainedNodes": False}},
    )


def _hot_node() -> Scenario:
    colds, cold_pods = cold("h", 3)
    hot = "h-hot"
    return Scenario(
        "hot-node",
        "one node at 80% cpu/memory, three at 10%; the first pod in eviction order is BestEffort",
        (Node(hot), *colds),
        (Pod("be", hot, priority=50),  # BestEffort: requests nothing
         Pod("a", hot, 1500, 1536, 100), Pod("b", hot, 1500, 1536, 200), Pod("c", hot, 1000, 1024, 300),
         Pod("d", hot, 2000, 2048, 400), Pod("e", hot, 2000, 2048, 500), *cold_pods),
        {"LowNodeUtilization": LNU_ARGS},
        # descheduler: be (frees only a pod slot; pods are not over target), a, b -> 50%. nodemedic: a, b.
        only_descheduler={"be": "relieves"},
    )


def _fragmented() -> Scenario:
    colds, cold_pods = cold("f", 2, cpu=1500, mem=512)
    hot = "f-hot"
    return Scenario(
        "fragmented",
        "a 90% cpu node whose first pod (50%) fits either 15% node physically but would push it over target",
        (Node(hot), *colds),
        (Pod("big", hot, 5000, 256, 100), Pod("s1", hot, 2000, 256, 200), Pod("s2", hot, 2000, 256, 300),
         *cold_pods),
        {"LowNodeUtilization": LNU_ARGS},
        # descheduler: pooled room 2 x 35% > 0 -> big, hot at 40%. nodemedic: big fits no destination under target;
        # s1 -> cold-0 (35%), s2 -> cold-1 (35%), hot at 50%.
        only_descheduler={"big": "dest-fit"},
        only_nodemedic={"s1": "dest-fit", "s2": "dest-fit"},
    )


def _idle_nodes() -> Scenario:
    full = (Node("i-full-0", nodes.ZONES[0]), Node("i-full-1", nodes.ZONES[1]))
    full_pods = tuple(Pod(f"{n.name}-{j}", n.name, 2000, 2048, 900 + j) for n in full for j in range(3))
    return Scenario(
        "idle-nodes",
        "two nodes at 60%, three under 20%; one of those has a bare pod that cannot be moved",
        (*full, Node("i-idle-0", nodes.ZONES[2]), Node("i-idle-1", nodes.ZONES[0]), Node("i-idle-2", nodes.ZONES[1])),
        (*full_pods,
         Pod("q0", "i-idle-0", 500, 300, 100),
         Pod("q1", "i-idle-1", 500, 400, 110), Pod("q2", "i-idle-1", 500, 400, 120),
         Pod("bare", "i-idle-2", 500, 500, 130, owner=None), Pod("q4", "i-idle-2", 500, 600, 140)),
        {"HighNodeUtilization": HNU_ARGS},
        nodemedic_args={"HighNodeUtilization": {"taintDrainedNodes": False}},
        # descheduler: every evictable pod of every idle node. nodemedic: i-idle-2 cannot be emptied (bare pod).
        only_descheduler={"q4": "hnu-whole-node"},
    )


def _all_idle() -> Scenario:
    ns = tuple(Node(f"a-{i}", nodes.ZONES[i % 3]) for i in range(4))
    sizes = ((1500, 1500), (1000, 1000), (500, 500), (400, 400))
    return Scenario(
        "all-idle",
        "four nodes, all under 20% (descheduler's HNU stops when every node is underutilized, #725)",
        ns,
        tuple(Pod(f"u{i}", n.name, c, m, 100 + i) for i, (n, (c, m)) in enumerate(zip(ns, sizes, strict=True))),
        {"HighNodeUtilization": HNU_ARGS},
        nodemedic_args={"HighNodeUtilization": {"taintDrainedNodes": False}},
        # prediction: the emptier nodes drain into the fuller ones; a-0 (the fullest) stays as the destination.
        only_nodemedic={"u1": "hnu-all-under", "u2": "hnu-all-under", "u3": "hnu-all-under"},
    )


def _taints() -> Scenario:
    hot = "t-hot"
    dest0 = Node("t-dest-0", nodes.ZONES[1], (("dedicated", "infra", "NoSchedule"), ("team", "blue", "NoSchedule")))
    dest1 = Node("t-dest-1", nodes.ZONES[2], (("maintenance", "soon", "PreferNoSchedule"),
                                               ("flaky", "yes", "PreferNoSchedule")))
    return Scenario(
        "taints",
        "an 80% node; both underutilized nodes carry two taints; pods with fewer tolerations than taints",
        (Node(hot), dest0, dest1),
        (Pod("x", hot, 1500, 1536, 100, tolerations=({"operator": "Exists"},)),  # tolerates every taint
         Pod("y", hot, 1500, 1536, 200),  # no toleration: t-dest-1 has only PreferNoSchedule taints
         Pod("z", hot, 1500, 1536, 300, tolerations=(
             {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
             {"key": "team", "operator": "Exists", "effect": "NoSchedule"})),
         Pod("f1", hot, 2000, 2048, 400), Pod("f2", hot, 1500, 1536, 500),
         Pod("dest-0-pod", dest0.name, 1000, 1024), Pod("dest-1-pod", dest1.name, 1000, 1024)),
        {"LowNodeUtilization": LNU_ARGS},
        # descheduler: x (1 toleration < 2 taints) and y (0 < 2) are skipped whatever they tolerate; z matches
        # t-dest-0 exactly -> hot at 65%, nothing else tolerates. nodemedic: x, y -> 50%, z not needed.
        only_descheduler={"z": "tolerations"},
        only_nodemedic={"x": "tolerations", "y": "tolerations"},
    )


def _pdb() -> Scenario:
    colds, cold_pods = cold("p", 3)
    hot = "p-hot"
    return Scenario(
        "pdb",
        "an 80% node whose first two pods in eviction order are covered by a PDB allowing 0 disruptions",
        (Node(hot), *colds),
        (Pod("g1", hot, 1500, 1536, 100, owner="guarded"), Pod("g2", hot, 1500, 1536, 110, owner="guarded"),
         Pod("o1", hot, 1500, 1536, 200), Pod("o2", hot, 1500, 1536, 300), Pod("f", hot, 2000, 2048, 900),
         *cold_pods),
        {"LowNodeUtilization": LNU_ARGS},
        pdbs=(("guarded", "guarded", 2),),
        # descheduler's dry run evicts in a fake clientset that knows no PDBs: g1, g2 -> 50%.
        # nodemedic: g1, g2 blocked (disruptionsAllowed 0) -> o1, o2.
        only_descheduler={"g1": "pdb", "g2": "pdb"},
        only_nodemedic={"o1": "pdb", "o2": "pdb"},
    )


def _same_owner() -> Scenario:
    colds, cold_pods = cold("o", 3)
    hot = "o-hot"
    return Scenario(
        "same-owner",
        "an 80% node whose two first pods belong to one ReplicaSet; nodemedic's default 5s owner cool-down",
        (Node(hot), *colds),
        (Pod("r1", hot, 1500, 1536, 100, owner="web"), Pod("r2", hot, 1500, 1536, 110, owner="web"),
         Pod("big", hot, 5000, 5120, 900), *cold_pods),
        {"LowNodeUtilization": LNU_ARGS},
        owner_cooldown="5s",
        # descheduler: r1, r2 -> 50%. nodemedic: r1; r2 waits for the cool-down; big (50%) fits no 10% node
        # under its 50% target.
        only_descheduler={"r2": "cooldown"},
    )


def _spread() -> Scenario:
    hot = "s-hot"
    cold_b, cold_c = Node("s-cold-b", nodes.ZONES[1]), Node("s-cold-c", nodes.ZONES[2])
    soft = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
    return Scenario(
        "spread",
        "an 80% node in zone-a, underutilized nodes only in zone-b/c, which already run the other pods of api",
        (Node(hot, nodes.ZONES[0]), cold_b, cold_c),
        (Pod("api-1", hot, 1500, 1536, 100, owner="api", spread=soft),
         Pod("api-2", cold_b.name, 1000, 1024, 100, owner="api", spread=soft),
         Pod("api-3", cold_c.name, 1000, 1024, 100, owner="api", spread=soft),
         Pod("o1", hot, 1500, 1536, 200), Pod("o2", hot, 1500, 1536, 300), Pod("f", hot, 3500, 3584, 900)),
        {"LowNodeUtilization": LNU_ARGS},
        # descheduler: api-1 (zone-a would lose its only api pod), o1 -> 50%. nodemedic: api-1 stays; o1, o2.
        only_descheduler={"api-1": "spread"},
        only_nodemedic={"o2": "spread"},
    )


def _taint_violation() -> Scenario:
    bad = Node("k-bad", nodes.ZONES[0], ((BROKEN_TAINT, "true", "NoSchedule"),))
    good = (Node("k-good-0", nodes.ZONES[1]), Node("k-good-1", nodes.ZONES[2]))
    return Scenario(
        "taint-violation",
        "RemovePodsViolatingNodeTaints: a node with a NoSchedule taint, pods that do not tolerate it",
        (bad, *good),
        (Pod("v1", bad.name, 500, 512, 100),
         Pod("v2", bad.name, 500, 512, 110, tolerations=({"key": BROKEN_TAINT, "operator": "Exists"},)),
         Pod("v3", bad.name, 500, 512, 120, owner=None),  # bare: protected on both sides
         Pod("v4", bad.name, 500, 512, 130),
         *(Pod(f"{n.name}-pod", n.name, 1000, 1024) for n in good)),
        {"RemovePodsViolatingNodeTaints": {"includedTaints": [BROKEN_TAINT]}},
    )


SCENARIOS = [_taint_violation(), _balanced(), _hot_node(), _fragmented(), _idle_nodes(), _all_idle(), _taints(), _pdb(),
             _same_owner(), _spread()]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, compare_cluster: LocalCluster, build: Any, tmp_path: Path) -> None:  # noqa: F811
    compare(scenario, compare_cluster, build, tmp_path)


def test_every_difference_id_is_documented() -> None:
    missing = undocumented(SCENARIOS, DOC)
    assert not missing, f"difference IDs used by the comparison but not in {DOC}: {missing}"
