"""nodemedic's whole chain on Karpenter's nodes, one run measured step by step: for `make demo` and hack/bench/chain.py.

A run: a Deployment with a PDB on a NodePool of its own (Karpenter makes the nodes), then a fault on the node with
the most pods, then wait until that node is gone, timing each step and watching, five times a second, how many pods
serve and which nodes come and go. Three ways to meet the same kind of fault:

* `kernel`: nodemedic's agent plays the node through a fixture host root; a hung-task line is appended to its
  `/dev/kmsg`; the agent sets KernelDeadlock, the remediator taints the node and evicts its pods, Karpenter adds a
  node for them and removes the emptied one;
* `condition`: the condition Karpenter's kwok provider can repair (`KWOKUnhealthy=True`) is written on the node and
  nodemedic's remediator acts on it with the same kind of rule;
* `repair`: the same condition, with Karpenter's own node repair (feature gate NodeRepair) and no nodemedic.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.kcp import karpenter
from hack.kcp.api import Api, ApiError
from hack.kcp.controlplane import Cluster
from hack.kcp.measure import wait

ROOT = Path(__file__).resolve().parents[2]
HUNG = "INFO: task jbd2/sda1-8:412 blocked for more than 120 seconds."
REPAIRABLE = "KWOKUnhealthy"  # a condition Karpenter's kwok provider declares a repair policy for (30 s, then replace)
KERNEL_TAINT = "nodemedic.io/kernel-deadlock"  # the shipped policy's rule for KernelDeadlock
REPAIRABLE_TAINT = "nodemedic.io/kwok-unhealthy"  # the rule a caller adds for REPAIRABLE (mode condition)
APP = "web"
POLL = 0.1

Say = Callable[[str], None]


@dataclass(frozen=True)
class Workload:
    """Four 1500m pods fill two 4-CPU nodes: the sick node's pods fit nowhere else, so Karpenter must add a node."""

    replicas: int = 4
    cpu: str = "1500m"
    min_available: int = 3


@dataclass
class RunResult:
    mode: str
    node: str  # the node the fault was on
    steps: list[tuple[str, float]] = field(default_factory=list)  # (step, seconds since the step before)
    evicted: int = 0  # pods that left the node through the Eviction API (nodemedic's Events)
    added: list[str] = field(default_factory=list)  # nodes Karpenter added during the run
    removed: list[str] = field(default_factory=list)  # nodes that disappeared during the run
    fewest_serving: int = 0
    replicas: int = 0
    min_available: int = 0
    held: bool = False  # the PDB allowed no disruption and nodemedic kept every pod (and so the node) in place

    @property
    def total(self) -> float:
        return sum(s for _, s in self.steps)

    @property
    def disrupted_at_once(self) -> int:
        return self.replicas - self.fewest_serving

    @property
    def pdb_violated(self) -> bool:
        return self.fewest_serving < self.min_available

    @property
    def unexpected_removals(self) -> list[str]:
        return [n for n in self.removed if n != self.node]


class PoolWatch:
    """Samples the pool's live nodes and the app's serving pods in a thread (its own API connection)."""

    def __init__(self, api: Api, pool: str, namespace: str) -> None:
        self.api, self.pool, self.namespace = api, pool, namespace
        self.nodes = pool_nodes(api, pool)
        self.added: dict[str, float] = {}
        self.removed: dict[str, float] = {}
        self.fewest: int | None = None
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> PoolWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            try:
                existing = pool_nodes(self.api, self.pool, terminating=True)
                live = pool_nodes(self.api, self.pool)
                now = time.monotonic()
                for n in live - self.nodes:
                    self.added.setdefault(n, now)
                for n in self.nodes - live:
                    self.removed.setdefault(n, now)
                self.nodes = live
                count = len(serving(self.api, self.namespace, existing))
                self.fewest = count if self.fewest is None else min(self.fewest, count)
            except (ApiError, OSError) as e:
                self.errors.append(str(e))


