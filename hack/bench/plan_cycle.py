"""Benchmark: one remediator planning cycle over a synthetic in-memory cluster (no API server, no kwok).

Builds 5,000 nodes and 150,000 pods with a realistic mix (three zones; GPU nodes with a taint; infra nodes with
a dedicated taint; a few nodes with a kernel deadlock that nodemedic tainted, some cordoned, some NotReady;
three DaemonSet pods per node; Deployments of 1-60 replicas with varied requests, priorities, QoS classes,
local storage, zone topology spread constraints and PDBs; node fill from idle to hot; for the deschedule
strategies: pods with restarts and a few crash-looping, Failed pods, required and preferred node affinity with a
few nodes of an old pool that no longer match, host anti-affinity; one node where one Deployment crash-loops), then
times `make_plan` with RemovePodsViolatingNodeTaints, RemovePodsViolatingNodeAffinity,
RemovePodsViolatingInterPodAntiAffinity, RemovePodsHavingTooManyRestarts, PodLifeTime, RemoveFailedPods,
RemoveDuplicates (replicas dealt to nodes at random stack up: duplicates),
RemovePodsViolatingTopologySpreadConstraint (10 % of Deployments with a DoNotSchedule zone spread, 20 % with a
ScheduleAnyway host spread, dealt without regard to it), LowNodeUtilization and HighNodeUtilization.
Prints, for the default total eviction limit (500) and for 1500 (enough for every strategy to plan its moves), the
median wall time of a few cycles (and CPU time: the machine may be shared), the plan's size, then the peak RSS
(targets: ≤ 1 s, ≤ 1 GiB).
The snapshot is built once and not timed: keeping it is the watch caches' job, not the planner's.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import itertools
import random
import resource
import time
from collections import Counter

from hack.bench.lib.stats import summarize
from remediator.control.planner import PlannerMemory, make_plan
from remediator.model.records import (
    NO_STATUSES,
    Condition,
    ContainerStatuses,
    Effect,
    LabelSelector,
    NodeRecord,
    NodeSelectorTerm,
    OwnerRef,
    PdbRecord,
    PodAffinityTerm,
    PodCondition,
    PodRecord,
    PreferredNodeTerm,
    SelectorRequirement,
    SpreadConstraint,
    Taint,
    Toleration,
)
from remediator.planning.owned_taints import OwnedTaint, render_owned
from remediator.policy.loader import parse_policy
from remediator.state.derived import Derived
from remediator.state.heap import HeapFreezer
from remediator.state.records import pod_conditions
from remediator.state.snapshot import Snapshot
from remediator.strategies import CATALOG
from remediator.strategies.remove_pods_having_too_many_restarts.report import CrashLoopNodes

NOW = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.UTC)
GI, MI = 2**30, 2**20
ZONES = ("zone-a", "zone-b", "zone-c")
DEADLOCK = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
GPU = Taint("nvidia.com/gpu", "present", Effect.NO_SCHEDULE)
INFRA = Taint("dedicated", "infra", Effect.NO_SCHEDULE)
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
# Workloads that must run on (or prefer) the current pool; nodes of the old pool (OLD_POOL_SHARE) no longer match.
CURRENT_POOL = NodeSelectorTerm(match_expressions=(SelectorRequirement(INSTANCE_TYPE, "In", ("m5.4xlarge",)),))
OLD_POOL_SHARE = 0.01
CRASHING_AT = 100  # one Deployment's replicas crash-loop on node-00100 (a smaller cluster's last node), only there
DAEMONSETS = (("kube-proxy", 100, 128 * MI), ("node-exporter", 50, 64 * MI), ("log-agent", 200, 256 * MI))

POLICY = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 30s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
strategies:
- name: RemovePodsViolatingNodeTaints
- name: RemovePodsViolatingNodeAffinity
  args:
    nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution, preferredDuringSchedulingIgnoredDuringExecution]
- name: RemovePodsViolatingInterPodAntiAffinity
- name: RemovePodsHavingTooManyRestarts
  args: {podRestartThreshold: 100, includingInitContainers: true}
- name: PodLifeTime
  args: {maxPodLifeTimeSeconds: 86400, namespaces: {include: [team-007]}}
- name: RemoveFailedPods
  args: {reasons: [OOMKilled, Error, Evicted], minPodLifetimeSeconds: 3600}
# balance strategies in descheduler's usual profile order: duplicates and spread before utilization
- name: RemoveDuplicates
  args:
    excludeOwnerKinds: [Job]
    namespaces: {exclude: [kube-system]}
- name: RemovePodsViolatingTopologySpreadConstraint
  args:
    constraints: [DoNotSchedule, ScheduleAnyway]
- name: LowNodeUtilization
  args:
    thresholds: {cpu: 20, memory: 20, pods: 20}
    targetThresholds: {cpu: 60, memory: 60, pods: 60}
    evictableNamespaces: {exclude: [kube-system]}
- name: HighNodeUtilization
  args:
    thresholds: {cpu: 8, memory: 8}
    taintDrainedNodes: true
limits:
  maxNoOfPodsToEvictPerNode: 10
  maxNoOfPodsToEvictTotal: %(total)s
safety: {maxTaintedNodes: 100, maxTaintedNodesPercent: 5}
"""


