"""Benchmark: a day of workload changes on Karpenter's nodes, once with Karpenter alone, once with nodemedic's engines.

Issue 41 item 5. One local control plane with no static node and Karpenter (kwok provider), started once. A plan made
from `--seed` (hack/bench/lib/stream_plan.py): `--deployments` Deployments, with pod shapes, replicas, lifetimes and a
daily cycle drawn from Alibaba's GPU-cluster trace v2023 (hack/bench/lib/trace_figures.py says which figures and how
they were computed), each under a PDB of maxUnavailable 1; some already there at hour 0, the others arriving, scaled
with the cycle every hour, and leaving. A day is compressed: one simulated hour is `--hour-seconds` real seconds.

The same plan is played twice, each run on a NodePool and a namespace of its own with the same settings (kwok
instance type s-4x-amd64-linux: 4 CPUs / 16 GiB, consolidation WhenEmptyOrUnderutilized after
`--consolidate-after`, Karpenter's default budget of 10 % of the nodes, cpu limit 4 x `--max-nodes`):
* `Karpenter alone`: nothing else acts;
* `Karpenter + nodemedic`: the remediator runs as a host process with MakeRoomForPendingPods and BalanceResourceMix
  (approval: automatic for this run), landing: planned (the chart's admission policy installed), on this pool only.
Prints per run the node-hours (simulated: real node-seconds / hour-seconds), peak nodes, nodes added, the time pods
spent pending, evictions (nodemedic's and Karpenter's), nodes Karpenter consolidated and PDB violations, side by side
with the saving, and the article's figure to beat (17 % fewer node-hours). No pass/fail: figures only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
from pathlib import Path

from hack.bench.chain import wait_pool_gone
from hack.bench.lib import child, landing
from hack.bench.lib import stream_plan as sp
from hack.bench.lib import trace_figures as tf
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.report import machine
from hack.bench.lib.stream_run import RunResult, run
from hack.bench.lib.table import Column, table
from hack.kcp import build, chain, controlplane, karpenter, versions
from hack.kcp.api import Api, ApiError
from remediator.model.savings import Ledger, LedgerError, configmap_path, ledger_of, totals

CLUSTER = "bench-stream"
INSTANCE_TYPE = "s-4x-amd64-linux"  # 4 CPUs / 16 GiB: the trace's pods ask 1.5-4.5 GiB per core
ARTICLE = 17.0  # the article's figure to beat: percent fewer node-hours
ALONE, ENGINES = "Karpenter alone", "Karpenter + nodemedic"
REMEDIATOR_SETTLE = 5.0  # seconds the remediator must stay up after its start before the stream begins


def say(msg: str) -> None:
    print(msg, flush=True)


def policy(namespace: str, pool: str, *, balancing: bool = True) -> str:
    """The engines on the run's pool and namespace only (`balancing`: BalanceResourceMix too, as issue 41 asks; else
    the placement engine alone, to tell the two apart), every move made as planned and pinned to its node. The
    retry of MakeRoomForPendingPods is cut from 2 min to 20 s: a compressed day's pods do not wait 2 minutes."""
    balance = "- name: BalanceResourceMix\n  args: {approval: automatic}\n" if balancing else ""
    return f"""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
nodeSelector: {karpenter.NODEPOOL_LABEL}={pool}
strategies:
- name: MakeRoomForPendingPods
  args: {{maxEvictionsPerPod: 2, chainDepth: 1, retryAfter: 20s, approval: automatic}}
{balance}evictor: {{nodeFit: true, namespaces: {{include: [{namespace}]}}}}
limits: {{ownerCooldown: 0s}}
eviction: {{retryDeadline: 60s, initialBackoff: 200ms, maxBackoff: 1s, landing: planned, landingDeadline: 60s}}
"""


def node_pool(name: str, args: argparse.Namespace) -> karpenter.NodePool:
    return karpenter.NodePool(name=name, instance_types=(INSTANCE_TYPE,),
                              consolidation_policy="WhenEmptyOrUnderutilized",
                              consolidate_after=args.consolidate_after, budget_nodes="10%",
                              cpu_limit=str(4 * args.max_nodes))


