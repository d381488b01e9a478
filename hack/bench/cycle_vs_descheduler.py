"""Benchmark: one planning cycle of nodemedic next to one descheduling cycle of descheduler v0.36.0.

Starts its own local control plane with the API server's audit log on, with --nodes kwok nodes (8 cpu / 31Gi,
three zones) and --pods pods bound with `spec.nodeName` (created concurrently; owned by ReplicaSets so that
neither tool protects them as bare pods). Node utilization is varied on purpose: 10% of the nodes run at ~80%
of their cpu/memory, 20% at ~10%, the rest at ~35%, and 1% carry the NoSchedule taint the
RemovePodsViolatingNodeTaints strategy acts on. The pods carry what the other nine strategies look at, in shares
like those of `make bench-plan`: two replicas of a workload on most nodes (RemoveDuplicates), workloads with a
DoNotSchedule zone spread (10%) or a ScheduleAnyway host spread (20%), host anti-affinity (5%), required (5%) or
preferred (10%) node affinity away from a pool that 1% of the nodes now belong to, 2% of the pods with restarts
(half of them crash-looping), 0.5% Failed (OOMKilled or Error; their status written once kwok has them Running).
Both tools run in dry-run with the same full policy (all ten strategies with the same args, the same
DefaultEvictor args and per-cycle limits), one after the other, never at the same time. Measured:

(a) one full cycle
    nodemedic   `nodemedic-remediator plan --kubeconfig` wall time (read the cluster + plan, one shot; its modules'
                bytecode compiled first, as pip and the image install them), and
                the steady-state planning time per cycle of a running `nodemedic-remediator run --dry-run`
                (metric nodemedic_plan_cycle_seconds: the snapshot of the watch caches and the plan);
    descheduler `--descheduling-interval=0` wall time (start, informer sync, one cycle, exit; a run whose
                dry-run view of the cluster was incomplete is discarded and repeated, see hack/kcp/descheduler.py),
                and its steady-state loop duration when running with an interval (descheduler_loop_duration_seconds,
                the first cycle excluded);
(b) API requests per steady-state cycle: nodemedic from nodemedic_api_requests_total, both from the API server's
    audit log (requests per User-Agent between two scrapes; descheduler serves no client-go request metrics).

Prints each figure as soon as it is measured (with the ratio once both tools' are in), then one table.
Usage: .venv/bin/python -m hack.bench.cycle_vs_descheduler [--nodes 500] [--pods 15000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import quote

from hack.bench.lib import child
from hack.bench.lib.bytecode import compile_as_installed
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.process import vm_rss
from hack.bench.lib.report import note
from hack.bench.lib.stats import median_or_nan
from hack.bench.lib.table import Column, table
from hack.kcp import audit, controlplane, descheduler, nodes, paths
from hack.kcp.api import Api, ApiError
from hack.kcp.measure import wait
from hack.kcp.ports import free_port

TAINT_KEY = "nodemedic.io/kernel-deadlock"
NAMESPACES = 10
OWNERS_PER_NAMESPACE = 50
NODEMEDIC_UA = "nodemedic-remediator"
DESCHEDULER_UA = "descheduler/"
CPU_M = 7910  # nodes.ALLOCATABLE
MEM_MI = 31 * 1024

LNU_ARGS: dict[str, Any] = {
    "thresholds": {"cpu": 20, "memory": 20, "pods": 20},
    "targetThresholds": {"cpu": 50, "memory": 50, "pods": 50},
    "useDeviationThresholds": False,
    "numberOfNodes": 0,
    "evictableNamespaces": {"exclude": ["kube-system"]},
    "evictionLimits": {"node": 5},
}
HNU_ARGS: dict[str, Any] = {
    "thresholds": {"cpu": 20, "memory": 20},
    "numberOfNodes": 0,
    "evictableNamespaces": {"exclude": ["kube-system"]},
}
TAINTS_ARGS: dict[str, Any] = {"includedTaints": [TAINT_KEY]}
EVICTOR: dict[str, Any] = {"nodeFit": True}
POOL_KEY = "bench.nodemedic.io/pool"  # "old" on 1% of the nodes: node affinity says NotIn old
AWAY_FROM_OLD_POOL = {"matchExpressions": [{"key": POOL_KEY, "operator": "NotIn", "values": ["old"]}]}
# The full policy, the same args on both sides, in descheduler's order (every deschedule plugin, then balance).
STRATEGIES: dict[str, dict[str, Any]] = {
    "RemovePodsViolatingNodeTaints": TAINTS_ARGS,
    "RemovePodsViolatingNodeAffinity": {"nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution",
                                                             "preferredDuringSchedulingIgnoredDuringExecution"]},
    "RemovePodsViolatingInterPodAntiAffinity": {},
    "RemovePodsHavingTooManyRestarts": {"podRestartThreshold": 100, "includingInitContainers": True},
    "PodLifeTime": {"maxPodLifeTimeSeconds": 86400, "namespaces": {"include": ["bench-7"]}},
    "RemoveFailedPods": {"reasons": ["OOMKilled", "Error"], "minPodLifetimeSeconds": 0},
    "RemoveDuplicates": {"excludeOwnerKinds": ["Job"], "namespaces": {"exclude": ["kube-system"]}},
    "RemovePodsViolatingTopologySpreadConstraint": {"constraints": ["DoNotSchedule", "ScheduleAnyway"]},
    "LowNodeUtilization": LNU_ARGS,
    "HighNodeUtilization": HNU_ARGS,
}
NODEMEDIC_ONLY: dict[str, dict[str, Any]] = {"HighNodeUtilization": {"taintDrainedNodes": False}}


# --- the cluster's contents --------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodePlan:
    name: str
    kind: str  # hot | idle | medium
    pods: int
    tainted: bool
    old_pool: bool = False  # labelled POOL_KEY=old: workloads with node affinity no longer want it


def plan_nodes(node_count: int, pod_count: int, rng: random.Random) -> list[NodePlan]:
    names = [nodes.node_name(i) for i in range(node_count)]
    kinds = ["hot"] * (node_count // 10) + ["idle"] * (node_count // 5)
    kinds += ["medium"] * (node_count - len(kinds))
    rng.shuffle(kinds)
    per = {"hot": 50, "idle": 5}
    fixed = sum(per.get(k, 0) for k in kinds)
    medium = kinds.count("medium")
    rest = max(0, pod_count - fixed)
    base, extra = divmod(rest, medium) if medium else (0, 0)
    out, m = [], 0
    tainted_left = max(1, node_count // 100)
    for name, kind in zip(names, kinds, strict=True):
        if kind == "medium":
            count = base + (1 if m < extra else 0)
            m += 1
            tainted = tainted_left > 0
            tainted_left -= 1 if tainted else 0
        else:
            count, tainted = per[kind], False
        out.append(NodePlan(name, kind, min(count, 110), tainted))
    old = set(rng.sample(range(len(out)), max(1, node_count // 100)))
    return [NodePlan(p.name, p.kind, p.pods, p.tainted, i in old) for i, p in enumerate(out)]


@dataclass(frozen=True)
class Workload:
    """What one owner's pods declare (decided per owner, the same for all its replicas)."""

    spread: dict[str, Any] | None  # one topologySpreadConstraint
    affinity: dict[str, Any] | None  # spec.affinity