def build(n_nodes: int, n_pods: int, seed: int) -> Snapshot:
    rng = random.Random(seed)
    condition_rng = random.Random(seed + 1)  # its own stream: the cluster stays the one earlier runs measured
    nodes: dict[str, NodeRecord] = {}
    fill: dict[str, float] = {}
    ready = (Condition("Ready", "True", NOW - dt.timedelta(days=3)),)
    sick = (*ready, Condition("KernelDeadlock", "True", NOW - dt.timedelta(minutes=5)))
    owned = {"nodemedic.io/owned-taints": render_owned([OwnedTaint(DEADLOCK, ("kernel-deadlock",), "bench", NOW)])}
    crashing_node = f"node-{min(CRASHING_AT, n_nodes - 1):05d}"
    for i in range(n_nodes):
        name = f"node-{i:05d}"
        kind = rng.random()
        old_pool = rng.random() < OLD_POOL_SHARE and name != crashing_node
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": ZONES[i % 3],
                  INSTANCE_TYPE: "m5.2xlarge" if old_pool else "m5.4xlarge"}
        allocatable = {"cpu": 15_890, "memory": 60 * GI, "pods": 110, "ephemeral-storage": 100 * GI}
        taints: tuple[Taint, ...] = ()
        conditions: tuple[Condition, ...] = ready
        annotations, unschedulable = {}, False
        if kind < 0.02:
            taints, allocatable["nvidia.com/gpu"] = (GPU,), 8
            labels["accelerator"] = "nvidia"
        elif kind < 0.05:
            taints, labels["dedicated"] = (INFRA,), "infra"
        elif kind < 0.053:
            taints, conditions, annotations = (DEADLOCK,), sick, owned  # nodemedic tainted it already
        elif kind < 0.063:
            unschedulable = True
            taints = (Taint("node.kubernetes.io/unschedulable", "", Effect.NO_SCHEDULE),)
        elif kind < 0.068:
            conditions = (Condition("Ready", "False", NOW - dt.timedelta(minutes=2)),)
        nodes[name] = NodeRecord(name=name, labels=labels, annotations=annotations, taints=taints,
                                 unschedulable=unschedulable, conditions=conditions, allocatable=allocatable,
                                 created=NOW - dt.timedelta(days=30))
        u = rng.random()  # how full the scheduler left it: some idle, most in the middle, some hot
        fill[name] = rng.uniform(0.0, 0.07) if u < 0.10 else rng.uniform(0.1, 0.2) if u < 0.25 else \
            rng.uniform(0.3, 0.6) if u < 0.85 else rng.uniform(0.65, 0.95)

    by_node: dict[str, list[PodRecord]] = {name: [] for name in nodes}
    by_owner: dict[str, list[PodRecord]] = {}

    def add(p: PodRecord) -> None:
        by_node[p.node_name].append(p)
        for o in p.owners:
            by_owner.setdefault(o.uid, []).append(p)

    # DaemonSet pods: every node, every DaemonSet.
    # What a workload's pods have in common is one object, as the cache's decoder holds it (state/sharing.py).
    for ds, cpu, mem in DAEMONSETS:
        owners = (OwnerRef("DaemonSet", ds, f"uid-ds-{ds}", controller=True),)
        labels, requests, images = {"app": ds}, {"cpu": cpu, "memory": mem}, (f"registry.k8s.io/{ds}:1",)
        tolerate_all, started = (Toleration(operator="Exists"),), NOW - dt.timedelta(days=3)
        for name in nodes:
            add(PodRecord(namespace="kube-system", name=f"{ds}-{name}", uid=f"uid-{ds}-{name}", node_name=name,
                          phase="Running", labels=labels, owners=owners, priority=2_000_001_000,
                          priority_class="system-node-critical", tolerations=tolerate_all,
                          requests=requests, qos="Burstable", images=images, start_time=started))

    # Application pods: each Deployment lives in one pool (general, infra, GPU); its pods are dealt to the pool's
    # nodes in proportion to how full each node should end up, with requests sized to get them there on average.
    pools: dict[str, list[str]] = {"general": [], "infra": [], "gpu": []}
    for name, node in nodes.items():
        pools["gpu" if GPU in node.taints else "infra" if INFRA in node.taints else "general"].append(name)
    cumulative = {pool: list(itertools.accumulate(fill[n] + 0.01 for n in members)) for pool, members in pools.items()}
    app_pods = n_pods - len(DAEMONSETS) * len(nodes)
    weight = sum(fill[m] + 0.01 for m in nodes)  # once: summed per node, the 65,000-node build took hours
    expected = {n: app_pods * (fill[n] + 0.01) / weight for n in nodes}
    pdbs: list[PdbRecord] = []
    ages: dict[int, dt.datetime] = {}  # the r-th replica's creation time: one object, as decoded (parse_time)
    made, d = 0, 0
    while made < app_pods:
        d += 1
        namespace, app = f"team-{d % 200:03d}", f"app-{d:05d}"
        replicas = min(app_pods - made, rng.choice((1, 2, 3, 3, 5, 8, 12, 20, 60)))
        made += replicas
        pool = rng.choices(("general", "infra", "gpu"), weights=(0.95, 0.03, 0.02))[0]
        owners = (OwnerRef("ReplicaSet", f"{app}-7d9f8", f"uid-rs-{d}", controller=True),)
        labels, images = {"app": app, "pod-template-hash": "7d9f8"}, (f"registry.example/{namespace}/{app}:1",)
        priority = rng.choice((None, None, 0, 0, 100, 1000, 100_000))
        tolerations = {"general": (), "infra": (Toleration(key=INFRA.key, value=INFRA.value, effect="NoSchedule"),),
                       "gpu": (Toleration(key=GPU.key, operator="Exists"),)}[pool]
        selector = {"dedicated": "infra"} if pool == "infra" else {}
        spread: tuple[SpreadConstraint, ...] = ()
        soft: tuple[SpreadConstraint, ...] = ()
        roll = rng.random()
        if roll < 0.1:  # hard (DoNotSchedule) zone spread: node fit for every strategy
            spread = (SpreadConstraint(1, "topology.kubernetes.io/zone", LabelSelector(match_labels=(("app", app),))),)
        elif roll < 0.3:  # soft (ScheduleAnyway) host spread: balance moves must not make it worse
            soft = (SpreadConstraint(1, "kubernetes.io/hostname", LabelSelector(match_labels=(("app", app),))),)
        if rng.random() < 0.2:
            pdbs.append(PdbRecord(namespace, f"{app}-pdb", LabelSelector(match_labels=(("app", app),)),
                                  disruptions_allowed=rng.choice((0, 1, 1, 2))))
        local_storage = rng.random() < 0.15
        roll = rng.random()  # node affinity: 5% require the current pool, 10% prefer it
        required = (CURRENT_POOL,) if roll < 0.05 else ()
        preferred = (PreferredNodeTerm(50, CURRENT_POOL),) if 0.05 <= roll < 0.15 else ()
        anti = (PodAffinityTerm(LabelSelector(match_labels=(("app", app),)), (namespace,), False,
                                "kubernetes.io/hostname"),) if rng.random() < 0.1 else ()
        crashing_here = d == 7  # this Deployment's pods crash-loop on crashing_node only
        qos = rng.choice(("Burstable", "Burstable", "Guaranteed", "BestEffort"))
        placed = rng.choices(pools[pool], cum_weights=cumulative[pool], k=replicas)
        if crashing_here:
            placed[:2] = [crashing_node] * min(2, replicas)
        # The replicas share their requests (their pod template's), sized for the nodes they are dealt to on average.
        need = sum(fill[name] * 15_890 / max(1.0, expected[name]) for name in placed) / len(placed)
        cpu = max(10, int(need * rng.uniform(0.6, 1.4)))
        requests = {} if qos == "BestEffort" else {"cpu": cpu, "memory": int(cpu * rng.uniform(2, 6) * MI)}
        if pool == "gpu":
            requests["nvidia.com/gpu"] = 1
        for r, name in enumerate(placed):
            phase, reason, containers = _status(rng, crashing=crashing_here and name == crashing_node)
            created = ages.setdefault(r, NOW - dt.timedelta(hours=r + 1))
            add(PodRecord(namespace=namespace, name=f"{app}-7d9f8-{r:03d}", uid=f"uid-{d}-{r}", node_name=name,
                          phase=phase, labels=labels, owners=owners,
                          priority=priority, tolerations=tolerations, node_selector=selector,
                          required_node_affinity=required, preferred_node_affinity=preferred,
                          required_anti_affinity=anti,
                          hard_spread=spread, soft_spread=soft, requests=requests, qos=qos,
                          has_local_storage=local_storage, reason=reason, containers=containers,
                          images=images, start_time=created, created=created,
                          conditions=_conditions(condition_rng, created, restarted=containers.restarts > 0)))
    return Snapshot(now=NOW, nodes=nodes, pods_by_node=by_node, pods_by_owner=by_owner, pdbs=pdbs)


