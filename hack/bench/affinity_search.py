"""Benchmark: one node-fit search for a pod with a required inter-pod (anti-)affinity term whose answer is the same for
many nodes, over bench-plan's synthetic cluster (hack/bench/plan_cycle.py: 30 pods a node, three zones).

A term keyed on the zone asks about a domain of a third of the cluster's pods. Node fit asks it of every node it
tries; before the search kept one answer per zone (`PodAffinityIndex.conflict_for`), each node scanned its zone's
pods again: at 5,000 nodes one search took 240 to 245 s of CPU for a term matching no pod (the scan never stops early),
and a search like it runs for each move the plan tries. Three pods, each searched once over every node:
- zone anti-affinity to a label no pod carries (every node fits: the scan of each zone runs to its end);
- zone affinity to a label no pod carries (no node fits: each zone scanned, then the first-of-its-group rule);
- hostname affinity to a label only the pod itself carries (the first of its group, which may go anywhere): each
  node its own domain, then the first-of-its-group rule, which scans every pod of the cluster and does not depend on
  the node (now asked once a search, where it was asked for every node).
Prints each search's CPU time, its result and the CPU per node tried. kube-scheduler works the same answers out once
per pod in its PreFilter (counts per domain), then looks each node up: the per-node figure is the one to compare.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from hack.bench.plan_cycle import build
from remediator.model.records import HOSTNAME_LABEL, LabelSelector, PodAffinityTerm, PodRecord
from remediator.scheduling.nodefit import find_destination, pod_request_summary
from remediator.scheduling.podaffinity import PodAffinityIndex
from remediator.state.snapshot import Snapshot

ZONE = "topology.kubernetes.io/zone"


def _term(topology_key: str, namespace: str) -> PodAffinityTerm:
    """A term over `topology_key` selecting a label no pod of the cluster carries (but a mover may)."""
    return PodAffinityTerm(LabelSelector(match_labels=(("app", "none-such"),)), (namespace,), False, topology_key)


def _searched(label: str, snapshot: Snapshot, pod: PodRecord) -> None:
    # What a cycle works out once for all its searches: the index with its zone domains, each node's requests.
    index = PodAffinityIndex(snapshot)
    index.conflict(pod, next(iter(snapshot.nodes.values())))
    requested = {n: pod_request_summary(pods) for n, pods in snapshot.pods_by_node.items()}
    start = time.process_time()
    result = find_destination(pod, snapshot, exclude=set(), pod_affinity=index, requested=requested)
    cpu = time.process_time() - start
    print(f"  {label:<52} {cpu:9.3f} s CPU ({cpu / len(snapshot.nodes) * 1e6:8.1f} us a node): {result.reason[:70]}",
          flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="1000,5000", help="cluster sizes, comma-separated (30 pods a node)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    for n in (int(x) for x in args.nodes.split(",")):
        snapshot = build(n, n * 30, args.seed)
        pod = next(p for ps in snapshot.pods_by_node.values() for p in ps
                   if p.phase == "Running" and not p.requests.get("nvidia.com/gpu") and not p.tolerations)
        ns = pod.namespace
        print(f"cluster: {n} nodes, {sum(len(ps) for ps in snapshot.pods_by_node.values())} pods", flush=True)
        _searched("zone anti-affinity matching no pod", snapshot,
                  dataclasses.replace(pod, required_anti_affinity=(_term(ZONE, ns),)))
        _searched("zone affinity matching no pod", snapshot,
                  dataclasses.replace(pod, required_affinity=(_term(ZONE, ns),)))
        _searched("hostname affinity, the first of its group", snapshot,
                  dataclasses.replace(pod, labels={**pod.labels, "app": "none-such"},
                                      required_affinity=(_term(HOSTNAME_LABEL, ns),)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