def workload(owner: str, rng: random.Random) -> Workload:
    selector = {"matchLabels": {"app": owner}}
    roll = rng.random()
    spread = ({"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": selector} if roll < 0.1 else
              {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
               "labelSelector": selector} if roll < 0.3 else None)
    affinity: dict[str, Any] = {}
    roll = rng.random()
    if roll < 0.05:
        affinity["nodeAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [AWAY_FROM_OLD_POOL]}}
    elif roll < 0.15:
        affinity["nodeAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "preference": AWAY_FROM_OLD_POOL}]}
    if rng.random() < 0.05:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": selector, "topologyKey": "kubernetes.io/hostname"}]}
    return Workload(spread, affinity or None)


def pod_status(rng: random.Random) -> dict[str, Any] | None:
    """The status written once kwok has the pod Running: 2% with restarts (half crash-looping), 0.5% Failed."""
    u = rng.random()
    if u < 0.005:
        reason, code = rng.choice((("OOMKilled", 137), ("Error", 1)))
        return {"phase": "Failed", "containerStatuses": [{"name": "app", "restartCount": rng.randint(0, 3), "state": {
            "terminated": {"reason": reason, "exitCode": code, "startedAt": "2024-05-01T00:00:00Z",
                           "finishedAt": "2024-05-01T00:01:00Z"}}}]}
    if u < 0.025:
        state: dict[str, Any] = ({"waiting": {"reason": "CrashLoopBackOff"}} if rng.random() < 0.5 else
                                 {"running": {"startedAt": "2024-05-01T00:00:00Z"}})
        return {"containerStatuses": [{"name": "app", "restartCount": rng.randint(1, 300), "state": state}]}
    return None


def pod_manifests(plans: list[NodePlan], owners: dict[tuple[str, str], str], workloads: dict[str, Workload],
                  rng: random.Random) -> list[tuple[str, dict[str, Any], dict[str, Any] | None]]:
    """(namespace, pod, the status to write once it runs) for every pod. Consecutive pods go to one node and an
    owner's pods come in twos per namespace, so most nodes hold two replicas of a workload."""
    share = {"hot": 0.8, "idle": 0.1, "medium": 0.35}
    out = []
    i = 0
    for plan in plans:
        for _ in range(plan.pods):
            ns = f"bench-{i % NAMESPACES}"
            owner = f"owner-{(i // (2 * NAMESPACES)) % OWNERS_PER_NAMESPACE}"
            cpu = max(10, int(CPU_M * share[plan.kind] / plan.pods * rng.uniform(0.7, 1.3)))
            mem = max(16, int(MEM_MI * share[plan.kind] / plan.pods * rng.uniform(0.7, 1.3)))
            w = workloads[owner]
            spec: dict[str, Any] = {
                "nodeName": plan.name, "terminationGracePeriodSeconds": 0,
                "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                "resources": {"requests": {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}}}]}
            if w.spread is not None:
                spec["topologySpreadConstraints"] = [w.spread]
            if w.affinity is not None:
                spec["affinity"] = w.affinity
            out.append((ns, {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"p-{i}", "labels": {"app": owner},
                             "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner,
                                                  "uid": owners[(ns, owner)]}]},
                "spec": spec,
            }, pod_status(rng)))
            i += 1
    return out