def pool_nodes(api: Api, pool: str, *, terminating: bool = False) -> set[str]:
    """The pool's nodes; with `terminating`, also those being deleted (Karpenter marks a node deleted before it
    drains it: its pods still serve until they are evicted)."""
    items = api.get(f"/api/v1/nodes?labelSelector={karpenter.NODEPOOL_LABEL}%3D{pool}")["items"]
    return {n["metadata"]["name"] for n in items if terminating or not n["metadata"].get("deletionTimestamp")}


def serving(api: Api, namespace: str, nodes: set[str]) -> dict[str, str]:
    """pod -> node for the app's pods that serve: Running, Ready, not terminating, on one of `nodes` (a deleted kwok
    node's pods stay listed as Running until the pod garbage collector comes: they do not serve)."""
    out = {}
    for p in api.get(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{APP}")["items"]:
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions") or [])
        node = p["spec"].get("nodeName")
        if not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") == "Running" and ready \
                and node in nodes:
            out[p["metadata"]["name"]] = node
    return out


def node_exists(api: Api, node: str) -> bool:
    try:
        api.get(f"/api/v1/nodes/{node}")
    except ApiError as e:
        if e.status == 404:
            return False
        raise
    return True


def condition(api: Api, node: str, type_: str) -> dict[str, Any] | None:
    return next((c for c in api.get(f"/api/v1/nodes/{node}")["status"].get("conditions") or []
                 if c["type"] == type_), None)


def taint_keys(api: Api, node: str) -> set[str]:
    return {t["key"] for t in api.get(f"/api/v1/nodes/{node}")["spec"].get("taints") or []}


def set_condition(api: Api, node: str, type_: str, status: str, *, reason: str, message: str) -> None:
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    api.request("PATCH", f"/api/v1/nodes/{node}/status", {"status": {"conditions": [{
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": now, "lastTransitionTime": now}]}}, content_type="application/strategic-merge-patch+json")


def deploy(api: Api, namespace: str, pool: str, workload: Workload) -> None:
    """Namespace, the NodePool, the Deployment whose pods select it, and its PDB."""
    api.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    wait(lambda: _exists(api, f"/api/v1/namespaces/{namespace}/serviceaccounts/default"), 30,
         f"ServiceAccount {namespace}/default", poll=POLL)
    karpenter.apply_node_pools(api, (karpenter.NodePool(name=pool),))
    labels = {"app": APP}
    api.post(f"/apis/apps/v1/namespaces/{namespace}/deployments", {
        "metadata": {"name": APP}, "spec": {"replicas": workload.replicas, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {karpenter.NODEPOOL_LABEL: pool}, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": APP, "image": "registry.invalid/web:1",
                            "resources": {"requests": {"cpu": workload.cpu, "memory": "256Mi"}}}]}}}})
    api.post(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", {
        "metadata": {"name": APP},
        "spec": {"minAvailable": workload.min_available, "selector": {"matchLabels": labels}}})


def _exists(api: Api, path: str) -> bool:
    try:
        api.get(path)
        return True
    except ApiError:
        return False


def wait_serving(api: Api, namespace: str, pool: str, count: int, timeout: float = 120) -> dict[str, str]:
    def probe() -> dict[str, str] | None:
        pods = serving(api, namespace, pool_nodes(api, pool))
        return pods if len(pods) == count else None

    return wait(probe, timeout, f"{count} serving pods of {namespace}/{APP}", poll=POLL)


def cleanup(api: Api, namespace: str, pool: str) -> None:
    """The namespace and the NodePool go; Karpenter removes the pool's nodes."""
    for path in (f"/api/v1/namespaces/{namespace}", f"/apis/karpenter.sh/v1/nodepools/{pool}"):
        try:
            api.request("DELETE", path)
        except ApiError as e:
            if e.status != 404:
                raise


def python_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")


def start_remediator(cluster: Cluster, policy: str, workdir: Path, lease_namespace: str = "default",
                     extra: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    (workdir / "policy.yaml").write_text(policy)
    log = open(workdir / "remediator.log", "ab")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(
        [sys.executable, "-m", "remediator", "run", "--policy", str(workdir / "policy.yaml"),
         "--kubeconfig", str(cluster.kubeconfig), "--lease-namespace", lease_namespace, "--listen", "", *extra],
        stdout=log, stderr=subprocess.STDOUT, env=python_env())


def fixture_host(base: Path) -> Path:
    """A host root for the agent: /dev/kmsg is a regular file appended to; /proc/stat dates the boot."""
    root = base / "host"
    (root / "dev").mkdir(parents=True, exist_ok=True)
    (root / "proc").mkdir(exist_ok=True)
    (root / "dev" / "kmsg").write_text("")
    (root / "proc" / "stat").write_text(f"cpu  1 2 3 4\nbtime {int(time.time()) - 3600}\n")
    return root


def start_agent(cluster: Cluster, node: str, workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """The agent with only the shipped kernel monitor (the fixture host has no /proc or /sys for the rest)."""
    # The demo and the bench run under the project's venv: the agent's registry names every built-in check.
    from agent.checks import BUILTIN  # noqa: PLC0415 - the rest of hack/kcp runs without the venv

    root = fixture_host(workdir)
    checks = "\n".join(f"  {c}: {{enabled: false}}" for c in BUILTIN)
    config = workdir / "agent.yaml"
    config.write_text(f"apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\nchecks:\n{checks}\n"
                      f"systemLogMonitors: [{ROOT / 'agent' / 'defaults' / 'kernel-monitor.json'}]\n"
                      # It plays a kwok node from a fixture root: a repair ask must never reach this machine.
                      "repair: {enabled: false}\n")
    log = open(workdir / "agent.log", "ab")  # noqa: SIM115 - lives as long as the process
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent", "run", "--node-name", node, "--kubeconfig", str(cluster.kubeconfig),
         "--config", str(config), "--host-root", str(root), "--listen", ""],
        stdout=log, stderr=subprocess.STDOUT, env=python_env())
    return proc, root


def append_kmsg(root: Path, message: str) -> None:
    """One record in /dev/kmsg format: <prio>,<seq>,<usec since boot>,<flags>;<message>."""
    boot = int(root.joinpath("proc", "stat").read_text().split("btime ")[1])
    with open(root / "dev" / "kmsg", "a") as f:
        f.write(f"3,1,{int((time.time() - boot) * 1e6)},-;{message}\n")


def _hold(api: Api, namespace: str, node: str, *, pods: int, seconds: float, watch: PoolWatch) -> None:
    """Watch `seconds` long that the node keeps its pods and stays; RuntimeError the moment either is not so."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not node_exists(api, node) or node in watch.removed:
            raise RuntimeError(f"{node} was removed although its PDB allows no disruption")
        on_node = [n for n in serving(api, namespace, {node}).values() if n == node]
        if len(on_node) < pods:
            raise RuntimeError(f"a pod left {node} although its PDB allows no disruption")
        time.sleep(POLL)


def evictions(api: Api, namespace: str) -> int:
    return sum(1 for e in api.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3DNodemedicEvicted")[
        "items"])


def run(cluster: Cluster, *, mode: str, namespace: str, pool: str, workdir: Path, workload: Workload = Workload(),
        say: Say = lambda _: None, timeout: float = 240, hold: float = 90) -> RunResult:
    """One run (`mode` kernel, condition or repair) on a fresh pool; the remediator (modes kernel and condition) or
    Karpenter with NodeRepair (mode repair) must already be running. Cleans up the namespace and pool afterwards.
    With a PDB that allows no disruption, nodemedic's runs end after `hold` seconds of nothing leaving the node."""
    api = cluster.api()
    deploy(api, namespace, pool, workload)
    say(f"deployment {namespace}/{APP}: {workload.replicas} pods x {workload.cpu} on NodePool {pool}, "
        f"PDB minAvailable {workload.min_available}; Karpenter makes the nodes")
    placed = wait_serving(api, namespace, pool, workload.replicas)
    by_node: dict[str, int] = {}
    for n in placed.values():
        by_node[n] = by_node.get(n, 0) + 1
    for n, count in sorted(by_node.items()):
        say(f"    {n:<28} {count} pods  (NodeClaim of NodePool {pool})")
    sick = max(sorted(by_node), key=by_node.__getitem__)
    on_sick = by_node[sick]
    result = RunResult(mode=mode, node=sick, replicas=workload.replicas, min_available=workload.min_available)
    agent = None
    try:
        if mode == "kernel":
            agent, root = start_agent(cluster, sick, workdir)

            def first_report(proc: subprocess.Popen[bytes] = agent) -> dict[str, Any] | None:
                if proc.poll() is not None:
                    raise RuntimeError(f"the agent exited; its log:\n"
                                       f"{(workdir / 'agent.log').read_text(errors='replace')[-3000:]}")
                return condition(api, sick, "KernelDeadlock")

            wait(first_report, 30, "the agent's first report", poll=POLL)
            say(f"agent plays {sick}; appending to its /dev/kmsg: {HUNG!r}")
        with PoolWatch(cluster.api(), pool, namespace) as watch:
            last = t0 = time.monotonic()

            def step(name: str) -> None:
                nonlocal last
                now = time.monotonic()
                result.steps.append((name, now - last))
                say(f"    +{now - t0:6.2f}s  {name}")
                last = now

            if mode == "kernel":
                append_kmsg(root, HUNG)
                wait(lambda: (c := condition(api, sick, "KernelDeadlock")) and c["status"] == "True", 30,
                     "KernelDeadlock=True", poll=POLL)
                step("kernel line -> KernelDeadlock=True (agent)")
            else:
                set_condition(api, sick, REPAIRABLE, "True", reason="Injected", message="the benchmark's fault")
                step(f"{REPAIRABLE}=True written")
            if mode != "repair":
                taint = KERNEL_TAINT if mode == "kernel" else REPAIRABLE_TAINT
                wait(lambda: taint in taint_keys(api, sick), 60, f"nodemedic's taint {taint}", poll=POLL)
                step("condition -> tainted (remediator)")
                if workload.min_available >= workload.replicas:
                    _hold(api, namespace, sick, pods=on_sick, seconds=hold, watch=watch)
                    step(f"held {hold:g}s: no pod evicted, node kept (the PDB allows no disruption)")
                    result.held = True
                else:
                    wait(lambda: len([n for n in serving(api, namespace, watch.nodes | {sick}).values()
                                      if n == sick]) < on_sick, 60, "the first pod leaving", poll=POLL)
                    step("taint -> first eviction")
            if not result.held:
                wait(lambda: watch.added, timeout, "a replacement node from Karpenter", poll=POLL)
                step("-> replacement node added (Karpenter)")
                wait(lambda: (s := serving(api, namespace, watch.nodes)) and len(s) == workload.replicas
                     and sick not in s.values(), timeout, "every pod serving elsewhere", poll=POLL)
                step(f"-> all {workload.replicas} pods serving elsewhere")
                wait(lambda: not node_exists(api, sick), timeout, f"{sick} removed by Karpenter", poll=POLL)
                step("-> node removed (Karpenter)")
        if watch.errors:
            raise RuntimeError(f"watching the pool failed: {watch.errors[:3]}")
        result.added = sorted(watch.added)
        result.removed = sorted(watch.removed)
        result.fewest_serving = watch.fewest if watch.fewest is not None else 0
        result.evicted = evictions(api, namespace)
        final: dict[str, int] = {}
        for n in serving(api, namespace, pool_nodes(api, pool)).values():
            final[n] = final.get(n, 0) + 1
        say("nodes of the pool now:")
        for n, count in sorted(final.items()):
            say(f"    {n:<28} {count} pods{'  (added by Karpenter for the evicted pods)' if n in watch.added else ''}")
    finally:
        if agent is not None:
            agent.terminate()
            agent.wait(15)
        cleanup(api, namespace, pool)
    return result


def to_json(r: RunResult) -> dict[str, Any]:
    return {"mode": r.mode, "node": r.node, "held": r.held, "steps": r.steps, "total": r.total, "evicted": r.evicted,
            "added": r.added, "removed": r.removed, "fewest_serving": r.fewest_serving,
            "disrupted_at_once": r.disrupted_at_once, "pdb_violated": r.pdb_violated}


def dumps(results: list[RunResult]) -> str:
    return json.dumps([to_json(r) for r in results], indent=1)
