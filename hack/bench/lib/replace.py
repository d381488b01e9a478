"""One run of a persistent condition on a Karpenter node until the node is replaced, for the repair benchmark.

Built on hack/kcp/chain.py (its Deployment, PDB, pool watch, condition writer): a NodePool and a Deployment under a
PDB, then `KWOKUnhealthy=True` (chain.REPAIRABLE, a condition both nodemedic and Karpenter's kwok provider act on)
written on the node with the most pods and kept True, then a poll every 0.1 s until the old node is gone and every
pod runs elsewhere. Who acts is set up by the caller: nodemedic's remediator (a rule with a taint, evict: true and a
ladder [replace, person]) or Karpenter with NodeRepair alone. The NodePool's consolidation is off (`consolidateAfter:
Never`): the old node goes only by the repair being measured, never because Karpenter found it empty.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hack.bench.lib.timeline import Timeline
from hack.kcp import chain, karpenter
from hack.kcp.api import Api, ApiError
from hack.kcp.controlplane import Cluster

REPAIR_ANNOTATION = "nodemedic.io/repair"  # nodemedic_common.repair_contract.REPAIR_ANNOTATION
DISRUPTED_TAINT = "karpenter.sh/disrupted"  # Karpenter's, on a node it drains
WORKLOAD = chain.Workload()  # 4 pods x 1500m on two 4-CPU nodes, PDB minAvailable 3: one disruption at a time

# The moments of a run, in seconds since the condition was written.
TAINTED = "node tainted"
FIRST_LEFT = "first pod left the node"
ADDED = "replacement node added"
REPLACE_ASKED = "replace asked (nodemedic.io/repair)"
CLAIM_DELETED = "NodeClaim deleted"
ELSEWHERE = "all pods Running elsewhere"
GONE = "old node gone"

Say = Callable[[str], None]


@dataclass
class ReplaceRun:
    series: str
    node: str
    claim: str
    moments: dict[str, float] = field(default_factory=dict)
    taints: list[str] = field(default_factory=list)  # the taints the old node carried, in the order they came
    rewrites: int = 0  # times the condition had to be written True again
    fewest_serving: int = 0
    replicas: int = WORKLOAD.replicas
    min_available: int = WORKLOAD.min_available
    evicted: int = 0  # through the Eviction API (nodemedic's Events)

    def at(self, moment: str) -> float | None:
        return self.moments.get(moment)

    @property
    def pdb_violated(self) -> bool:
        return self.fewest_serving < self.min_available


def owning_claim(api: Api, node: str) -> str:
    doc = api.get(f"/api/v1/nodes/{node}")
    return next((o["name"] for o in doc["metadata"].get("ownerReferences") or [] if o.get("kind") == "NodeClaim"), "")


def _node(api: Api, name: str) -> dict[str, Any] | None:
    try:
        return dict(api.get(f"/api/v1/nodes/{name}"))
    except ApiError as e:
        if e.status == 404:
            return None
        raise


def _claim_deleted(api: Api, claim: str) -> bool:
    try:
        doc = api.get(f"{karpenter.NODECLAIMS}/{claim}")
    except ApiError as e:
        if e.status == 404:
            return True
        raise
    return bool(doc["metadata"].get("deletionTimestamp"))


def _asked_replace(doc: dict[str, Any]) -> bool:
    text = (doc["metadata"].get("annotations") or {}).get(REPAIR_ANNOTATION)
    return isinstance(text, str) and json.loads(text).get("action") == "replace"


def run(cluster: Cluster, *, series: str, namespace: str, pool: str, say: Say = lambda _: None,
        timeout: float = 300) -> ReplaceRun:
    """One run on a fresh pool (cleaned up afterwards, whatever happens)."""
    api = cluster.api()
    chain.deploy(api, namespace, pool, WORKLOAD)
    # Before any node exists: chain.deploy's pool consolidates empty nodes after 5 s; this one never does.
    karpenter.apply_node_pools(api, (karpenter.NodePool(name=pool, consolidate_after="Never"),))
    try:
        placed = chain.wait_serving(api, namespace, pool, WORKLOAD.replicas, timeout=180)
        by_node: dict[str, int] = {}
        for n in placed.values():
            by_node[n] = by_node.get(n, 0) + 1
        sick = max(sorted(by_node), key=by_node.__getitem__)
        on_sick = by_node[sick]
        result = ReplaceRun(series=series, node=sick, claim=owning_claim(api, sick))
        say(f"  {namespace}: {WORKLOAD.replicas} pods x {WORKLOAD.cpu} on {len(by_node)} nodes of NodePool {pool}, "
            f"PDB minAvailable {WORKLOAD.min_available}; {chain.REPAIRABLE}=True on {sick} ({on_sick} pods, "
            f"NodeClaim {result.claim})")
        with chain.PoolWatch(cluster.api(), pool, namespace) as watch:
            timeline = _watch(api, result, namespace=namespace, pool=pool, on_sick=on_sick, watch=watch,
                              timeout=timeout)
        if watch.errors:
            raise RuntimeError(f"watching the pool failed: {watch.errors[:3]}")
        result.moments = dict(timeline.ordered())
        result.fewest_serving = watch.fewest if watch.fewest is not None else 0
        result.evicted = chain.evictions(api, namespace)
        return result
    finally:
        chain.cleanup(api, namespace, pool)


def _watch(api: Api, result: ReplaceRun, *, namespace: str, pool: str, on_sick: int, watch: chain.PoolWatch,
           timeout: float) -> Timeline:
    sick = result.node
    timeline = Timeline()
    chain.set_condition(api, sick, chain.REPAIRABLE, "True", reason="Injected", message="the benchmark's fault")
    while not (timeline.get(GONE) is not None and timeline.get(ELSEWHERE) is not None):
        if timeline.elapsed() > timeout:
            seen = ", ".join(f"{k} {v:.1f}s" for k, v in timeline.ordered()) or "nothing"
            raise TimeoutError(f"{result.series}: {sick} not replaced within {timeout:g}s (seen: {seen})")
        doc = _node(api, sick)
        if doc is None:
            timeline.mark(GONE, True)
        else:
            fault = next((c for c in doc["status"].get("conditions") or [] if c["type"] == chain.REPAIRABLE), None)
            if fault is None or fault["status"] != "True":
                chain.set_condition(api, sick, chain.REPAIRABLE, "True", reason="Injected",
                                    message="the benchmark's fault")
                result.rewrites += 1
            keys = [t["key"] for t in doc["spec"].get("taints") or []]
            result.taints += [k for k in keys if k not in result.taints]
            timeline.mark(TAINTED, {chain.REPAIRABLE_TAINT, DISRUPTED_TAINT} & set(keys))
            timeline.mark(REPLACE_ASKED, _asked_replace(doc))
        if result.claim:
            timeline.mark(CLAIM_DELETED, _claim_deleted(api, result.claim))
        # The old node's pods serve until they leave it; once it is gone, those still listed on it do not.
        serving = chain.serving(api, namespace, chain.pool_nodes(api, pool) | ({sick} if doc is not None else set()))
        timeline.mark(FIRST_LEFT, sum(n == sick for n in serving.values()) < on_sick)
        timeline.mark(ADDED, bool(watch.added))
        timeline.mark(ELSEWHERE, len(serving) == result.replicas and sick not in serving.values())
        time.sleep(chain.POLL)
    return timeline