def write_status(api: Api, ns: str, name: str, status: dict[str, Any]) -> None:
    """Merge `status` into the pod's (each container status completed from the one kwok wrote); kwok's stages only
    act on Pending pods, so it stays as written."""
    path = f"/api/v1/namespaces/{ns}/pods/{name}/status"
    current = {c["name"]: c for c in api.get(path).get("status", {}).get("containerStatuses") or []}
    status = dict(status)
    status["containerStatuses"] = [
        {"image": "registry.invalid/app:1", "imageID": "", "ready": False, "started": False,
         "containerID": (current.get(c["name"]) or {}).get("containerID") or "", **c}
        for c in status["containerStatuses"]]
    api.request("PATCH", path, {"status": status}, content_type="application/merge-patch+json")


@dataclass(frozen=True)
class Setup:
    """How the cluster was filled; printed whole (as a dict, in this order) at the end of the run."""

    setup_seconds: float
    create_seconds: float
    running_seconds: float
    pods: int
    failed: int
    restarting: int
    workloads: dict[str, int]  # owners per namespace declaring each thing


def populate(api: Api, plans: list[NodePlan], rng: random.Random, workers: int) -> Setup:
    t0 = time.monotonic()
    for plan in plans:
        if plan.tainted:
            api.request("PATCH", f"/api/v1/nodes/{plan.name}",
                        {"spec": {"taints": [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}]}},
                        content_type="application/merge-patch+json")
        if plan.old_pool:
            api.request("PATCH", f"/api/v1/nodes/{plan.name}", {"metadata": {"labels": {POOL_KEY: "old"}}},
                        content_type="application/merge-patch+json")
    owners: dict[tuple[str, str], str] = {}
    for n in range(NAMESPACES):
        ns = f"bench-{n}"
        api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
        wait(partial(_exists, api, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60,
             f"ServiceAccount {ns}/default", poll=0.1)
        for o in range(OWNERS_PER_NAMESPACE):
            # 0 replicas and a selector matching none of the pods; the pods' ownerReferences are not controller
            # references: the ReplicaSet controller leaves them alone, the garbage collector sees a live owner.
            rs = api.post(f"/apis/apps/v1/namespaces/{ns}/replicasets", {
                "metadata": {"name": f"owner-{o}"},
                "spec": {"replicas": 0, "selector": {"matchLabels": {"bench.nodemedic.io/none": "x"}},
                         "template": {"metadata": {"labels": {"bench.nodemedic.io/none": "x"}},
                                      "spec": {"containers": [{"name": "a", "image": "registry.invalid/a:1"}]}}}})
            owners[(ns, f"owner-{o}")] = rs["metadata"]["uid"]
    workloads = {f"owner-{o}": workload(f"owner-{o}", rng) for o in range(OWNERS_PER_NAMESPACE)}
    manifests = pod_manifests(plans, owners, workloads, rng)
    t1 = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda item: api.post(f"/api/v1/namespaces/{item[0]}/pods", item[1]), manifests))
    t2 = time.monotonic()
    note(f"{len(manifests)} pods created in {t2 - t1:.1f}s ({len(manifests) / (t2 - t1):.0f}/s); waiting for Running")
    not_running = "/api/v1/pods?limit=1&fieldSelector=" + quote("status.phase!=Running")
    wait(lambda: not api.get(not_running)["items"], 900, "every pod Running (kwok)", poll=2.0)
    t3 = time.monotonic()
    statuses = [(ns, m["metadata"]["name"], st) for ns, m, st in manifests if st is not None]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda item: write_status(api, *item), statuses))
    failed = sum(1 for _, _, st in statuses if st.get("phase") == "Failed")
    failed_now = "/api/v1/pods?fieldSelector=" + quote("status.phase=Failed")
    wait(lambda: len(api.get(failed_now)["items"]) == failed, 120, f"{failed} pods Failed", poll=1.0)
    note(f"{len(statuses)} pod statuses written ({failed} Failed) in {time.monotonic() - t3:.1f}s")
    return Setup(setup_seconds=round(t1 - t0, 1), create_seconds=round(t2 - t1, 1),
                 running_seconds=round(t3 - t2, 1), pods=len(manifests), failed=failed,
                 restarting=len(statuses) - failed, workloads=_shares(workloads))


