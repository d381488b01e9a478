"""The harness of the comparisons with descheduler v0.36.0 (test_descheduler_comparison*.py,
test_descheduler_examples.py): a scenario's nodes and pods built in a private control plane whose only nodes are the
scenario's (nodemedic's policy has no node selector), one settled descheduler cycle (`hack/kcp/descheduler.py`) and
`nodemedic-remediator plan --json` with equivalent policies, the pods each would evict, and the report. A module of
scenarios imports the two fixtures by name (`compare_cluster`, `build`): that gives it a control plane of its own.

Pods are bound with `spec.nodeName` and carry explicit cpu/memory requests, so every node's utilization is
exact. Each pod (but the deliberately bare ones) has an ownerReference to a ReplicaSet of its workload:
descheduler's DefaultEvictor protects pods without owners (FailedBarePods), and the garbage collector deletes
pods whose owner does not exist. The ReplicaSets have 0 replicas and a selector matching none of the pods, and
the references are not controller references, so the ReplicaSet controller neither adopts, releases nor
deletes them. Pods of one node get distinct priorities: descheduler sorts the candidates of a node with
`sort.Slice` (pkg/descheduler/pod/pods.go, SortPodsBasedOnPriorityLowToHigh), whose order among pods of equal
priority and QoS is arbitrary, so only distinct priorities make "which pods" a deterministic question.
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

SCENARIO_LABEL = "compare.nodemedic.io/scenario"
BROKEN_TAINT = "compare.nodemedic.io/broken"

# Round numbers: 1000m of cpu and 1024Mi of memory are 10% of a node.
ALLOCATABLE = {"cpu": "10", "memory": "10Gi", "pods": "110", "ephemeral-storage": "100Gi"}
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
