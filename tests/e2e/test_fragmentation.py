"""The placement engine against the real scheduler and the real autoscaler: a fragmented Karpenter pool and a stream
of pending pods, once without nodemedic and once with MakeRoomForPendingPods, from the same start.

The start (built the same way in a NodePool of its own each run, 4-CPU / 8 GiB kwok nodes): node C runs a CPU-heavy
anchor and two small movable pods (200m free), node M a memory-heavy anchor (1.6 GiB free); the anchors repel each
other. Then two pods of 600m / 2 GiB arrive 10 s apart: neither node has room for one, the pool has room for both.
Without nodemedic, Karpenter buys a node. With it, one small pod moves from C to M for each, and no node is bought.
The test prints the side-by-side table (nodes added, node-minutes over the same window, pods evicted, time to
schedule each pending pod) and holds the article's bar: at least 17 % fewer node-minutes, no PDB violated. The
remediator's savings ledger then holds a room for each pending pod, priced from the policy, as `kubectl nodemedic
savings` shows it and a real Prometheus scrapes it (with the dashboard's savings panel's queries).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from hack.kcp import prometheus
from tests import chart_monitoring as cm
from tests.e2e.autoscaler_harness import POOL_LABEL, PoolWatch, node_pool, pool_nodes
from tests.e2e.conftest import LocalCluster
from tests.e2e.landing_harness import LANDING_NAMESPACE, LandingPolicy, own_lease
from tests.e2e.real_node_harness import ready
from tests.e2e.remediator_harness import RemediatorProcess, events_once, nodemedic_events, start_remediator
from tests.waiting import wait_until

# One xdist worker runs the whole module: its tests share one Karpenter cluster (module-scoped karpenter_cluster).
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("fragmentation")]

WINDOW = 75.0  # seconds of node-minutes counted from the first pending pod, the same for both runs
ARRIVALS = (0.0, 10.0)  # when each pending pod is created, from the start of the stream
SMALL = ("small-a", "small-b")
SLOW_START = "8s"  # a slow pod's containers start this long after it is bound: a migration step under way stays so
PRICE = 0.192  # USD per node-hour of the test's pools (savings.prices)
ANCHOR_TERM = {"labelSelector": {"matchLabels": {"role": "anchor"}}, "topologyKey": "kubernetes.io/hostname"}


@dataclass
class Run:
    nodes_added: int
    node_minutes: float
    evicted: int
    to_schedule: list[float]  # seconds from creation to bound, per pending pod
    wanted_nodes: set[str]
    fewest_small: int


@dataclass
class Pool:
    cluster: LocalCluster
    core: client.CoreV1Api
    apps: client.AppsV1Api
    policy_api: client.PolicyV1Api
    namespace: str
    tmp: Path

    def deploy(self, name: str, replicas: int, cpu: str, memory: str, *, role: str = "", anti: bool = False,
               prefer: str = "", slow: bool = False) -> None:
        """A Deployment selecting its pods by `workload`; `app` is `role` when given (several workloads, one app).
        `slow`: its containers take SLOW_START to start (hack/kcp/kwok-stages.yaml), and it runs on cordoned nodes."""
        labels = {"workload": name, "app": role or name, **({"role": role} if role else {})}
        spec: dict[str, object] = {"nodeSelector": {POOL_LABEL: self.namespace}, "terminationGracePeriodSeconds": 0,
                                   "containers": [{"name": "app", "image": "registry.invalid/app:1", "resources": {
                                       "requests": {"cpu": cpu, "memory": memory}}}]}
        if slow:
            spec["tolerations"] = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                    "effect": "NoSchedule"}]
        if anti:
            spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [ANCHOR_TERM]}}
        if prefer:  # rather next to the pods of app `prefer` (only the scheduler reads it; nodemedic's moves do not)
            spec["affinity"] = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": prefer}},
                                                   "topologyKey": "kubernetes.io/hostname"}}]}}
        self.apps.create_namespaced_deployment(self.namespace, {
            "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"workload": name}},
                     "template": {"metadata": {"labels": labels, "annotations": {
                         "e2e.nodemedic.io/start-delay": SLOW_START} if slow else {}}, "spec": spec}}})

    def placed(self, app: str, count: int, timeout: float = 120, *, key: str = "workload") -> dict[str, str]:
        def probe() -> dict[str, str] | None:
            pods = {p.metadata.name: p.spec.node_name
                    for p in self.core.list_namespaced_pod(self.namespace, label_selector=f"{key}={app}").items
                    if p.metadata.deletion_timestamp is None and p.status.phase == "Running"}
            return pods if len(pods) == count else None
        return wait_until(probe, timeout=timeout, what=f"{count} running pods of {app} in {self.namespace}")

    def fragmented_start(self, *, prefer_m: bool = False, pdb: bool = True, slow: bool = False) -> tuple[str, str]:
        """C: cpu anchor 2700m + two small 500m pods; M: memory anchor 6500 MiB. Returns (C, M). With `prefer_m`
        the small pods would rather run beside the memory anchor, which did not exist when they were placed; `pdb`:
        their PDB now (`small_pdb`); `slow`: the small pods start slowly (Pool.deploy)."""
        self.deploy("cpu-anchor", 1, "2700m", "512Mi", role="anchor", anti=True)
        (c,) = self.placed("cpu-anchor", 1).values()
        # Two workloads of one pod each (a workload of two would have its zone spread made worse by moving one
        # to M's zone, which balance moves never do), under one PDB: one of them may be down at a time.
        for name in SMALL:
            self.deploy(name, 1, "500m", "256Mi", role="small", prefer="mem-anchor" if prefer_m else "", slow=slow)
            assert set(self.placed(name, 1).values()) == {c}
        if pdb:
            self.small_pdb()
        self.deploy("mem-anchor", 1, "300m", "6500Mi", role="anchor", anti=True)
        (m,) = self.placed("mem-anchor", 1).values()
        assert c != m
        return c, m

    def small_pdb(self) -> None:
        self.policy_api.create_namespaced_pod_disruption_budget(self.namespace, {
            "metadata": {"name": "small"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "small"}}}})

    def stream(self, watch: PoolWatch) -> Run:
        start_nodes = pool_nodes(self.core, self.namespace)
        t0 = time.monotonic()
        created: dict[str, float] = {}
        for i, at in enumerate(ARRIVALS):
            wait_until(lambda at=at: time.monotonic() - t0 >= at or None, timeout=at + 5, what="the next arrival")
            name = f"wanted-{i}"
            self.core.create_namespaced_pod(self.namespace, {
                "metadata": {"name": name, "labels": {"app": "wanted"}},
                "spec": {"nodeSelector": {POOL_LABEL: self.namespace}, "terminationGracePeriodSeconds": 0,
                         "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                         "resources": {"requests": {"cpu": "600m", "memory": "2Gi"}}}]}})
            created[name] = time.monotonic()
        bound: dict[str, float] = {}
        where: dict[str, str] = {}

        def all_bound() -> bool | None:
            for p in self.core.list_namespaced_pod(self.namespace, label_selector="app=wanted").items:
                if p.spec.node_name and p.metadata.name not in bound:
                    bound[p.metadata.name], where[p.metadata.name] = time.monotonic(), p.spec.node_name
            return len(bound) == len(ARRIVALS) or None
        # Binding may take longer than the window when Karpenter's node comes up slowly on a loaded machine (CI saw it
        # pass 75 s): wait for it, and count node-minutes over the same window either way.
        wait_until(all_bound, timeout=WINDOW + 60, what="every pending pod bound", interval=0.2)
        wait_until(lambda: time.monotonic() - t0 >= WINDOW or None, timeout=WINDOW + 5, what="the end of the window")
        watch.stop()
        end = t0 + WINDOW
        minutes = 0.0
        for n in start_nodes | set(watch.added):
            up, down = max(t0, watch.added.get(n, t0)), min(end, watch.removed.get(n, end))
            minutes += max(0.0, down - up) / 60
        evicted = len(nodemedic_events(self.core, self.namespace, "NodemedicEvicted"))
        return Run(nodes_added=len(set(watch.added) - start_nodes), node_minutes=minutes, evicted=evicted,
                   to_schedule=[bound[n] - created[n] for n in sorted(created)], wanted_nodes=set(where.values()),
                   fewest_small=watch.fewest.get((self.namespace, "small"), 2))


@pytest.fixture
def pools(karpenter_cluster: LocalCluster, tmp_path: Path) -> Iterator[list[Pool]]:
    made: list[Pool] = []
    core = client.CoreV1Api(karpenter_cluster.api)
    yield made
    for p in made:
        core.delete_namespace(p.namespace)


def new_pool(cluster: LocalCluster, tmp: Path, pools: list[Pool]) -> Pool:
    core = client.CoreV1Api(cluster.api)
    name = f"frag-{secrets.token_hex(2)}"
    core.create_namespace({"metadata": {"name": name}})
    wait_until(lambda: core.list_namespaced_service_account(name).items, timeout=30, what=f"{name}/default SA")
    node_pool(cluster, name)
    pool = Pool(cluster, core, client.AppsV1Api(cluster.api), client.PolicyV1Api(cluster.api), name, tmp)
    pools.append(pool)
    return pool


def policy(namespace: str) -> str:
    return f"""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: MakeRoomForPendingPods
  args: {{maxEvictionsPerPod: 2, chainDepth: 1}}