def _shares(workloads: dict[str, Workload]) -> dict[str, int]:
    """How many of the owners (per namespace) declare each thing."""
    def count(test: Any) -> int:
        return sum(1 for w in workloads.values() if test(w))
    return {"zone_spread": count(lambda w: w.spread and w.spread["whenUnsatisfiable"] == "DoNotSchedule"),
            "host_spread": count(lambda w: w.spread and w.spread["whenUnsatisfiable"] == "ScheduleAnyway"),
            "anti_affinity": count(lambda w: w.affinity and "podAntiAffinity" in w.affinity),
            "node_affinity": count(lambda w: w.affinity and "nodeAffinity" in w.affinity)}


def _exists(api: Api, path: str) -> bool:
    try:
        api.get(path)
        return True
    except ApiError as e:
        if e.status == 404:
            return False
        raise


# --- policies ----------------------------------------------------------------------------------------------
def descheduler_policy(per_node: int, total: int) -> dict[str, Any]:
    return descheduler.policy(STRATEGIES, evictor=EVICTOR,
                              maxNoOfPodsToEvictPerNode=per_node, maxNoOfPodsToEvictTotal=total)


def nodemedic_policy(per_node: int, total: int) -> str:
    doc = {
        "apiVersion": "nodemedic.io/v1alpha1", "kind": "RemediationPolicy", "rules": [],
        "evictor": EVICTOR,
        "strategies": [{"name": name, "args": {**args, **NODEMEDIC_ONLY.get(name, {})}}
                       for name, args in STRATEGIES.items()],
        "limits": {"maxNoOfPodsToEvictPerNode": per_node, "maxNoOfPodsToEvictPerNamespace": None,
                   "maxNoOfPodsToEvictTotal": total, "ownerCooldown": "0s"},
        "safety": {"maxTaintedNodes": 1000, "maxTaintedNodesPercent": 100},
        # descheduler's node fit (existing nodes only), as a DeschedulerPolicy is read; and so no autoscaler
        # detection requests in the API request counts compared with descheduler's.
        "autoscaler": {"addsNodes": False},
    }
    return json.dumps(doc, indent=1) + "\n"  # JSON is YAML


# --- measurements ------------------------------------------------------------------------------------------
def rss_mib(pid: int) -> float:
    rss = vm_rss(pid)
    return float("nan") if rss is None else round(rss / 2**20, 1)


@dataclass(frozen=True)
class NodemedicOneShot:
    """`nodemedic-remediator plan` runs, each from process start to its plan."""

    wall: list[float]  # seconds
    evictions: list[int]
    by_strategy: Counter[str]  # of the last run


def nodemedic_oneshot(kubeconfig: Path, policy_file: Path, samples: int) -> NodemedicOneShot:
    walls, evictions = [], []
    by_strategy: Counter[str] = Counter()
    # Each run loads compiled modules, as descheduler runs a built binary: compiling ~300 modules was ~0.4 s a run.
    compile_as_installed("remediator", "nodemedic_common")
    for _ in range(samples):
        t0 = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "remediator", "plan", "--policy", str(policy_file),
                               "--kubeconfig", str(kubeconfig), "--json"], capture_output=True, text=True,
                              check=False, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
        walls.append(time.monotonic() - t0)
        if proc.returncode != 0:
            raise RuntimeError(f"nodemedic-remediator plan failed:\n{proc.stderr[-3000:]}")
        planned = json.loads(proc.stdout)["evictions"]
        evictions.append(len(planned))
        by_strategy = Counter(e["strategy"] for e in planned)
    return NodemedicOneShot(wall=walls, evictions=evictions, by_strategy=by_strategy)


