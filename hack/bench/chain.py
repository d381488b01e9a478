"""Benchmark: kernel line → node removed by the node autoscaler, step by step; side by side with Karpenter's own repair.

One local control plane with no static node and Karpenter (kwok provider, consolidation WhenEmpty after 5 s), then
`--runs` runs of each series, every run on a NodePool of its own with 4 pods of 1500m under a PDB (minAvailable 3):
* `kernel`    nodemedic's whole chain: a hung-task line in the agent's /dev/kmsg → KernelDeadlock → taint → evictions
              → Karpenter adds a node for the pods and removes the emptied one;
* `condition` the fault both can see: `KWOKUnhealthy=True` written on the node, nodemedic's remediator acting on it
              (the same kind of rule, taint + evict);
* `repair`    the same fault with Karpenter's node repair alone (feature gate NodeRepair, no nodemedic): it tolerates
              the condition 30 s, pre-spins a replacement, drains through PDBs for at most 45 s, then deletes.
Prints each run as it ends, then per step and in total: median and p95; pods disrupted at once; PDB violations.
`--strict-runs N` adds the same fault under a PDB that allows no disruption (minAvailable = replicas), for both:
nodemedic must keep every pod (and so the node) for 90 s; repair deletes the pods once its drain bound expires.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from hack.bench.lib import child
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.report import machine
from hack.bench.lib.stats import summarize
from hack.kcp import build, chain, controlplane, karpenter, versions

ROOT = Path(__file__).resolve().parents[2]


def policy() -> str:
    """The shipped default policy with the demo's timers and a rule for the kwok fault; its autoscaler section as
    shipped (addsNodes: auto: the remediator finds Karpenter itself)."""
    doc = yaml.safe_load((ROOT / "deploy" / "policy" / "default.yaml").read_text())
    for rule in doc.get("rules", []):
        rule.setdefault("condition", {})["for"] = "2s"
    doc["rules"].append({"name": "kwok-unhealthy", "condition": {"type": chain.REPAIRABLE, "status": "True",
                                                                 "for": "2s"},
                         "taint": {"key": chain.REPAIRABLE_TAINT, "value": "true", "effect": "NoSchedule"},
                         "evict": True, "recoverAfter": "10m"})
    doc.setdefault("limits", {})["ownerCooldown"] = "0s"
    doc["eviction"] = {"initialBackoff": "200ms", "maxBackoff": "1s"}
    doc["safety"] = {"maxTaintedNodes": 5}
    return yaml.safe_dump(doc, sort_keys=False)


USUAL = chain.Workload()  # 4 replicas, minAvailable 3: the PDB allows one disruption
STRICT = chain.Workload(min_available=4)  # the PDB allows none


def series(cluster: controlplane.Cluster, mode: str, runs: int, tmp: Path, *,
           workload: chain.Workload = USUAL, label: str = "") -> list[chain.RunResult]:
    out = []
    label = label or mode
    for i in range(runs):
        work = tmp / f"{label}-{i}"
        work.mkdir()
        r = chain.run(cluster, mode=mode, namespace=f"{label}-{i}", pool=f"{label}-{i}", workdir=work,
                      workload=workload)
        out.append(r)
        steps = "  ".join(f"{s:.1f}" for _, s in r.steps)
        ending = "node kept (held)" if r.held else f"fault -> node removed {r.total:6.1f}s"
        print(f"{label:<16} run {i + 1:>2}/{runs}: {ending}  steps [{steps}]  "
              f"evicted {r.evicted}  disrupted at once {r.disrupted_at_once}  fewest serving {r.fewest_serving}"
              f"{'  PDB VIOLATED' if r.pdb_violated else ''}"
              f"{'  UNEXPECTED removals ' + str(r.unexpected_removals) if r.unexpected_removals else ''}", flush=True)
        wait_pool_gone(cluster, f"{label}-{i}")
    return out


def wait_pool_gone(cluster: controlplane.Cluster, pool: str, timeout: float = 120) -> None:
    """Karpenter removes a deleted pool's nodes; the next run starts on a quiet cluster."""
    api = cluster.api()
    deadline = time.monotonic() + timeout
    while chain.pool_nodes(api, pool) and time.monotonic() < deadline:
        time.sleep(0.5)