evictor: {{nodeFit: true, namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 60s, initialBackoff: 200ms, maxBackoff: 1s, landing: planned}}
savings:
  currency: USD
  prices:
  - {{match: {{{POOL_LABEL}: {namespace}}}, perHour: {PRICE}}}
"""


def savings_seen(cluster: LocalCluster, remediator: RemediatorProcess, ledger: str, namespace: str,
                 tmp_path: Path, processes: list) -> None:
    """The two pending pods seated without a node, as `kubectl nodemedic savings` reads the ledger and as the real
    Prometheus scrapes the remediator's metrics (with the dashboard's savings panel's own queries)."""
    def seated() -> dict | None:
        doc = json.loads(plugin(cluster, "savings", "--ledger", ledger, "-o", "json"))
        return doc if len(doc["open"]) == len(ARRIVALS) else None
    doc = wait_until(seated, timeout=30, what="both pending pods' rooms in the savings ledger")
    assert {r["pod"] for r in doc["open"]} == {f"{namespace}/wanted-{i}" for i in range(len(ARRIVALS))}
    assert {(r["pool"], r["perHour"]) for r in doc["open"]} == {(namespace, PRICE)}
    print(f"\n$ kubectl nodemedic savings --ledger {ledger}\n{plugin(cluster, 'savings', '--ledger', ledger)}")
    server = prometheus.start(tmp_path / "prometheus", [
        {"job_name": "nodemedic-remediator", "static_configs": [{"targets": [f"127.0.0.1:{remediator.port}"]}]}], [])
    processes.append(server)

    def scraped() -> list | None:
        hours = server.query(f'nodemedic_savings_node_hours_total{{pool="{namespace}"}} > 0')
        rooms = server.query(f'nodemedic_savings_rooms{{pool="{namespace}"}} == {len(ARRIVALS)}')
        # The dashboard panel's own query: an increase needs two scrapes of the counter.
        panel = server.query(f'sum by (pool) (increase(nodemedic_savings_node_hours_total{{pool="{namespace}"}}[1d]))'
                             ' > 0')
        return hours + rooms + panel if hours and rooms and panel else None
    wait_until(scraped, timeout=60, what="Prometheus scraping the savings counters")
    print("savings in the real Prometheus:")
    names = ("nodemedic_savings_node_hours_total", "nodemedic_savings_cost_total", "nodemedic_savings_rooms")
    for expr in [*(f'{name}{{pool="{namespace}"}}' for name in names),
                 *(e for w, e in cm.panel_queries(cm.dashboard()) if w.startswith("Savings"))]:
        result = server.query(expr)
        print(f"  {expr} -> {[(r['metric'], r['value'][1]) for r in result]}")
        assert result, f"no series for {expr}"
    cost = server.query(f'nodemedic_savings_cost_total{{pool="{namespace}",currency="USD"}}')
    assert cost and float(cost[0]["value"][1]) > 0


