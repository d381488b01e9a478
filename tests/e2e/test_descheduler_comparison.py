"""nodemedic's utilization strategies next to descheduler v0.36.0's, both in dry-run, on the same kwok cluster.

Every scenario builds its own nodes and pods in a private control plane whose only nodes are the scenario's
(nodemedic's policy has no node selector), runs one descheduler cycle (`hack/kcp/descheduler.py`) and
`nodemedic-remediator plan --json` with equivalent policies, and compares the pods each would evict. What only
one of them evicts must be exactly the scenario's declared differences, each tagged with the ID of a documented
difference (docs/utilization.md).

Pods are bound with `spec.nodeName` and carry explicit cpu/memory requests, so every node's utilization is
exact. Each pod (but the deliberately bare ones) has an ownerReference to a ReplicaSet of its workload:
descheduler's DefaultEvictor protects pods without owners (FailedBarePods), and the garbage collector deletes
pods whose owner does not exist. The ReplicaSets have 0 replicas and a selector matching none of the pods, and
the references are not controller references, so the ReplicaSet controller neither adopts, releases nor
deletes them. Pods of one node get distinct priorities: descheduler sorts the candidates of a node with
`sort.Slice` (pkg/descheduler/pod/pods.go, SortPodsBasedOnPriorityLowToHigh), whose order among pods of equal
priority and QoS is arbitrary, so only distinct priorities make "which pods" a deterministic question.

Run: .venv/bin/python -m pytest tests/e2e/test_descheduler_comparison.py -q -s  (-s prints the report)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.kcp import descheduler, nodes
from tests.e2e.backdate import backdate_pod
from tests.e2e.conftest import LocalCluster, _started
from tests.e2e.remediator_harness import REMEDIATOR
from tests.waiting import wait_until

# One xdist worker runs the whole module: its tests share one comparison cluster (module-scoped compare_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("descheduler_comparison")]

DOC = Path(__file__).resolve().parents[2] / "docs" / "utilization.md"
SCENARIO_LABEL = "compare.nodemedic.io/scenario"
BROKEN_TAINT = "compare.nodemedic.io/broken"

# Round numbers: 1000m of cpu and 1024Mi of memory are 10% of a node.
ALLOCATABLE = {"cpu": "10", "memory": "10Gi", "pods": "110", "ephemeral-storage": "100Gi"}

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
# The same DefaultEvictor on both sides: descheduler's defaults, with nodeFit on (nodemedic's default).
EVICTOR: dict[str, Any] = {"nodeFit": True}
# The same per-cycle limits on both sides, high enough never to bind in these scenarios.
MAX_PER_NODE, MAX_TOTAL = 20, 100


# --- scenario description ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Node:
    name: str
    zone: str = nodes.ZONES[0]
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Pod:
    name: str
    node: str
    cpu: int = 0  # millicores; 0 and mem 0 = BestEffort
    mem: int = 0  # MiB
    priority: int | None = None  # value of a PriorityClass the test creates
    owner: str | None = ""  # workload (ReplicaSet) name; "" = the pod's own name; None = a bare pod
    tolerations: tuple[dict[str, Any], ...] = ()
    spread: dict[str, Any] | None = None  # one topologySpreadConstraint (labelSelector on app=<owner>)
    labels: tuple[tuple[str, str], ...] = ()  # besides app=<owner> and the scenario label
    affinity: dict[str, Any] | None = None  # spec.affinity as written
    # Written to the pod's status once kwok has it Running (restart counts, waiting reasons, phase Failed, ...):
    # kwok's stages only act on Pending pods, so the status stays as written.
    status: dict[str, Any] | None = None
    claims: tuple[str, ...] = ()  # PersistentVolumeClaims (of the scenario's `claims`) mounted as volumes

    @property
    def terminal(self) -> bool:
        return (self.status or {}).get("phase") in ("Succeeded", "Failed")


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    strategies: dict[str, dict[str, Any]]  # strategy -> args, the same on both sides
    nodemedic_args: dict[str, dict[str, Any]] = field(default_factory=dict)  # nodemedic-only args per strategy
    pdbs: tuple[tuple[str, str, int], ...] = ()  # (name, app label, minAvailable), 0 disruptions allowed
    owner_cooldown: str = "0s"  # nodemedic only; 0s everywhere but where the cool-down is what is compared
    pods_older_than: int = 0  # seconds: the build waits until every pod is older (for ages that PodLifeTime compares)
    created_ago: dict[str, int] = field(default_factory=dict)  # pod -> seconds: creationTimestamp moved back (etcd)
    namespace: str = ""  # an existing namespace to use ("default"); else a fresh one, deleted afterwards
    claims: tuple[tuple[str, str], ...] = ()  # PVCs to create first: (name, storageClassName, "" for none)
    # The differences: pod -> the ID of the documented difference that explains it.
    only_descheduler: dict[str, str] = field(default_factory=dict)
    only_nodemedic: dict[str, str] = field(default_factory=dict)


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


# --- policies ----------------------------------------------------------------------------------------------
# RemovePodsViolatingNodeTaints logs which nodes it processed but not the pods it saw, so a run whose dry-run
# mirror had no pods yet would look complete and "evict nothing". A LowNodeUtilization that can never act (no node
# is above 100 %) logs every node's usage, pods included, which lets the runner check the run saw every pod.
USAGE_PROBE = {"LowNodeUtilization": {"thresholds": {"cpu": 0, "memory": 0, "pods": 0},
                                      "targetThresholds": {"cpu": 100, "memory": 100, "pods": 100}}}


def descheduler_policy(s: Scenario) -> dict[str, Any]:
    plugins = s.strategies if "LowNodeUtilization" in s.strategies or "HighNodeUtilization" in s.strategies \
        else {**s.strategies, **USAGE_PROBE}
    return descheduler.policy(plugins, evictor=EVICTOR, nodeSelector=f"{SCENARIO_LABEL}={s.name}",
                              maxNoOfPodsToEvictPerNode=MAX_PER_NODE, maxNoOfPodsToEvictTotal=MAX_TOTAL)


def nodemedic_policy(s: Scenario) -> str:
    strategies = [{"name": name, "args": {**args, **s.nodemedic_args.get(name, {})}}
                  for name, args in s.strategies.items()]
    doc = {
        "apiVersion": "nodemedic.io/v1alpha1",
        "kind": "RemediationPolicy",
        "rules": [],
        "evictor": EVICTOR,
        "strategies": strategies,
        "limits": {"maxNoOfPodsToEvictPerNode": MAX_PER_NODE, "maxNoOfPodsToEvictPerNamespace": None,
                   "maxNoOfPodsToEvictTotal": MAX_TOTAL, "ownerCooldown": s.owner_cooldown},
        "safety": {"maxTaintedNodes": 100, "maxTaintedNodesPercent": 100},
    }
    return yaml.safe_dump(doc, sort_keys=False)


# --- cluster -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def compare_cluster() -> Iterator[LocalCluster]:
    """A control plane of its own, with no nodes but the running scenario's (nodemedic has no node selector, so
    a shared cluster's other nodes would take part), even when NODEMEDIC_TEST_KUBECONFIG names a shared one.
    Module-scoped: a module of scenarios that imports this fixture gets a control plane of its own."""
    with _started(f"pytest-{os.getpid()}-compare-{secrets.token_hex(2)}", 0) as started:
        core = client.CoreV1Api(started.api)
        assert not core.list_node().items, "the comparison cluster must start without nodes"
        yield started


def _ready(node: client.V1Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def _pod_manifest(s: Scenario, p: Pod, owners: dict[str, str]) -> dict[str, Any]:
    app = p.owner if p.owner else p.name
    meta: dict[str, Any] = {"name": p.name, "labels": {"app": app, SCENARIO_LABEL: s.name, **dict(p.labels)}}
    if p.owner is not None:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": app, "uid": owners[app]}]
    requests = {k: v for k, v in (("cpu", f"{p.cpu}m" if p.cpu else ""), ("memory", f"{p.mem}Mi" if p.mem else ""))
                if v}
    container: dict[str, Any] = {"name": "app", "image": "registry.invalid/app:1"}
    if requests:
        container["resources"] = {"requests": requests}
    spec: dict[str, Any] = {"nodeName": p.node, "containers": [container], "terminationGracePeriodSeconds": 0}
    if p.priority is not None:
        spec["priorityClassName"] = f"compare-{p.priority}"
    if p.tolerations:
        spec["tolerations"] = [dict(t) for t in p.tolerations]
    if p.spread:
        spec["topologySpreadConstraints"] = [{**p.spread, "labelSelector": {"matchLabels": {"app": app}}}]
    if p.affinity:
        spec["affinity"] = p.affinity
    if p.claims:
        spec["volumes"] = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in p.claims]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _write_status(core: client.CoreV1Api, ns: str, p: Pod) -> None:
    """Merge `p.status` into the pod's status (a container status is completed from the one kwok wrote), and wait
    until the API server returns it."""
    assert p.status is not None
    current = core.read_namespaced_pod_status(p.name, ns).to_dict()["status"] or {}
    kwok_written = {c["name"]: c for c in current.get("container_statuses") or []}
    status = dict(p.status)
    if "containerStatuses" in status:
        status["containerStatuses"] = [
            {"image": "registry.invalid/app:1", "imageID": "", "ready": False, "started": False,
             "containerID": (kwok_written.get(c["name"]) or {}).get("container_id") or "",
             **c} for c in status["containerStatuses"]]
    core.patch_namespaced_pod_status(p.name, ns, {"status": status})

    def written() -> bool:
        st = core.read_namespaced_pod_status(p.name, ns).status
        want = [c.get("restartCount", 0) for c in status.get("containerStatuses", [])]
        have = [c.restart_count for c in st.container_statuses or []]
        return st.phase == status.get("phase", st.phase) and have[:len(want)] == want

    wait_until(written, timeout=30, what=f"{ns}/{p.name}: status written")


def _backdate(cluster: LocalCluster, core: client.CoreV1Api, ns: str, ago: dict[str, int]) -> None:
    """Move the creationTimestamp of the pods in `ago` back by that many seconds, and wait until the API server
    serves them so."""
    assert cluster.owned is not None, "backdating pods needs the comparison cluster's own etcd"
    etcd = f"http://127.0.0.1:{cluster.owned.ports['etcd']}"
    now = dt.datetime.now(dt.UTC)
    for name, seconds in ago.items():
        backdate_pod(etcd, ns, name, now - dt.timedelta(seconds=seconds))

    def served() -> bool:
        for name, seconds in ago.items():
            created = core.read_namespaced_pod(name, ns).metadata.creation_timestamp
            if (now - created).total_seconds() < seconds - 1:
                return False
        return True

    wait_until(served, timeout=30, what=f"{ns}: pods served with their earlier creationTimestamp")


@dataclass
class Built:
    namespace: str
    view: descheduler.View


@pytest.fixture
def build(compare_cluster: LocalCluster) -> Iterator[Any]:
    """build(scenario) -> Built: the scenario's nodes, namespace, owners, pods and PDBs, all settled."""
    core = client.CoreV1Api(compare_cluster.api)
    apps = client.AppsV1Api(compare_cluster.api)
    policy_api = client.PolicyV1Api(compare_cluster.api)
    sched = client.SchedulingV1Api(compare_cluster.api)
    made_nodes: list[str] = []
    made_ns: list[str] = []
    made_pods: list[tuple[str, str]] = []  # in a namespace the scenario did not create

    def make(s: Scenario) -> Built:
        for value in sorted({p.priority for p in s.pods if p.priority is not None}):
            try:
                sched.create_priority_class({"metadata": {"name": f"compare-{value}"}, "value": value})
            except ApiException as e:
                if e.status != 409:  # an earlier scenario made it
                    raise
        for n in s.nodes:
            m = nodes.node_manifest(n.name, n.zone, labels={SCENARIO_LABEL: s.name, **dict(n.labels)},
                                    capacity=ALLOCATABLE,
                                    allocatable=ALLOCATABLE,
                                    taints=[{"key": k, "value": v, "effect": e} for k, v, e in n.taints])
            core.create_node(m)
            made_nodes.append(n.name)
        want_taints = {n.name: {(k, v, e) for k, v, e in n.taints} for n in s.nodes}

        def nodes_settled() -> bool:
            # Ready, and only the scenario's taints (the node lifecycle controller's not-ready taint is gone).
            for n in core.list_node(label_selector=f"{SCENARIO_LABEL}={s.name}").items:
                have = {(t.key, t.value or "", t.effect) for t in n.spec.taints or []}
                if not _ready(n) or have != want_taints[n.metadata.name]:
                    return False
            return True

        wait_until(nodes_settled, timeout=60, what=f"{s.name}: nodes Ready with exactly their own taints")
        others = [n.metadata.name for n in core.list_node().items if n.metadata.name not in want_taints]
        assert not others, f"nodes of another scenario are still there: {others}"

        if s.namespace:
            ns = s.namespace
            made_pods.extend((ns, p.name) for p in s.pods)
        else:
            ns = f"compare-{s.name}-{secrets.token_hex(2)}"
            core.create_namespace({"metadata": {"name": ns}})
            made_ns.append(ns)
        wait_until(lambda: core.list_namespaced_service_account(ns).items, timeout=30,
                   what=f"ServiceAccount {ns}/default")
        for name, storage_class in s.claims:  # no provisioner binds them: they stay Pending, which is enough
            claim_spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                                          "resources": {"requests": {"storage": "1Gi"}}}
            if storage_class:
                claim_spec["storageClassName"] = storage_class
            core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": name}, "spec": claim_spec})
        owners: dict[str, str] = {}
        for app in sorted({(p.owner or p.name) for p in s.pods if p.owner is not None}):
            rs = apps.create_namespaced_replica_set(ns, {
                "metadata": {"name": app},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"compare.nodemedic.io/none": app}},
                         "template": {"metadata": {"labels": {"compare.nodemedic.io/none": app}},
                                      "spec": {"containers": [{"name": "app", "image": "registry.invalid/app:1"}]}}}})
            owners[app] = rs.metadata.uid
        for p in s.pods:
            core.create_namespaced_pod(ns, _pod_manifest(s, p, owners))
        for name, app, min_available in s.pdbs:
            policy_api.create_namespaced_pod_disruption_budget(ns, {
                "metadata": {"name": name},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}})

        def pods_running() -> bool:
            pods = core.list_namespaced_pod(ns).items
            assert len(pods) == len(s.pods), f"{len(pods)} of {len(s.pods)} pods"
            waiting = [p.metadata.name for p in pods if p.status.phase != "Running"]
            assert not waiting, f"not Running: {waiting}"
            return True

        wait_until(pods_running, timeout=60, what=f"{s.name}: every pod Running")
        for p in s.pods:
            if p.status is not None:
                _write_status(core, ns, p)
        _backdate(compare_cluster, core, ns, s.created_ago)

        def pdbs_settled() -> bool:
            for name, _, min_available in s.pdbs:
                st = policy_api.read_namespaced_pod_disruption_budget(name, ns).status
                if st is None or st.expected_pods != min_available or st.disruptions_allowed != 0 \
                        or st.current_healthy != min_available:
                    return False
            return True

        wait_until(pdbs_settled, timeout=60, what=f"{s.name}: PDBs observed with 0 disruptions allowed")
        if s.pods_older_than:
            created = max(p.metadata.creation_timestamp for p in core.list_namespaced_pod(ns).items)
            wait_until(lambda: (dt.datetime.now(dt.UTC) - created).total_seconds() > s.pods_older_than,
                       timeout=s.pods_older_than + 30, what=f"{s.name}: every pod older than {s.pods_older_than}s")
        view = descheduler.View({n.name: sum(1 for p in s.pods if p.node == n.name and not p.terminal)
                                 for n in s.nodes})
        return Built(ns, view)

    yield make
    for ns, name in made_pods:
        try:
            core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
        except ApiException as e:
            if e.status != 404:
                raise
    wait_until(lambda: not [p for ns, p in made_pods if p in {x.metadata.name for x in
                                                               core.list_namespaced_pod(ns).items}],
               timeout=30, what="the scenario's pods deleted")
    # A namespace's pods outlive its deletion by as long as the namespace controller takes, and the next scenario
    # reuses node names: gone pods first, so none of them shows up on the next scenario's node of the same name.
    for ns in made_ns:
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    wait_until(lambda: not [p for ns in made_ns for p in core.list_namespaced_pod(ns).items], timeout=60,
               what="the scenario's namespaces emptied of pods")
    for ns in made_ns:
        try:
            core.delete_namespace(ns)
        except ApiException as e:
            if e.status != 404:
                raise
    for n in made_nodes:
        try:
            core.delete_node(n)
        except ApiException as e:
            if e.status != 404:
                raise
    wait_until(lambda: not [n for n in core.list_node().items if n.metadata.name in made_nodes], timeout=30,
               what="the scenario's nodes deleted")