@dataclass(frozen=True)
class DeschedulerOneShot:
    """One `--descheduling-interval=0` process."""

    wall: float  # seconds, process start to exit
    cycle: float  # seconds, the cycle inside it (NaN when its log does not say)
    evictions: int
    complete: bool  # its dry-run view held the whole cluster
    nodes_seen: float  # shares of the cluster's nodes and pods its cycle saw
    pods_seen: float
    by_strategy: Counter[str]


def descheduler_oneshot(kubeconfig: Path, policy: dict[str, Any], view: descheduler.View, samples: int,
                        work: Path) -> list[DeschedulerOneShot]:
    """`samples` one-shot processes. Each is kept whether or not its dry-run view was complete: at this scale the
    one-shot dry run usually plans over a partial mirror of the cluster (see hack/kcp/descheduler.py), and how
    often, and how much it saw, is part of the result."""
    work.mkdir(parents=True, exist_ok=True)
    policy_file = descheduler.write_policy(policy, work / "descheduler-policy.json")
    runs = []
    for i in range(samples):
        cycle, wall = descheduler.run_once(kubeconfig, policy_file, work / f"oneshot-{i}.log", verbosity=3,
                                           timeout=600)
        why = descheduler.incomplete(cycle, view)
        nodes_seen, pods_seen = descheduler.coverage(cycle, view)
        runs.append(DeschedulerOneShot(wall=wall, cycle=cycle.seconds or float("nan"), evictions=len(cycle.evictions),
                                       complete=why is None, nodes_seen=nodes_seen, pods_seen=pods_seen,
                                       by_strategy=Counter(e.strategy for e in cycle.evictions)))
        note(f"descheduler one-shot {i}: {wall:.2f}s, saw {nodes_seen:.0%} of the nodes and {pods_seen:.0%} of the "
            f"pods{'' if why is None else ' (incomplete)'}, {len(cycle.evictions)} evictions")
    return runs


def descheduler_first_complete(kubeconfig: Path, policy: dict[str, Any], view: descheduler.View, samples: int,
                               work: Path) -> list[float]:
    """What a one-shot run would cost if its dry run waited for the mirror: descheduler looping every second,
    seconds from its start to the end of its first cycle that saw the whole cluster."""
    out = []
    for i in range(samples):
        with descheduler.continuous(kubeconfig, policy, interval=1.0, workdir=work / f"first-complete-{i}",
                                    verbosity=1) as d:
            deadline = time.monotonic() + 600
            while True:
                end_ms = next((c.end_ms for c in d.cycles() if c.end_ms and descheduler.incomplete(c, view) is None),
                              None)
                if end_ms:
                    out.append(end_ms / 1000 - d.started_at)
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("descheduler never completed a cycle that saw the whole cluster")
                time.sleep(0.1)
    return out


@dataclass(frozen=True)
class DeschedulerSteady:
    """descheduler looping with an interval, its first cycle excluded."""

    cycles: float
    per_cycle: float  # seconds a loop, from descheduler_loop_duration_seconds
    strategies_per_cycle: float  # the plugins alone: the loop also waits for the dry run's evicted pods to be restored
    first_cycle_evictions: int
    requests_audit: Counter[str]  # per verb, in the steady cycles
    rss_mib: float
    startup_requests: Counter[str]  # per verb, from start to the end of the first cycle
    evictions: list[int]  # per steady cycle
    by_strategy: Counter[str]  # of the first steady cycle
    complete: list[bool]  # per cycle, whether it saw the whole cluster