def test_the_placement_engine_saves_the_node_karpenter_would_buy(
    karpenter_cluster: LocalCluster, pools: list[Pool], processes: list, tmp_path: Path,
) -> None:
    runs: dict[str, Run] = {}
    for label in ("without nodemedic", "with MakeRoomForPendingPods"):
        pool = new_pool(karpenter_cluster, tmp_path, pools)
        c, m = pool.fragmented_start()
        remediator = None
        if label.startswith("with "):
            processes.append(LandingPolicy(karpenter_cluster.api))
            ledger = f"savings-{pool.namespace}"
            remediator = start_remediator(tmp_path, karpenter_cluster.kubeconfig, policy(pool.namespace),
                                          name=f"remediator-{pool.namespace}", lease_namespace=LANDING_NAMESPACE,
                                          extra=[*own_lease(pool.namespace), "--savings-ledger", ledger])
            processes.append(remediator)
        watch = PoolWatch(pool.core, pool.namespace, {(pool.namespace, "small"): 1}).start()
        processes.append(watch)  # stopped after the test, whatever the outcome
        runs[label] = run = pool.stream(watch)
        watch.assert_held(may_remove=set())
        if remediator is not None:
            assert run.wanted_nodes == {c}, f"the pending pods ran on {run.wanted_nodes}, not on the freed {c}"
            assert {n for s in SMALL for n in pool.placed(s, 1).values()} == {m}, "each small pod moved to M"
            landed = [e.message for e in events_once(pool.core, pool.namespace, "NodemedicLanded", run.evicted)]
            print(f"\nplacement: each move's replacement pinned where the plan said: {sorted(landed)}")
            assert len(landed) == run.evicted and all(f"bound to {m} as planned" in e for e in landed)
            savings_seen(karpenter_cluster, remediator, ledger, pool.namespace, tmp_path, processes)
    base, engine = runs["without nodemedic"], runs["with MakeRoomForPendingPods"]
    saved = 1 - engine.node_minutes / base.node_minutes
    print("\nfragmentation, the same start and stream twice (window "
          f"{WINDOW:.0f} s from the first pending pod):")
    print(f"  {'':30} {'nodes added':>11} {'node-minutes':>12} {'evicted':>7}  time to schedule each pending pod")
    for label, r in runs.items():
        times = ", ".join(f"{t:.1f}s" for t in r.to_schedule)
        print(f"  {label:30} {r.nodes_added:>11} {r.node_minutes:>12.2f} {r.evicted:>7}  {times}"
              f"  (fewest serving small pods {r.fewest_small}, PDB minAvailable 1)")
    print(f"  node-minutes saved: {saved:.1%} (bar: 17 %)")
    assert base.nodes_added >= 1, "the scenario is not fragmented enough for Karpenter to buy a node"
    assert engine.nodes_added == 0
    assert saved >= 0.17