# --- the two tools -----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    pods: set[str]  # pod names in the scenario's namespace
    detail: dict[str, str]  # pod -> "node strategy"
    seconds: float
    note: str = ""


def run_descheduler(cluster: LocalCluster, s: Scenario, built: Built, work: Path) -> Outcome:
    # A settled cycle of a looping descheduler, not a one-shot run: the one-shot dry run can plan before its mirror
    # of the cluster is filled, and for RemovePodsViolatingNodeTaints no log line would show that.
    r = descheduler.settled_cycle(cluster.kubeconfig, descheduler_policy(s), workdir=work / "descheduler",
                                  expect=built.view)
    foreign = [e for e in r.evictions if e.namespace != built.namespace]
    assert not foreign, f"descheduler would evict pods outside the scenario: {foreign}"
    note = f"cycle {r.attempts} of a looping run"
    if r.incomplete:
        note += ", discarded: " + "; ".join(r.incomplete)
    return Outcome({e.name for e in r.evictions}, {e.name: f"{e.node} {e.strategy}" for e in r.evictions},
                   r.wall_seconds, note)


def run_nodemedic(cluster: LocalCluster, s: Scenario, built: Built, work: Path) -> Outcome:
    policy_file = work / "nodemedic-policy.yaml"
    policy_file.write_text(nodemedic_policy(s))
    t0 = time.monotonic()
    proc = subprocess.run([*REMEDIATOR, "plan", "--policy", str(policy_file), "--kubeconfig",
                           str(cluster.kubeconfig), "--json"], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"), check=False)
    took = time.monotonic() - t0
    assert proc.returncode == 0, f"nodemedic-remediator plan failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    plan = json.loads(proc.stdout)
    evictions = plan["evictions"]
    foreign = [e for e in evictions if e["namespace"] != built.namespace]
    assert not foreign, f"nodemedic would evict pods outside the scenario: {foreign}"
    kept = {e["name"] for e in evictions}
    why_not = {r["name"]: r["why"] for r in (*plan.get("protected", []), *plan.get("deferred", []))
               if r["namespace"] == built.namespace and r["name"] not in kept}
    note = "; ".join(f"{k}: {v}" for k, v in sorted(why_not.items()))
    return Outcome(kept, {e["name"]: f"from {e['node']}: {e['reason']}" for e in evictions}, took, note)


def _fmt(pods: set[str] | dict[str, str]) -> str:
    if isinstance(pods, dict):
        return ", ".join(f"{p} ({i})" for p, i in sorted(pods.items())) or "-"
    return ", ".join(sorted(pods)) or "-"


def report(s: Scenario, d: Outcome, n: Outcome) -> str:
    only_d, only_n = d.pods - n.pods, n.pods - d.pods
    lines = [
        f"=== {s.name} [{', '.join(s.strategies)}]: {s.about}",
        f"  descheduler evicts ({d.seconds:.2f}s, {d.note}): {_fmt(d.pods)}",
        f"  nodemedic evicts   ({n.seconds:.2f}s): {_fmt(n.pods)}",
        f"  both:               {_fmt(d.pods & n.pods)}",
        f"  only descheduler:   {_fmt(only_d):<30} expected: {_fmt(s.only_descheduler)}",
        f"  only nodemedic:     {_fmt(only_n):<30} expected: {_fmt(s.only_nodemedic)}",
    ]
    lines.extend(f"    nodemedic evicts {pod} {why}" for pod, why in sorted(n.detail.items()))
    if n.note:
        lines.append(f"  nodemedic did not evict: {n.note}")
    return "\n".join(lines)


def compare(scenario: Scenario, cluster: LocalCluster, build: Any, tmp_path: Path) -> None:
    """Build the scenario, run both tools, and assert that what only one of them evicts is the declared
    differences. A module of more scenarios calls this from its own test (and imports the two fixtures)."""
    built: Built = build(scenario)
    d = run_descheduler(cluster, scenario, built, tmp_path)
    n = run_nodemedic(cluster, scenario, built, tmp_path)
    text = report(scenario, d, n)
    print("\n" + text)
    only_d, only_n = d.pods - n.pods, n.pods - d.pods
    want_d, want_n = set(scenario.only_descheduler), set(scenario.only_nodemedic)
    assert (only_d, only_n) == (want_d, want_n), (
        f"the differences are not the declared ones\n{text}\n"
        f"  only descheduler: unexpected {_fmt(only_d - want_d)}, missing {_fmt(want_d - only_d)}\n"
        f"  only nodemedic:   unexpected {_fmt(only_n - want_n)}, missing {_fmt(want_n - only_n)}")


def undocumented(scenarios: list[Scenario], doc: Path) -> list[str]:
    """The difference IDs the scenarios use that `doc` does not name."""
    ids = sorted({i for s in scenarios for i in (*s.only_descheduler.values(), *s.only_nodemedic.values())})
    assert doc.exists(), f"{doc} is missing; it must document the difference IDs {ids}"
    text = doc.read_text()
    return [i for i in ids if not re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", text)]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario: Scenario, compare_cluster: LocalCluster, build: Any, tmp_path: Path) -> None:
    compare(scenario, compare_cluster, build, tmp_path)


def test_every_difference_id_is_documented() -> None:
    missing = undocumented(SCENARIOS, DOC)
    assert not missing, f"difference IDs used by the comparison but not in {DOC}: {missing}"
