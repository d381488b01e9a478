"""One run of the stream benchmark on a NodePool and namespace of its own: the plan's events played on the clock,
and what happened to the pool's nodes and the workload's pods sampled every POLL seconds in a thread.

The events are played in real time: simulated hour h happens `h * hour_seconds` seconds after the run starts. A
Deployment's pods select the run's NodePool; each Deployment has a PDB of maxUnavailable 1. The sampler records each
node of the pool from its creation to the first sample it is gone, each pod's creation and binding (the API server's
own timestamps: PodScheduled's transition), and feeds stream_plan.DisruptionBook the pods that serve.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hack.bench.lib.stream_plan import DisruptionBook, Kind, Plan
from hack.kcp import karpenter
from hack.kcp.api import Api, ApiError
from remediator.model.savings import Ledger

POLL = 1.0  # seconds between samples: the machine has 2 cores, and every sample lists the pool's nodes and pods
LABEL = "stream.nodemedic.io/deployment"

Say = Callable[[str], None]


@dataclass
class Sampled:
    """What the sampler saw, in wall-clock seconds (the API server's timestamps are wall-clock too)."""

    added: dict[str, float] = field(default_factory=dict)  # node -> creationTimestamp
    removed: dict[str, float] = field(default_factory=dict)  # node -> first sample it was gone
    peak_nodes: int = 0
    created: dict[str, float] = field(default_factory=dict)  # pod -> creationTimestamp
    bound: dict[str, float] = field(default_factory=dict)  # pod -> PodScheduled=True transition
    last_seen: dict[str, float] = field(default_factory=dict)  # pod -> last sample it existed
    errors: list[str] = field(default_factory=list)

    def pending_seconds(self, end: float) -> list[float]:
        """Per pod, creation -> bound; a pod never bound counts until it was last seen (or `end`)."""
        return [max(0.0, self.bound.get(p, min(self.last_seen.get(p, end), end)) - t) for p, t in self.created.items()]


@dataclass
class RunResult:
    label: str
    start: float
    end: float
    sampled: Sampled
    book: DisruptionBook
    evicted_nodemedic: int = 0
    evicted_karpenter: int = 0  # pods Karpenter evicted (its Evicted Events, one per pod)
    deleted_karpenter: int = 0  # pods Karpenter deleted past their PDB (its Disrupted Events)
    nodes_consolidated: int = 0  # the pool's nodes Karpenter disrupted (DisruptionTerminating Events)
    lag: float = 0.0  # the most an event was played late, seconds
    ledger: Ledger | None = None  # the remediator's savings ledger after the run (with nodemedic only)


def parse_time(text: str) -> float:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Sampler:
    def __init__(self, api: Api, *, namespace: str, pool: str, book: DisruptionBook, wanted: dict[str, int],
                 lock: threading.Lock) -> None:
        self.api, self.namespace, self.pool = api, namespace, pool
        self.book, self.wanted, self.lock = book, wanted, lock
        self.seen = Sampled()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        while not self._stop.wait(POLL):
            try:
                self.sample()
            except (ApiError, OSError, KeyError, ValueError) as e:
                self.seen.errors.append(str(e))

    def sample(self) -> None:
        now = time.time()
        nodes = self.api.get(f"/api/v1/nodes?labelSelector={karpenter.NODEPOOL_LABEL}%3D{self.pool}")["items"]
        listed = {n["metadata"]["name"]: n for n in nodes}
        s = self.seen
        for name, n in listed.items():
            s.added.setdefault(name, parse_time(n["metadata"]["creationTimestamp"]))
        for name in set(s.added) - set(listed) - set(s.removed):
            s.removed[name] = now
        s.peak_nodes = max(s.peak_nodes, len(listed))
        live = {name for name, n in listed.items() if not n["metadata"].get("deletionTimestamp")}
        serving: dict[str, set[str]] = {}
        existing: dict[str, set[str]] = {}
        for p in self.api.get(f"/api/v1/namespaces/{self.namespace}/pods")["items"]:
            meta, status = p["metadata"], p.get("status") or {}
            name, owner = meta["name"], (meta.get("labels") or {}).get(LABEL)
            if owner is None:
                continue
            s.created.setdefault(name, parse_time(meta["creationTimestamp"]))
            s.last_seen[name] = now
            conditions = {c["type"]: c for c in status.get("conditions") or []}
            scheduled = conditions.get("PodScheduled")
            if scheduled and scheduled["status"] == "True" and name not in s.bound:
                s.bound[name] = parse_time(scheduled["lastTransitionTime"])
            if meta.get("deletionTimestamp"):
                continue
            existing.setdefault(owner, set()).add(name)
            ready = conditions.get("Ready", {}).get("status") == "True"
            if status.get("phase") == "Running" and ready and p["spec"].get("nodeName") in live:
                serving.setdefault(owner, set()).add(name)
        with self.lock:
            self.book.sample(serving, existing, dict(self.wanted))


def deployment(name: str, pool: str, replicas: int, cpu_m: int, memory_mi: int) -> dict[str, Any]:
    labels = {LABEL: name}
    return {"metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {
            "nodeSelector": {karpenter.NODEPOOL_LABEL: pool}, "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "app", "image": "registry.invalid/app:1", "resources": {
                "requests": {"cpu": f"{cpu_m}m", "memory": f"{memory_mi}Mi"}}}]}}}}