def quantity(text: str) -> float:
    """cpu in millicores or memory in bytes from the few forms these tests write ("500m", "2", "256Mi", "2Gi")."""
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


@dataclass
class Mix:
    deviation: float
    nodes: int  # the pool's nodes measured
    pods: int  # the pool namespace's running pods counted


def mix_deviation(core: client.CoreV1Api, pool: str) -> Mix:
    """The summed distance of each pool node's cpu:memory request mix from the pool's (docs/fragmentation.md), from
    what the API server holds: nodes' allocatable and the live pods' requests."""
    nodes = {n.metadata.name: n for n in core.list_node(label_selector=f"{POOL_LABEL}={pool}").items
             if n.metadata.deletion_timestamp is None}
    used = {n: {"cpu": 0.0, "memory": 0.0} for n in nodes}
    counted = 0
    for p in core.list_pod_for_all_namespaces().items:
        if p.spec.node_name in used and p.metadata.deletion_timestamp is None and p.status.phase == "Running":
            counted += p.metadata.namespace == pool
            for c in p.spec.containers:
                for r in ("cpu", "memory"):
                    used[p.spec.node_name][r] += quantity((c.resources.requests or {}).get(r, "0"))
    alloc = {n: {r: quantity(nodes[n].status.allocatable[r]) for r in ("cpu", "memory")} for n in nodes}

    def lean(u: dict[str, float], a: dict[str, float]) -> float:
        return 100 * u["cpu"] / a["cpu"] - 100 * u["memory"] / a["memory"]
    cluster = lean({r: sum(u[r] for u in used.values()) for r in ("cpu", "memory")},
                   {r: sum(a[r] for a in alloc.values()) for r in ("cpu", "memory")})
    return Mix(sum(abs(lean(used[n], alloc[n]) - cluster) for n in nodes), len(nodes), counted)