def one_run(cluster: controlplane.Cluster, plan: sp.Plan, label: str, args: argparse.Namespace, tmp: Path
            ) -> RunResult:
    name = f"stream-{'engines' if label == ENGINES else 'alone'}-{args.seed}"
    api = cluster.api()
    remediator = None

    def start_engines() -> None:
        nonlocal remediator
        if label == ENGINES:
            work = tmp / name
            work.mkdir()
            text = policy(name, name, balancing=args.engines == "both")
            remediator = chain.start_remediator(cluster, text, work, lease_namespace=landing.NAMESPACE,
                                                extra=("--savings-ledger", ledger_name(name)))
            # A remediator that exits at once (a bad flag, a policy it refuses) would leave a run of Karpenter alone
            # printed as nodemedic's: fail instead, with its log.
            time.sleep(REMEDIATOR_SETTLE)
            if remediator.poll() is not None:
                log = (work / "remediator.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the remediator exited with {remediator.returncode} at start; its log:\n{log}")
            say(f"  the remediator runs (log {work / 'remediator.log'})")

    say(f"\n== {label}: NodePool and namespace {name} ==")
    t0 = time.monotonic()
    try:
        result = run(api, plan, label=label, namespace=name, pool=node_pool(name, args), hours=args.hours,
                     hour_seconds=args.hour_seconds, say=say, before_stream=start_engines)
        if remediator is not None:
            result.ledger = read_ledger(api, name)
    finally:
        if remediator is not None:
            child.stop(remediator)
        chain.cleanup(api, name, name)
    say(f"  {label}: {time.monotonic() - t0:.0f}s; {len(result.sampled.added)} nodes seen, peak "
        f"{result.sampled.peak_nodes}; sampling errors: {len(result.sampled.errors)}"
        f"{' (' + result.sampled.errors[0][:200] + ')' if result.sampled.errors else ''}")
    wait_pool_gone(cluster, name, timeout=180)
    return result


def ledger_name(run_name: str) -> str:
    return f"savings-{run_name}"[:63]


def read_ledger(api: Api, run_name: str) -> Ledger | None:
    """The remediator's savings ledger (remediator/model/savings.py) after its run; None when it cannot be read."""
    where = f"{landing.NAMESPACE}/{ledger_name(run_name)}"
    try:
        return ledger_of(api.get(configmap_path(landing.NAMESPACE, ledger_name(run_name))), where)
    except ApiError as e:
        if e.status == 404:
            return Ledger()  # nothing seated: never written
        say(f"  the savings ledger {where} could not be read: {e}")
    except LedgerError as e:
        say(f"  {e}")
    return None


def figures(r: RunResult, hour_seconds: float) -> dict[str, float]:
    s = r.sampled
    pods, total, p50, p95 = sp.summarize_pending(s.pending_seconds(r.end))
    counted = totals(r.ledger, dt.datetime.now(dt.UTC)) if r.ledger is not None else ()
    return {
        # nodemedic's own count (its savings ledger, in real hours): simulated like the measured node-hours
        "ledger_hours": sum(d.node_hours for d in counted) * 3600 / hour_seconds,
        "ledger_rooms": sum(d.seated for d in counted),
        "node_hours": sp.node_hours(s.added, s.removed, start=r.start, end=r.end, hour_seconds=hour_seconds),
        "peak": s.peak_nodes, "added": len(s.added), "pods": pods,
        "pending_hours": total / hour_seconds, "p50": p50, "p95": p95,
        "evicted_nodemedic": r.evicted_nodemedic, "evicted_karpenter": r.evicted_karpenter,
        "deleted_karpenter": r.deleted_karpenter, "consolidated": r.nodes_consolidated,
        "violations": r.book.violations, "disruptions": r.book.disruptions, "worst": r.book.worst, "lag": r.lag,
    }


ROWS: tuple[tuple[str, str, str], ...] = (  # (label, key, format)
    ("node-hours (simulated)", "node_hours", "{:.1f}"),
    ("peak nodes", "peak", "{:.0f}"),
    ("nodes added", "added", "{:.0f}"),
    ("pods created", "pods", "{:.0f}"),
    ("pod time pending, sum (simulated pod-hours)", "pending_hours", "{:.2f}"),
    ("pod time pending, p50 (real s)", "p50", "{:.1f}"),
    ("pod time pending, p95 (real s)", "p95", "{:.1f}"),
    ("pods evicted by nodemedic", "evicted_nodemedic", "{:.0f}"),
    ("pending pods seated without a new node (nodemedic's savings ledger)", "ledger_rooms", "{:.0f}"),
    ("node-hours those seats avoided (the ledger, simulated)", "ledger_hours", "{:.1f}"),
    ("pods evicted by Karpenter", "evicted_karpenter", "{:.0f}"),
    ("pods Karpenter deleted past their PDB", "deleted_karpenter", "{:.0f}"),
    ("nodes Karpenter consolidated", "consolidated", "{:.0f}"),
    ("pods lost without the stream asking", "disruptions", "{:.0f}"),
    ("PDB violations (must be 0)", "violations", "{:.0f}"),
    ("most disrupted at once in one Deployment", "worst", "{:.0f}"),
    ("most an event was played late (real s)", "lag", "{:.1f}"),
)