def descheduler_steady(cluster: controlplane.Cluster, policy: dict[str, Any], view: descheduler.View, *,
                       interval: float, cycles: int, work: Path) -> DeschedulerSteady:
    off0 = _audit_offset(cluster)
    with descheduler.continuous(cluster.kubeconfig, policy, interval=interval, workdir=work / "continuous",
                                verbosity=1) as d:
        first = d.wait_cycles(1, 600)
        m1 = d.metrics()
        off1 = _audit_offset(cluster)
        startup = audit.count(audit.read(cluster.audit_log, off0)[0], DESCHEDULER_UA)
        done = d.wait_cycles(len(first) + cycles, 600 + interval * (cycles + 1))
        m2 = d.metrics()
        requests, _ = audit.read(cluster.audit_log, off1)
        rss = rss_mib(d.proc.pid) if d.proc else float("nan")
    window = done[len(first):len(first) + cycles]

    def delta(name: str) -> float:
        return descheduler.metric_sum(m2, name) - descheduler.metric_sum(m1, name)

    n = delta("descheduler_loop_duration_seconds_count")
    return DeschedulerSteady(
        cycles=n, per_cycle=delta("descheduler_loop_duration_seconds_sum") / n,
        strategies_per_cycle=delta("descheduler_strategy_duration_seconds_sum") / n,  # restores polled every 100 ms
        first_cycle_evictions=len(first[0].evictions),
        requests_audit=audit.count(requests, DESCHEDULER_UA), rss_mib=rss, startup_requests=startup,
        evictions=[len(c.evictions) for c in window],
        by_strategy=Counter(e.strategy for e in window[0].evictions) if window else Counter(),
        complete=[descheduler.incomplete(c, view) is None for c in done])


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        return descheduler.parse_metrics(r.read().decode())


@dataclass(frozen=True)
class NodemedicSteady:
    """A running `nodemedic-remediator run --dry-run`, its first cycle (warm-up) excluded."""

    cycles: float
    window: float  # seconds between the two scrapes
    per_cycle: float  # seconds a cycle (snapshot + plan), from nodemedic_plan_cycle_seconds
    requests_metric: dict[str, float]  # per verb, from its own nodemedic_api_requests_total
    requests_audit: Counter[str]  # per verb, from the audit log
    rss_mib: float
    startup_requests: Counter[str]  # per verb, from start to the end of the first cycle
    planned: float  # dry-run actions reported in all