def start_mix(pool: Pool) -> Mix:
    """The fragmented start's measure once it counts all four of the start's pods on the pool's two nodes (a CI run
    measured 82.36 where the remediator's first plan, moments later, measured 154.11: M's anchor, already seen Running,
    was not counted then; the start is measured whole, or the test fails here saying what it saw)."""
    def whole() -> Mix:
        mix = mix_deviation(pool.core, pool.namespace)
        assert (mix.nodes, mix.pods) == (2, 2 + len(SMALL)), f"measured {mix}"
        return mix
    return wait_until(whole, timeout=30, what="the start measured whole: 2 nodes, 4 running pods")


# The remediator acts on its own pool's nodes only: the resource mix it evens (and measures) is the pool's, whatever
# the module's earlier pools do to the cluster's meanwhile (a CI run's balancing case, measuring every node, reached
# 125.68 where its last plan promised 122.92: an earlier test's pool was going away).
BALANCING = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: BalanceResourceMix
  args: {{maxMovesPerCycle: 2, minImprovement: 5, maxUtilization: 90, approval: {approval}}}
evictor: {{nodeFit: true, namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{landing: planned, landingDeadline: 60s}}
nodeSelector: {pool_label}={namespace}
"""


class PlanHistory:
    """Every plan with moves a remediator made, from /plan polled twenty times a second in a thread (a plan stands
    for at least the controller's 0.2 s between cycles): what each promised, to hold the cluster to it."""

    def __init__(self, r: RemediatorProcess) -> None:
        self.r = r
        self.moves: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(OSError, ValueError):
                plan = self.r.plan()
                if plan["evictions"] and (not self.moves or plan["evictions"] != self.moves[-1]["evictions"]):
                    self.moves.append(plan)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def test_the_balancing_engine_evens_the_resource_mix_within_the_pdb_and_lands_each_move_where_planned(
    karpenter_cluster: LocalCluster, pools: list[Pool], processes: list, tmp_path: Path,
) -> None:
    pool = new_pool(karpenter_cluster, tmp_path, pools)
    # C leans to CPU, M to memory; the small pods would rather run beside M's anchor (a preference, which the
    # scheduler weighs against its resource scores). Each move is pinned to the node the plan chose (the chart's
    # admission policy, eviction.landing: planned), so the cluster reaches the deviation the plans promised.
    _, m = pool.fragmented_start(prefer_m=True)
    before = start_mix(pool).deviation
    processes.append(LandingPolicy(karpenter_cluster.api))
    watch = PoolWatch(pool.core, pool.namespace, {(pool.namespace, "small"): 1}).start()
    processes.append(watch)  # stopped after the test, whatever the outcome
    r = start_remediator(tmp_path, karpenter_cluster.kubeconfig,
                         BALANCING.format(namespace=pool.namespace, approval="automatic", pool_label=POOL_LABEL),
                         name=f"remediator-{pool.namespace}", lease_namespace=LANDING_NAMESPACE,
                         extra=own_lease(pool.namespace))
    processes.append(r)
    history = PlanHistory(r)
    processes.append(history)

    def settled() -> tuple[dict, int, list[str]] | None:
        """Once every move planned so far has landed (judged), nothing more is planned or waiting and every small pod
        serves: (the plan, the evictions made, the small pods' nodes)."""
        # None in flight first: an eviction an earlier plan decided may still be answering, and would put a pod
        # Pending after a quiet plan.
        if r.metric("nodemedic_evictions_in_flight"):
            return None
        made = int(r.metric("nodemedic_evictions_total", outcome="evicted"))
        plan = r.plan()
        if not made or r.metric("nodemedic_landings_total", outcome="landed") < made or plan["evictions"]:
            return None
        # A landing is judged when the replacement is bound; until it is Ready, minAvailable 1 leaves no disruption
        # and the next move waits in `deferred` (a CI run read the cluster in that gap and found the next move's
        # replacement Pending).
        if any(d["namespace"] == pool.namespace for d in plan["deferred"]):
            return None
        pods = pool.core.list_namespaced_pod(pool.namespace, label_selector="app=small").items
        if any(p.metadata.deletion_timestamp or not p.spec.node_name or not ready(p) for p in pods):
            return None
        return plan, made, sorted(p.spec.node_name for p in pods)
    reached, made, where = wait_until(settled, timeout=90, what="every move landed, a quiet plan, small pods Ready")
    history.stop()
    after = mix_deviation(pool.core, pool.namespace).deviation
    watch.stop()
    watch.assert_held(may_remove=set())
    # The remediator counts an outcome before it writes its Event (a fresh-clone run read 2 evictions and 1 landed
    # Event while the metric said 2 landed): wait for the Events the metrics promise; one too many still fails below.
    evicted = events_once(pool.core, pool.namespace, "NodemedicEvicted", made)
    landed = events_once(pool.core, pool.namespace, "NodemedicLanded", made)
    promises = [(p["resourceMix"]["deviationBefore"], p["resourceMix"]["deviationAfter"], len(p["evictions"]))
                for p in history.moves]
    print("\nbalancing: the plans promised resource-mix deviation "
          + " then ".join(f"{b} -> {a} ({n} move{'s' * (n > 1)})" for b, a, n in promises)
          + f"; the pool reached {reached['resourceMix']['deviationBefore']} (the plan's measure, "
          f"{reached['resourceMix']['nodes']} nodes) and "
          f"this pool {before:.2f} -> {after:.2f} (the test's own, from the API); {len(evicted)} evictions, "
          f"{len(landed)} landed on the planned node; small pods on {['M' if n == m else 'C' for n in where]}; "
          f"fewest serving small pods {watch.fewest[(pool.namespace, 'small')]} (PDB minAvailable 1); nodes added: "
          f"{len(watch.added)}")
    for e in landed:
        print(f"  {e.message}")
    assert promises and len(evicted) == len(landed) == sum(n for _, _, n in promises), \
        (made, [e.message for e in evicted], [e.message for e in landed])
    assert reached["resourceMix"]["deviationBefore"] == promises[-1][1], "the deviation reached is the one planned"
    # The test's own measure (from the API, the pool's running pods) agrees with the plan's, and fell.
    assert abs(after - reached["resourceMix"]["deviationBefore"]) <= 0.01, "the test's measure is the plan's"
    assert after < before and m in where and not watch.added


def plugin(cluster: LocalCluster, *argv: str) -> str:
    """`kubectl nodemedic ARGV` with the admin's kubeconfig, for the remediators' namespace: its output (exit 0)."""
    done = subprocess.run([sys.executable, "-m", "remediator.kubectl.cli", "--kubeconfig", str(cluster.kubeconfig),
                           "-n", LANDING_NAMESPACE, *argv], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"kubectl nodemedic {' '.join(argv)}: exit {done.returncode}: {done.stderr}"
    return done.stdout


class MigrationWatch:
    """One Migration polled ten times a second in a thread: every change of its phase or of a step's state, with
    when; `react(states)` is called on each change (to change the cluster mid-plan)."""

    def __init__(self, objects: client.CustomObjectsApi, name: str, react: Callable[[list[str]], None]) -> None:
        self.objects, self.name, self.react = objects, name, react
        self.t0 = time.monotonic()
        self.timeline: list[str] = []
        self._seen: tuple[str, ...] = ()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError, ValueError, ApiException):
                status = self.objects.get_namespaced_custom_object(
                    "nodemedic.io", "v1alpha1", LANDING_NAMESPACE, "migrations", self.name).get("status") or {}
                states = [str(s.get("state")) for s in status.get("steps") or []]
                seen = (str(status.get("phase")), *states)
                if seen != self._seen:
                    self._seen = seen
                    self.timeline.append(f"{time.monotonic() - self.t0:6.1f}s  {seen[0]:<10} steps "
                                         f"{', '.join(states)}: {status.get('message', '')}")
                    self.react(states)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def proposed(objects: client.CustomObjectsApi, namespace: str) -> dict | None:
    """The Migration proposed for the pool's pods, once there is one."""
    for m in objects.list_namespaced_custom_object("nodemedic.io", "v1alpha1", LANDING_NAMESPACE,
                                                   "migrations")["items"]:
        steps = m["spec"]["steps"]
        if (m.get("status") or {}).get("phase") == "Proposed" and steps[0]["pod"].startswith(f"{namespace}/"):
            return m  # type: ignore[no-any-return]
    return None


def test_a_migration_is_approved_with_the_plugin_run_step_by_step_and_a_failed_step_undone(
    karpenter_cluster: LocalCluster, pools: list[Pool], processes: list, tmp_path: Path,
) -> None:
    """The balancing case with `approval: required`, twice from the same start: the plan is listed and approved
    with the plugin, then run one step at a time (each a move pinned to its node, done once its replacement runs
    there); the second time, M is cordoned while the first step is under way, so the second step cannot start and
    the first is moved back. The PDB of the small pods (made after the proposal, before the approval) holds."""
    processes.append(LandingPolicy(karpenter_cluster.api))
    for case in ("runs", "reverted"):
        migrate(karpenter_cluster, new_pool(karpenter_cluster, tmp_path, pools), processes, tmp_path, case)


def migrate(cluster: LocalCluster, pool: Pool, processes: list, tmp_path: Path, case: str) -> None:
    objects = client.CustomObjectsApi(cluster.api)
    c, m = pool.fragmented_start(prefer_m=True, pdb=False, slow=case == "reverted")
    watch = PoolWatch(pool.core, pool.namespace, {(pool.namespace, "small"): 1}).start()
    processes.append(watch)
    r = start_remediator(tmp_path, cluster.kubeconfig,
                         BALANCING.format(namespace=pool.namespace, approval="required", pool_label=POOL_LABEL),
                         name=f"remediator-{pool.namespace}", lease_namespace=LANDING_NAMESPACE,
                         extra=own_lease(pool.namespace))
    processes.append(r)
    plan = wait_until(lambda: proposed(objects, pool.namespace), timeout=90,
                      what=f"a migration proposed for {pool.namespace}")
    name = plan["metadata"]["name"]
    assert [(s["from"], s["to"]) for s in plan["spec"]["steps"]] == [(c, m), (c, m)], plan["spec"]
    assert not nodemedic_events(pool.core, pool.namespace, "NodemedicEvicted"), "nothing moves before approval"
    if case == "runs":  # bad input: a hand edit of the plan, a decision on a plan that is not there
        hand_edit = [{**step, "to": "some-other-node"} for step in plan["spec"]["steps"]]
        with pytest.raises(ApiException) as refused:
            objects.patch_namespaced_custom_object("nodemedic.io", "v1alpha1", LANDING_NAMESPACE, "migrations", name,
                                                   {"spec": {"steps": hand_edit}})
        print(f"\n--- a step's node edited by hand: {refused.value.status} "
              f"{json.loads(refused.value.body)['message'][:200]}")
        assert refused.value.status == 422
        unknown = subprocess.run([sys.executable, "-m", "remediator.kubectl.cli", "--kubeconfig",
                                  str(cluster.kubeconfig), "-n", LANDING_NAMESPACE, "approve", "migration-0badcafe"],
                                 capture_output=True, text=True, timeout=60, check=False)
        print(f"--- kubectl nodemedic approve migration-0badcafe: exit {unknown.returncode}: {unknown.stderr.strip()}")
        assert unknown.returncode == 2 and "no migration migration-0badcafe" in unknown.stderr
    pool.small_pdb()
    wait_until(lambda: pool.policy_api.read_namespaced_pod_disruption_budget(
        "small", pool.namespace).status.disruptions_allowed == 1, timeout=30, what="the PDB allowing one")
    print(f"\n--- {case}: kubectl nodemedic migrations\n{plugin(cluster, 'migrations')}")
    print(f"--- kubectl nodemedic migrations {name}\n{plugin(cluster, 'migrations', name)}")

    def cordon_m_mid_plan(states: list[str]) -> None:
        if case == "reverted" and states[:1] == ["Moving"]:
            pool.core.patch_node(m, {"spec": {"unschedulable": True}})
    follow = MigrationWatch(objects, name, cordon_m_mid_plan)
    processes.append(follow)
    print(f"--- kubectl nodemedic approve {name}\n{plugin(cluster, 'approve', name)}")

    def finished() -> dict | None:
        doc = objects.get_namespaced_custom_object("nodemedic.io", "v1alpha1", LANDING_NAMESPACE, "migrations", name)
        phase = (doc.get("status") or {}).get("phase")
        return doc if phase in ("Succeeded", "Reverted", "Failed", "Refused") else None  # type: ignore[no-any-return]
    final = wait_until(finished, timeout=150, what=f"migration {name} finished")
    follow.stop()
    r.stop()
    watch.stop()
    print("--- timeline (status after each step)\n" + "\n".join(follow.timeline))
    print(f"--- kubectl nodemedic migrations {name}\n{plugin(cluster, 'migrations', name)}")
    objects.delete_namespaced_custom_object("nodemedic.io", "v1alpha1", LANDING_NAMESPACE, "migrations", name)
    if case == "reverted":
        pool.core.patch_node(m, {"spec": {"unschedulable": False}})
    watch.assert_held(may_remove=set())
    states = [s["state"] for s in final["status"]["steps"]]
    where = {s: set(pool.placed(s, 1).values()) for s in SMALL}
    print(f"--- small pods: {where} (C {c}, M {m}); fewest serving small pods "
          f"{watch.fewest[(pool.namespace, 'small')]} (PDB minAvailable 1)")
    if case == "runs":
        assert (final["status"]["phase"], states) == ("Succeeded", ["Done", "Done"])
        assert where == {s: {m} for s in SMALL}, "each step's pod runs on its planned node"
    else:
        assert (final["status"]["phase"], states) == ("Reverted", ["Undone", "Failed"])
        assert f"node {m} is cordoned" in final["status"]["steps"][1]["message"]
        assert where == {s: {c} for s in SMALL}, "every pod back on its first node"
    landed = events_once(pool.core, pool.namespace, "NodemedicLanded", 2)  # counted before its Event is written
    evicted = events_once(pool.core, pool.namespace, "NodemedicEvicted", 2)
    assert len(landed) == len(evicted) == 2, [e.message for e in landed + evicted]  # two steps, or a step and its undo
    assert all(f"migration {name} step" in e.message for e in evicted), [e.message for e in evicted]