def _conditions(rng: random.Random, created: dt.datetime, *, restarted: bool) -> tuple[PodCondition, ...]:
    """The five conditions a running pod has, through the cache's own parser (which shares equal lists): scheduled
    and initialized at once, ready a few seconds later; a pod that restarted became ready again any time since."""
    def at(seconds: int) -> str:
        return f"{created + dt.timedelta(seconds=seconds):%Y-%m-%dT%H:%M:%SZ}"

    ready = rng.randint(60, int((NOW - created).total_seconds())) if restarted else rng.randint(2, 20)
    return pod_conditions([
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": at(1)},
        {"type": "Initialized", "status": "True", "lastTransitionTime": at(0)},
        {"type": "Ready", "status": "True", "lastTransitionTime": at(ready)},
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": at(ready)},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": at(0)},
    ], created)


def _status(rng: random.Random, *, crashing: bool) -> tuple[str, str, ContainerStatuses]:
    """Phase, status reason and container statuses: most pods healthy, 3% with a few restarts, 0.2% crash-looping,
    0.5% Failed (OOMKilled, Error or Evicted)."""
    if crashing:
        return "Running", "", ContainerStatuses(rng.randint(150, 900), ("CrashLoopBackOff",))
    u = rng.random()
    if u < 0.005:
        how = rng.choice(("OOMKilled", "Error", "Evicted"))
        if how == "Evicted":
            return "Failed", how, ContainerStatuses(0, (), ("Error",), (137,))
        return "Failed", "", ContainerStatuses(rng.randint(0, 3), (), (how,), (137 if how == "OOMKilled" else 1,))
    if u < 0.007:
        return "Running", "", ContainerStatuses(rng.randint(100, 5000), ("CrashLoopBackOff",))
    if u < 0.037:
        return "Running", "", ContainerStatuses(rng.randint(1, 20))
    return "Running", "", NO_STATUSES  # as state/records.py shares it for every healthy pod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=150_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--total-limits", default="500,1500",
                    help="maxNoOfPodsToEvictTotal of each configuration timed, comma-separated ('null' for none)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    snapshot = build(args.nodes, args.pods, args.seed)
    pods = sum(len(p) for p in snapshot.pods_by_node.values())
    print(f"cluster: {len(snapshot.nodes)} nodes, {pods} pods, {len(snapshot.pdbs)} PDBs "
          f"(built in {time.perf_counter() - t0:.1f} s, not timed)", flush=True)
    heap = HeapFreezer()
    heap.maybe_freeze()  # as the remediator does once its caches are synced (remediator/state/heap.py)
    for total in args.total_limits.split(","):
        policy = parse_policy(POLICY % {"total": total}, source="bench-policy.yaml", catalog=CATALOG)
        times, cpu = [], []
        plan = None
        for _ in range(args.runs):
            # A fresh Snapshot each run, as the controller takes one per cycle: what it builds lazily
            # (Snapshot.notable, Snapshot.live) is paid by every run, not only the first; and nothing kept from an
            # earlier run's pod lists (state/derived.py): this times a cold cycle, steady_cycle.py the steady one.
            fresh = dataclasses.replace(snapshot, derived=Derived())
            t, c = time.perf_counter(), time.process_time()
            with heap.cycle():  # as the controller runs it: what the cycle keeps is frozen (state/heap.py)
                plan = make_plan(fresh, policy, PlannerMemory())
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        assert plan is not None
        by_strategy = Counter(e.strategy for e in plan.evictions)
        print(f"\nmaxNoOfPodsToEvictTotal: {total}")
        print("plan: " + ", ".join(f"{n} evictions by {s}" for s, n in sorted(by_strategy.items())) +
              f"; {len(plan.protected)} protected, {len(plan.deferred)} deferred, {len(plan.taints_add)} taints "
              f"added, {len(plan.held)} held")
        crash_loops = plan.reports["RemovePodsHavingTooManyRestarts"]
        assert isinstance(crash_loops, CrashLoopNodes)
        print("crash-loop nodes: " + ("; ".join(c.describe() for c in crash_loops.nodes) or "none"))
        wall = summarize(times)
        print(f"planning cycle: median {wall.median:.3f} s over {args.runs} runs "
              f"(min {wall.minimum:.3f}, max {wall.maximum:.3f}; CPU median {summarize(cpu).median:.3f} s); "
              "target <= 1 s", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(f"\npeak RSS: {rss / 1024:.0f} MiB; target <= 1024 MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