def summary(alone: dict[str, float], engines: dict[str, float]) -> list[str]:
    rows = [(label, fmt.format(alone[key]), fmt.format(engines[key]), format_ratio(ratio(engines[key], alone[key])))
            for label, key, fmt in ROWS]
    columns = (Column("per run"), Column(ALONE, ">"), Column(ENGINES, ">"), Column("nodemedic / alone", ">"))
    return table(columns, rows, gap="  ")


def saving(alone: dict[str, float], engines: dict[str, float]) -> float:
    """Percent fewer node-hours with nodemedic (negative: more)."""
    r = ratio(engines["node_hours"], alone["node_hours"])
    return 0.0 if r is None else 100 * (1 - r)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=int, default=24, help="simulated hours in the day (default 24)")
    ap.add_argument("--hour-seconds", type=float, default=20.0, help="real seconds per simulated hour (default 20)")
    ap.add_argument("--deployments", type=int, default=70, help="Deployments over the day (default 70)")
    ap.add_argument("--seed", type=int, default=41, help="the plan's seed, the same for both runs (default 41)")
    ap.add_argument("--max-nodes", type=int, default=30, help="the NodePools' limit, in 4-CPU nodes (default 30)")
    ap.add_argument("--engines", choices=("both", "placement"), default="both",
                    help="nodemedic's run: both engines (default, issue 41's stream) or the placement engine alone")
    ap.add_argument("--consolidate-after", default="10s",
                    help="Karpenter's consolidateAfter for both runs, real time (default 10s)")
    args = ap.parse_args()
    if unbuilt(build.DEMO):
        return 2
    plan = sp.plan(args.seed, hours=args.hours, deployments=args.deployments)
    pods, cpu, at = sp.peak_requested(plan)
    say(f"machine: {machine()}; Karpenter v{versions.KARPENTER} (kwok provider), Kubernetes v{versions.KUBERNETES}")
    say(f"stream: seed {args.seed}, {args.hours} simulated hours x {args.hour_seconds:g} real s (one simulated hour = "
        f"{args.hour_seconds:g} s; node-hours = real node-seconds / {args.hour_seconds:g}), {args.deployments} "
        f"Deployments, {len(plan.events)} events; at most {pods} pods / {cpu / 1000:.1f} CPUs asked (hour {at:.1f})")
    say(f"pools: {INSTANCE_TYPE} (4 CPUs / 16 GiB), consolidation WhenEmptyOrUnderutilized after "
        f"{args.consolidate_after}, budget 10 % of nodes, limit {args.max_nodes} nodes; the same for both runs")
    say("nodemedic's run: " + ("MakeRoomForPendingPods and BalanceResourceMix, both automatic" if args.engines == "both"
                               else "MakeRoomForPendingPods alone (automatic)"))
    for line in tf.describe():
        say(line)
    cluster = clean_cluster(CLUSTER)
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-stream-"))
    results: dict[str, RunResult] = {}
    t0 = time.monotonic()
    try:
        cluster.up(0)
        karpenter.start(cluster, karpenter.Options(node_pools=()))
        landing.install(cluster.api())
        say(f"cluster up, Karpenter and the landing policy ready: {time.monotonic() - t0:.0f}s")
        for label in (ALONE, ENGINES):
            results[label] = one_run(cluster, plan, label, args, tmp)
    finally:
        cluster.down()
    alone, engines = (figures(results[k], args.hour_seconds) for k in (ALONE, ENGINES))
    say(f"\nsummary (machine: {machine()}; seed {args.seed}; {args.hours} simulated hours of {args.hour_seconds:g} s; "
        f"{args.deployments} Deployments; trace: {tf.SOURCE}):")
    for line in summary(alone, engines):
        say(line)
    say(f"node-hours saved by nodemedic: {saving(alone, engines):.1f} % (the article's figure to beat: "
        f"{ARTICLE:.0f} %)")
    say(f"total {time.monotonic() - t0:.0f}s; remediator log and files: {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