class Player:
    """Makes the plan's events happen on the API server; tells the book which removals are the stream's own."""

    def __init__(self, api: Api, plan: Plan, *, namespace: str, pool: str, book: DisruptionBook,
                 wanted: dict[str, int], lock: threading.Lock) -> None:
        self.api, self.plan, self.namespace, self.pool = api, plan, namespace, pool
        self.book, self.wanted, self.lock = book, wanted, lock
        self.shapes = plan.by_name()

    def play(self, start: float, hour_seconds: float, say: Say) -> float:
        """Every event at its time (wall clock from `start`); returns the most an event was late."""
        apps = f"/apis/apps/v1/namespaces/{self.namespace}/deployments"
        pdbs = f"/apis/policy/v1/namespaces/{self.namespace}/poddisruptionbudgets"
        lag, next_hour = 0.0, 1
        for e in self.plan.events:
            due = start + e.at_h * hour_seconds
            while time.time() < due:
                time.sleep(min(0.2, due - time.time()))
            lag = max(lag, time.time() - due)
            while e.at_h >= next_hour:
                with self.lock:
                    running = sum(self.wanted.values())
                say(f"    hour {next_hour:>2}: {len(self.wanted)} Deployments, {running} replicas asked")
                next_hour += 1
            d = self.shapes[e.deployment]
            if e.kind is Kind.CREATE:
                self.api.post(apps, deployment(d.name, self.pool, e.replicas, d.cpu_m, d.memory_mi))
                self.api.post(pdbs, {"metadata": {"name": d.name}, "spec": {
                    "maxUnavailable": 1, "selector": {"matchLabels": {LABEL: d.name}}}})
            elif e.kind is Kind.SCALE:
                with self.lock:
                    self.book.expect(d.name, self.wanted[d.name] - e.replicas)
                self.api.request("PATCH", f"{apps}/{d.name}", {"spec": {"replicas": e.replicas}},
                                 content_type="application/merge-patch+json")
            else:
                with self.lock:
                    self.book.retire(d.name)
                self.api.request("DELETE", f"{apps}/{d.name}", {"propagationPolicy": "Background"})
                self.api.request("DELETE", f"{pdbs}/{d.name}")
            with self.lock:
                if e.kind is Kind.DELETE:
                    self.wanted.pop(d.name, None)
                else:
                    self.wanted[d.name] = e.replicas
        return lag


def count_events(api: Api, namespace: str, reason: str) -> int:
    """Distinct objects an Event of `reason` in `namespace` was about (a recorder dedupes and counts repeats)."""
    items = api.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=reason%3D{reason}")["items"]
    return len({e["involvedObject"].get("uid") or e["involvedObject"]["name"] for e in items})


def consolidated(api: Api, nodes: set[str]) -> int:
    """Of `nodes`, those Karpenter disrupted (consolidation: empty or underutilized), from its Node Events."""
    items = api.get("/api/v1/events?fieldSelector=reason%3DDisruptionTerminating")["items"]
    return len({e["involvedObject"]["name"] for e in items
                if e["involvedObject"].get("kind") == "Node" and e["involvedObject"]["name"] in nodes})


def run(api: Api, plan: Plan, *, label: str, namespace: str, pool: karpenter.NodePool, hours: int,
        hour_seconds: float, say: Say, before_stream: Callable[[], None] = lambda: None) -> RunResult:
    """The namespace and NodePool, then the day; the namespace and pool are left for the caller to delete (after it
    stops whatever acts on them)."""
    api.post("/api/v1/namespaces", {"metadata": {"name": namespace}})
    deadline = time.monotonic() + 30
    while True:
        try:
            api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default")
            break
        except ApiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    karpenter.apply_node_pools(api, (pool,))
    before_stream()
    book, lock = DisruptionBook(), threading.Lock()
    wanted: dict[str, int] = {}
    player = Player(api, plan, namespace=namespace, pool=pool.name, book=book, wanted=wanted, lock=lock)
    with Sampler(api, namespace=namespace, pool=pool.name, book=book, wanted=wanted, lock=lock) as sampler:
        start = time.time()
        lag = player.play(start, hour_seconds, say)
        end = start + hours * hour_seconds
        while time.time() < end:
            time.sleep(min(0.5, end - time.time()))
    result = RunResult(label=label, start=start, end=end, sampled=sampler.seen, book=book, lag=lag)
    result.evicted_nodemedic = count_events(api, namespace, "NodemedicEvicted")
    result.evicted_karpenter = count_events(api, namespace, "Evicted")
    result.deleted_karpenter = count_events(api, namespace, "Disrupted")
    result.nodes_consolidated = consolidated(api, set(sampler.seen.added))
    return result