def report(name: str, results: list[chain.RunResult]) -> None:
    print(f"\n{name}: {len(results)} runs")
    rows = [(step, summarize([r.steps[index][1] for r in results]))
            for index, (step, _) in enumerate(results[0].steps)]
    totals = [r.total for r in results if not r.held]
    if totals:
        rows.append(("fault -> node removed", summarize(totals)))
    for label, seconds in rows:
        print(f"  {label:<48} median {seconds.median:6.2f}s  p95 {seconds.p95:6.2f}s")
    print(f"  node kept, every pod in place (PDB allows no disruption): {sum(r.held for r in results)} runs")
    print(f"  pods disrupted at once (max over runs): {max(r.disrupted_at_once for r in results)} of "
          f"{results[0].replicas}; PDB violations: {sum(r.pdb_violated for r in results)} runs; "
          f"evicted through the Eviction API: {sum(r.evicted for r in results)} pods; "
          f"unexpected node removals: {sum(len(r.unexpected_removals) for r in results)}", flush=True)


def run_all(cluster: controlplane.Cluster, plans: list[tuple[str, str, chain.Workload]], args: argparse.Namespace,
            tmp: Path, results: dict[str, list[chain.RunResult]]) -> None:
    for mode, label, workload in plans:
        runs = args.strict_runs if workload is STRICT else args.runs
        results[label] = series(cluster, mode, runs, tmp, workload=workload, label=label)
        report(label, results[label])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--series", default="kernel,condition,repair")
    ap.add_argument("--strict-runs", type=int, default=0, help="runs of condition and repair under a PDB that "
                                                                "allows no disruption")
    args = ap.parse_args()
    if unbuilt(build.DEMO):
        return 2
    wanted = args.series.split(",")
    print(f"machine: {machine()}; Karpenter v{versions.KARPENTER} (kwok provider), NodePool consolidation "
          "WhenEmpty after 5s", flush=True)
    cluster = clean_cluster("bench-chain")
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-chain-"))
    results: dict[str, list[chain.RunResult]] = {}
    remediator = None
    try:
        cluster.up(0)
        nodemedic = [(m, m, USUAL) for m in ("kernel", "condition") if m in wanted]
        repair = [("repair", "repair", USUAL)] if "repair" in wanted else []
        if args.strict_runs:
            nodemedic.append(("condition", "condition-strict", STRICT))
            repair.append(("repair", "repair-strict", STRICT))
        if nodemedic:
            karpenter.start(cluster, karpenter.Options(node_pools=(), node_repair=False))
            remediator = chain.start_remediator(cluster, policy(), tmp)
            run_all(cluster, nodemedic, args, tmp, results)
            child.stop(remediator)
            remediator = None
            karpenter.stop(cluster)
        if repair:
            karpenter.start(cluster, karpenter.Options(node_pools=(), node_repair=True))
            run_all(cluster, repair, args, tmp, results)
    finally:
        if remediator is not None:
            child.stop(remediator)
        cluster.down()
    (tmp / "results.json").write_text(chain.dumps([r for rs in results.values() for r in rs]))
    print(f"\nper-run results: {tmp / 'results.json'}")
    if "condition" in results and "repair" in results:
        n = statistics.median(r.total for r in results["condition"])
        k = statistics.median(r.total for r in results["repair"])
        print(f"same fault ({chain.REPAIRABLE}=True), fault -> node removed, median: nodemedic {n:.1f}s, "
              f"Karpenter repair {k:.1f}s, ratio {format_ratio(ratio(n, k))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