def nodemedic_steady(cluster: controlplane.Cluster, policy_file: Path, seconds: float, work: Path) -> NodemedicSteady:
    port = free_port()
    log_path = work / "nodemedic-run.log"
    argv = [sys.executable, "-m", "remediator", "run", "--policy", str(policy_file), "--kubeconfig",
            str(cluster.kubeconfig), "--dry-run", "--listen", f"127.0.0.1:{port}", "--lease-namespace", "default",
            "--identity", "bench", "--log-level", "WARNING"]
    url = f"http://127.0.0.1:{port}/metrics"
    off0 = _audit_offset(cluster)
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1"))
    try:
        def cycles() -> float:
            if proc.poll() is not None:
                raise RuntimeError(f"nodemedic exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                return descheduler.metric_sum(_scrape(url), "nodemedic_plan_cycle_seconds_count")
            except OSError:
                return 0.0

        wait(lambda: cycles() >= 2, 300, "nodemedic's first two planning cycles", poll=0.5)  # the first is warm-up
        m1, off1, t1 = _scrape(url), _audit_offset(cluster), time.monotonic()
        startup = audit.count(audit.read(cluster.audit_log, off0)[0], NODEMEDIC_UA)
        time.sleep(seconds)
        wait(lambda: cycles() >= descheduler.metric_sum(m1, "nodemedic_plan_cycle_seconds_count") + 3, 300,
             "three more nodemedic cycles", poll=0.5)
        m2, t2 = _scrape(url), time.monotonic()
        requests, _ = audit.read(cluster.audit_log, off1)
        rss = rss_mib(proc.pid)
    finally:
        child.stop(proc)

    def delta(name: str, **labels: str) -> float:
        return descheduler.metric_sum(m2, name, **labels) - descheduler.metric_sum(m1, name, **labels)

    n = delta("nodemedic_plan_cycle_seconds_count")
    verbs = sorted({dict(ls).get("verb", "") for (name, ls) in m2 if name == "nodemedic_api_requests_total"})
    by_metric = {v: delta("nodemedic_api_requests_total", verb=v) for v in verbs}
    return NodemedicSteady(cycles=n, window=t2 - t1, per_cycle=delta("nodemedic_plan_cycle_seconds_sum") / n,
                           requests_metric=by_metric, requests_audit=audit.count(requests, NODEMEDIC_UA),
                           rss_mib=rss, startup_requests=startup,
                           planned=descheduler.metric_sum(m2, "nodemedic_dry_run_actions_total"))


def _audit_offset(cluster: controlplane.Cluster) -> int:
    return audit.read(cluster.audit_log, 0)[1] if cluster.audit_log.exists() else 0


# --- report ------------------------------------------------------------------------------------------------
def say(line: str) -> None:
    """A figure, printed the moment it is measured (the whole run takes many minutes)."""
    print(line, flush=True)


def _ratio(nodemedic: float, descheduler: float) -> str:
    return format_ratio(ratio(nodemedic, descheduler))


def _strategies(counts: Counter[str]) -> str:
    return ", ".join(f"{s} {n}" for s, n in sorted(counts.items())) or "none"


def _req(counter: Counter[str] | dict[str, float], cycles: float) -> str:
    total = sum(counter.values())
    detail = ", ".join(f"{k} {v:g}" for k, v in sorted(counter.items()) if v)
    return f"{total / cycles:.2f} ({total:g} in {cycles:g} cycles{': ' + detail if detail else ''})"


def _counts(counter: Counter[str]) -> str:
    return f"{sum(counter.values())} (" + ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) + ")"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--pods", type=int, default=15000)
    ap.add_argument("--samples", type=int, default=3, help="one-shot runs per tool")
    ap.add_argument("--steady-seconds", type=float, default=45.0, help="nodemedic's steady-state window")
    ap.add_argument("--interval", type=float, default=10.0, help="descheduler's --descheduling-interval")
    ap.add_argument("--steady-cycles", type=int, default=3, help="descheduler cycles measured after the first")
    ap.add_argument("--max-per-node", type=int, default=10, help="maxNoOfPodsToEvictPerNode, both tools")
    ap.add_argument("--max-total", type=int, default=500, help="maxNoOfPodsToEvictTotal, both tools")
    ap.add_argument("--workers", type=int, default=32, help="concurrent pod creations")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--name", default="bench-vs-descheduler")
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (down it with hack/cluster down)")
    args = ap.parse_args()
    missing = [c for c in (*controlplane.COMPONENTS, "descheduler") if not paths.binary(c).exists()]
    if missing:
        print(f"not built: {missing}; run `make build`", file=sys.stderr)
        return 2
    t_start = time.monotonic()
    rng = random.Random(args.seed)
    cluster = controlplane.Cluster.named(args.name)
    work = Path(tempfile.mkdtemp(prefix="bench-vs-descheduler-"))
    note(f"starting a control plane with {args.nodes} nodes and the audit log on (work dir {work})")
    cluster.up(args.nodes, audit=True, timeout=600)
    try:
        api = cluster.api()
        plans = plan_nodes(args.nodes, args.pods, rng)
        setup = populate(api, plans, rng, args.workers)
        kinds = Counter(p.kind for p in plans)
        note(f"cluster ready after {time.monotonic() - t_start:.0f}s: {dict(kinds)}, "
             f"{sum(p.tainted for p in plans)} tainted, {asdict(setup)}")

        nm_policy = work / "nodemedic-policy.yaml"
        nm_policy.write_text(nodemedic_policy(args.max_per_node, args.max_total))
        ds_policy = descheduler_policy(args.max_per_node, args.max_total)
        view = descheduler.cluster_view(api)
        assert sum(view.pods.values()) == setup.pods - setup.failed and len(view.pods) == args.nodes, \
            "unexpected cluster view"
        say(f"cluster: {args.nodes} nodes, {setup.pods} pods ({setup.failed} Failed, {setup.restarting} "
            f"restarting), owners per namespace declaring {setup.workloads}; policy: all {len(STRATEGIES)} "
            f"strategies on both sides; ratio = nodemedic / descheduler")

        note("nodemedic one-shot plan")
        nm1 = nodemedic_oneshot(cluster.kubeconfig, nm_policy, args.samples)
        nm_wall = median_or_nan(nm1.wall)
        say(f"nodemedic one-shot `plan`: median {nm_wall:.2f} s {[round(w, 2) for w in nm1.wall]}, "
            f"evictions {nm1.evictions} ({_strategies(nm1.by_strategy)})")
        note("descheduler one-shot")
        runs = descheduler_oneshot(cluster.kubeconfig, ds_policy, view, args.samples, work / "oneshot")
        complete = [r.wall for r in runs if r.complete]
        say(f"descheduler one-shot: median {median_or_nan(complete):.2f} s over {len(complete)} complete run(s), "
            f"all runs {[round(r.wall, 2) for r in runs]}, evictions {[r.evictions for r in runs]} "
            f"({_strategies(runs[-1].by_strategy)}); ratio {_ratio(nm_wall, median_or_nan(complete))}")
        note("descheduler looping every 1s: time to its first complete cycle")
        ds_first = descheduler_first_complete(cluster.kubeconfig, ds_policy, view, args.samples, work / "first")
        say(f"descheduler looping every 1s, first complete cycle after: median {median_or_nan(ds_first):.2f} s "
            f"{[round(x, 2) for x in ds_first]}; ratio (nodemedic one-shot) "
            f"{_ratio(nm_wall, median_or_nan(ds_first))}")
        note(f"nodemedic steady state ({args.steady_seconds:g}s window)")
        nm2 = nodemedic_steady(cluster, nm_policy, args.steady_seconds, work)
        say(f"nodemedic steady state: {nm2.per_cycle:.3f} s per cycle (snapshot + plan, {nm2.cycles:g} "
            f"cycles), API requests per cycle {_req(nm2.requests_audit, nm2.cycles)}, RSS {nm2.rss_mib} MiB")
        note(f"descheduler steady state (interval {args.interval:g}s, {args.steady_cycles} cycles after the first)")
        ds2 = descheduler_steady(cluster, ds_policy, view, interval=args.interval, cycles=args.steady_cycles,
                                 work=work)
        say(f"descheduler steady state: {ds2.per_cycle:.3f} s per loop ({ds2.strategies_per_cycle:.3f} s in "
            f"the strategies), evictions per cycle {ds2.evictions} ({_strategies(ds2.by_strategy)}), "
            f"API requests per cycle {_req(ds2.requests_audit, ds2.cycles)}, RSS "
            f"{ds2.rss_mib} MiB; ratio {_ratio(nm2.per_cycle, ds2.per_cycle)} (whole loop), "
            f"{_ratio(nm2.per_cycle, ds2.strategies_per_cycle)} (strategies alone)")
    finally:
        if not args.keep:
            for line in cluster.down():
                note(line)

    ds_wall = median_or_nan(complete)
    rows = [
        ("one-shot wall time, median (s)", f"{nm_wall:.2f}  {[round(w, 2) for w in nm1.wall]}",
         f"{ds_wall:.2f} of {len(complete)} complete run(s); all runs {[round(r.wall, 2) for r in runs]}",
         _ratio(nm_wall, ds_wall) if complete else
         f"({_ratio(nm_wall, median_or_nan([r.wall for r in runs]))} vs all runs)"),
        ("  descheduler looping every 1s: first complete cycle after (s)", f"{nm_wall:.2f}",
         f"{median_or_nan(ds_first):.2f}  {[round(x, 2) for x in ds_first]}",
         _ratio(nm_wall, median_or_nan(ds_first))),
        ("  descheduler: the cycle inside it (s)", "-",
         f"{[round(r.cycle, 3) for r in runs]}", ""),
        ("  descheduler: share of pods its cycle saw", "100% (reads the API directly)",
         ", ".join(format(r.pods_seen, ".0%") for r in runs), ""),
        ("  evictions planned", str(nm1.evictions), str([r.evictions for r in runs]), ""),
        (f"loop mode (interval {args.interval:g}s): complete cycles", "-", f"{ds2.complete}", ""),
        ("steady-state time per cycle (s)", f"{nm2.per_cycle:.3f} (snapshot + plan, {nm2.cycles:g} cycles)",
         f"{ds2.per_cycle:.3f} (whole loop, {ds2.cycles:g} cycles)", _ratio(nm2.per_cycle, ds2.per_cycle)),
        ("  descheduler: the strategies alone (s)", "", f"{ds2.strategies_per_cycle:.3f}",
         _ratio(nm2.per_cycle, ds2.strategies_per_cycle)),
        ("  evictions planned per steady cycle", f"{nm2.planned:g} dry-run actions reported in all",
         f"{ds2.evictions} (first cycle {ds2.first_cycle_evictions})", ""),
        ("API requests per steady cycle (audit)", _req(nm2.requests_audit, nm2.cycles),
         _req(ds2.requests_audit, ds2.cycles), ""),
        ("API requests from start to the end of the first cycle (audit)", _counts(nm2.startup_requests),
         _counts(ds2.startup_requests), ""),
        ("API requests per steady cycle (own metric)", _req(nm2.requests_metric, nm2.cycles),
         "not served (no rest_client_* metrics)", ""),
        ("RSS at the end of the steady window (MiB)", f"{nm2.rss_mib}", f"{ds2.rss_mib}", ""),
    ]
    print(f"\nnodemedic vs descheduler v0.36.0 (dry-run), {args.nodes} nodes, {setup.pods} pods "
          f"({dict(kinds)}), {platform.machine()}, {os.cpu_count()} CPUs; ratio = nodemedic / descheduler")
    columns = (Column(""), Column("nodemedic"), Column("descheduler"), Column("ratio"))
    for line in table(columns, rows, gap="  "):
        print(line)
    print(f"setup: {asdict(setup)}; total {time.monotonic() - t_start:.0f}s")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
