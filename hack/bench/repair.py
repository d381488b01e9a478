"""Benchmark: nodemedic's repair ladders against what Kubernetes and Karpenter do with the same fault, in one run.

1. The kubelet stopped on the real node (hack/kcp/realnode.py), until the node is Ready again.
   * nodemedic: the chart with the image, as tests/e2e/test_repair_real_node.py installs it (hack/bench/lib/
     real_node.py says why each piece is so), the remediator as a host process with a kubelet-unhealthy rule whose
     ladder is [restart kubelet 2m, person]. Timed from the kubelet's stop: KubeletUnhealthy=True, the taint, the
     restart asked, the agent's Done, Ready=True again, the condition False, the taint gone.
   * Kubernetes alone: the remediator stopped, the kubelet stopped again, `--window` seconds watched. The node goes
     Ready=Unknown after node-monitor-grace-period (40 s here) and nothing brings the kubelet back; the benchmark
     starts it itself afterwards.
   * Karpenter's node repair: not run. The real node is no Karpenter node, and its repair tolerates Ready=False or
     Unknown for 30 minutes (documented; the kwok provider built here, 10 minutes) before it deletes the NodeClaim:
     the figure is printed as documented, not measured.
2. A persistent condition on a Karpenter node (kwok provider), until a replacement node runs its pods
   (hack/bench/lib/replace.py): per run a NodePool (consolidation off) and a Deployment of 4 pods under a PDB
   (minAvailable 3), `KWOKUnhealthy=True` written on the busiest node and kept.
   * `nodemedic`: the remediator with a rule on that condition (taint, evict: true, RemovePodsViolatingNodeTaints)
     whose ladder is [replace 10m, person]: replace deletes the node's NodeClaim once it is drained.
   * `karpenter-repair`: Karpenter's node repair alone (feature gate NodeRepair, no nodemedic), which replaces a node
     whose KWOKUnhealthy has been True for 30 s.
Prints progress and each run as it ends, then one summary table: medians per series, the ratio nodemedic / Karpenter
for "condition -> pods Running elsewhere" and "condition -> old node gone". No pass/fail: figures only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hack.bench.chain import policy as chain_policy
from hack.bench.chain import wait_pool_gone
from hack.bench.lib import child, real_node, replace
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.report import machine
from hack.bench.lib.table import Column, table
from hack.bench.lib.timeline import Timeline, seconds
from hack.kcp import build, chain, controlplane, image, karpenter, nodes, realnode, versions
from hack.kcp.api import Api
from hack.kcp.measure import wait

REAL_CLUSTER = "bench-repair-real-node"
KARPENTER_CLUSTER = "bench-repair-karpenter"
KWOK_NODES = [nodes.node_name(i) for i in range(2)]
KUBELET_TAINT = "nodemedic.io/kubelet-unhealthy"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"
REPAIR_ANNOTATION = replace.REPAIR_ANNOTATION
ANSWER_CONDITION = "NodemedicRepair"  # nodemedic_common.repair_contract.ANSWER_CONDITION
GRACE_PERIOD_S = 40  # kube-controller-manager's --node-monitor-grace-period here (hack/kcp/controlplane.py)
KARPENTER_READY_TOLERATION_S = 30 * 60  # documented: karpenter.sh node auto repair; /work/shared/reference
KWOK_READY_TOLERATION_S = 10 * 60  # sigs.k8s.io/karpenter kwok/cloudprovider RepairPolicies, the build here
POLL = 0.2

# The e2e test's rule (tests/e2e/test_repair_real_node.py): short timers, the ladder [restart kubelet 2m, person].
REAL_NODE_POLICY = """\
apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kubelet-unhealthy
  condition: {type: KubeletUnhealthy, status: "True", for: 5s}
  taint: {key: nodemedic.io/kubelet-unhealthy, value: "true", effect: NoSchedule}
  evict: false
  recoverAfter: 5s
  repair:
  - {action: restart, service: kubelet, wait: 2m}
  - {action: person}
strategies:
- name: RemovePodsViolatingNodeTaints
limits: {ownerCooldown: 0s}
safety: {maxTaintedNodes: 3, maxTaintedNodesPercent: 100}
repair: {maxUnhealthyPercent: 100}
"""
REPLACE_LADDER = [{"action": "replace", "wait": "10m"}, {"action": "person"}]

# The moments of the real node's fault, in seconds since the kubelet was stopped.
UNHEALTHY = "KubeletUnhealthy=True (agent)"
TAINTED = f"taint {KUBELET_TAINT}"
ASKED = "restart asked (nodemedic.io/repair)"
DONE = f"agent: Done ({ANSWER_CONDITION})"
NOT_READY = "NotReady (Ready not True)"
UNREACHABLE = f"taint {UNREACHABLE_TAINT}"
READY = "Ready=True again"
CLEARED = "KubeletUnhealthy=False"
ENDED = "ladder ended (annotation gone)"
UNTAINTED = "taint removed"


@dataclass
class RealNodeResult:
    repaired: dict[str, float] = field(default_factory=dict)  # nodemedic acting
    answer: str = ""  # the agent's NodemedicRepair message
    not_ready_status: str = ""  # what Ready was while nodemedic repaired, if it ever was not True
    alone: dict[str, float] = field(default_factory=dict)  # Kubernetes alone
    alone_not_ready_status: str = ""  # what Ready was first seen as once it was not True
    alone_status: str = ""  # Ready's status at the end of the window
    window: float = 0.0
    by_hand: float | None = None  # the kubelet started by the benchmark -> Ready=True


def say(msg: str) -> None:
    print(msg, flush=True)


# --- 1. the real node -----------------------------------------------------------------------------------------------
def conditions(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in doc["status"].get("conditions") or []}


def status(doc: dict[str, Any], type_: str) -> str:
    c = conditions(doc).get(type_)
    return "absent" if c is None else str(c["status"])


def ladder(doc: dict[str, Any]) -> dict[str, Any] | None:
    text = (doc["metadata"].get("annotations") or {}).get(REPAIR_ANNOTATION)
    return None if text is None else dict(json.loads(text))


def repaired_by_nodemedic(cluster: controlplane.Cluster, api: Api, result: RealNodeResult) -> None:
    """The kubelet stopped with the remediator running: every moment until the ladder ends and the taint is gone."""
    wait(lambda: (doc := real_node.read_node(api, realnode.NAME)) and status(doc, "KubeletUnhealthy") == "False"
         and status(doc, "Ready") == "True", 120, "Ready and KubeletUnhealthy=False before the fault", poll=1.0)
    say(f"nodemedic: stopping the kubelet of {realnode.NAME}")
    timeline = Timeline()
    cluster.stop_component("kubelet")
    asked_id = ""
    while any(timeline.get(m) is None for m in (CLEARED, ENDED, UNTAINTED)):
        if timeline.elapsed() > 360:
            raise TimeoutError(f"nodemedic did not repair the kubelet in 360s; seen: {timeline.ordered()}")
        doc = real_node.read_node(api, realnode.NAME)
        ready, taints, state = status(doc, "Ready"), real_node.taint_keys(doc), ladder(doc)
        if timeline.mark(NOT_READY, ready != "True"):
            result.not_ready_status = result.not_ready_status or ready
        timeline.mark(UNHEALTHY, status(doc, "KubeletUnhealthy") == "True")
        timeline.mark(UNREACHABLE, UNREACHABLE_TAINT in taints)
        timeline.mark(TAINTED, KUBELET_TAINT in taints)
        if timeline.mark(ASKED, state is not None and state["action"] == "restart") and state and not asked_id:
            asked_id = state["id"]
        answer = conditions(doc).get(ANSWER_CONDITION)
        if asked_id and answer and answer["reason"] == "Done" and answer["message"].startswith(f"request {asked_id}"):
            timeline.mark(DONE, True)
            result.answer = result.answer or f"{answer['reason']}: {answer['message']}"
        # Ready again: after it was seen not True, or (a restart quicker than the grace period) after the restart.
        if timeline.get(NOT_READY) is not None or timeline.get(DONE) is not None:
            timeline.mark(READY, ready == "True")
        if timeline.get(DONE) is not None:
            timeline.mark(CLEARED, status(doc, "KubeletUnhealthy") == "False")
            timeline.mark(ENDED, state is None)
            timeline.mark(UNTAINTED, KUBELET_TAINT not in taints)
        time.sleep(POLL)
    result.repaired = dict(timeline.ordered())
    for what, t in timeline.ordered():
        say(f"  +{t:6.1f}s  {what}")
    say(f"  the agent's answer: {result.answer}")


def kubernetes_alone(cluster: controlplane.Cluster, api: Api, result: RealNodeResult, window: float) -> None:
    """The kubelet stopped with nothing of nodemedic acting, `window` seconds watched."""
    cluster.load()  # the kubelet the agent restarted is recorded in the state file
    say(f"Kubernetes alone: the remediator stopped; stopping the kubelet of {realnode.NAME} again, watching "
        f"{window:.0f}s")
    timeline = Timeline()
    cluster.stop_component("kubelet")
    ready = "True"
    while timeline.elapsed() < window:
        doc = real_node.read_node(api, realnode.NAME)
        ready = status(doc, "Ready")
        timeline.mark(UNHEALTHY, status(doc, "KubeletUnhealthy") == "True")
        if timeline.mark(NOT_READY, ready != "True"):
            result.alone_not_ready_status = result.alone_not_ready_status or ready
        timeline.mark(UNREACHABLE, UNREACHABLE_TAINT in real_node.taint_keys(doc))
        if timeline.get(NOT_READY) is not None:
            timeline.mark(READY, ready == "True")
        time.sleep(POLL * 5)
    result.alone, result.alone_status, result.window = dict(timeline.ordered()), ready, window
    for what, t in timeline.ordered():
        say(f"  +{t:6.1f}s  {what}")
    say(f"  +{window:6.1f}s  end of the window: Ready={ready}"
        f"{'' if READY in result.alone else ' (still NotReady: nothing restarts the kubelet)'}")
    cluster.load()
    t0 = time.monotonic()
    cluster.start_component("kubelet")
    wait(lambda: status(real_node.read_node(api, realnode.NAME), "Ready") == "True", 120,
         "the node Ready after the kubelet was started by hand", poll=POLL)
    result.by_hand = time.monotonic() - t0
    say(f"  the benchmark started the kubelet itself: Ready=True {result.by_hand:.1f}s later")


def real_node_half(args: argparse.Namespace, tmp: Path) -> RealNodeResult:
    reference = image.reference()  # the code as it is now: the image the real node imports as it starts
    cluster = clean_cluster(REAL_CLUSTER)
    result = RealNodeResult()
    remediator = None
    say(f"\n== 1. the kubelet stopped on the real node ({realnode.NAME}) ==")
    try:
        t0 = time.monotonic()
        cluster.up(len(KWOK_NODES), real_nodes=1, timeout=300)
        api = cluster.api()
        real_node.install(cluster, tmp, reference, KWOK_NODES)
        kubeconfig = real_node.service_account_kubeconfig(cluster, tmp / "remediator.kubeconfig")
        remediator = real_node.start_remediator(kubeconfig, REAL_NODE_POLICY, tmp, lease_namespace=real_node.NAMESPACE)
        say(f"cluster up with the real node, the chart installed (image {reference}), the remediator running as "
            f"the chart's ServiceAccount on the host: {time.monotonic() - t0:.0f}s")
        repaired_by_nodemedic(cluster, api, result)
        remediator.stop()
        remediator = None
        kubernetes_alone(cluster, api, result, args.window)
    finally:
        if remediator is not None:
            say(f"remediator log (last lines):\n{remediator.tail()}")
            remediator.stop()
        cluster.down()
        if left := realnode.traces():
            say(f"the real node left traces: {left}")
    return result


# --- 2. Karpenter nodes ---------------------------------------------------------------------------------------------
def replace_policy() -> str:
    """bench/chain.py's policy (the shipped one, `for: 2s`, the kwok-unhealthy rule: taint + evict) with the ladder
    [replace 10m, person] on the kwok-unhealthy rule; maxPerHour raised so that more runs than 6 an hour still
    replace (every run is its own NodePool, so maxConcurrent's pool of one node holds)."""
    doc = yaml.safe_load(chain_policy())
    rule = next(r for r in doc["rules"] if r["condition"]["type"] == chain.REPAIRABLE)
    rule["repair"] = REPLACE_LADDER
    doc["repair"] = {"maxPerHour": 1000}
    return yaml.safe_dump(doc, sort_keys=False)


def run_line(r: replace.ReplaceRun, label: str) -> str:
    moments = "  ".join(f"{what} {t:.1f}" for what, t in r.moments.items())
    return (f"{label}: {moments}  | evicted {r.evicted}, fewest serving {r.fewest_serving}/{r.replicas}"
            f"{'  PDB VIOLATED' if r.pdb_violated else ''}, taints {', '.join(r.taints) or 'none'}"
            f"{f', condition rewritten {r.rewrites}x' if r.rewrites else ''}")


def series(cluster: controlplane.Cluster, name: str, runs: int) -> list[replace.ReplaceRun]:
    out = []
    for i in range(runs):
        pool = f"{name}-{i}"
        r = replace.run(cluster, series=name, namespace=pool, pool=pool, say=say)
        out.append(r)
        say(run_line(r, f"{name:<16} run {i + 1}/{runs} (s after {chain.REPAIRABLE}=True)"))
        wait_pool_gone(cluster, pool)
    return out


def karpenter_half(args: argparse.Namespace, tmp: Path) -> dict[str, list[replace.ReplaceRun]]:
    cluster = clean_cluster(KARPENTER_CLUSTER)
    results: dict[str, list[replace.ReplaceRun]] = {}
    remediator = None
    say(f"\n== 2. {chain.REPAIRABLE}=True kept on a Karpenter node (Karpenter v{versions.KARPENTER}, kwok provider) ==")
    try:
        cluster.up(0)
        karpenter.start(cluster, karpenter.Options(node_pools=(), node_repair=False))
        remediator = chain.start_remediator(cluster, replace_policy(), tmp)
        say("series nodemedic: the remediator, rule kwok-unhealthy (for 2s, taint, evict: true), ladder "
            "[replace 10m, person]; Karpenter with NodeRepair off")
        results["nodemedic"] = series(cluster, "nodemedic", args.runs)
        child.stop(remediator)
        remediator = None
        karpenter.stop(cluster)
        karpenter.start(cluster, karpenter.Options(node_pools=(), node_repair=True))
        say("series karpenter-repair: Karpenter with NodeRepair on, no nodemedic")
        results["karpenter-repair"] = series(cluster, "karpenter-repair", args.runs)
    finally:
        if remediator is not None:
            child.stop(remediator)
        cluster.down()
    return results


# --- the summary ----------------------------------------------------------------------------------------------------
def median_at(runs: Sequence[replace.ReplaceRun], moment: str) -> float | None:
    """The median over the runs that saw `moment` (None if none did)."""
    seen = [t for r in runs if (t := r.at(moment)) is not None]
    return statistics.median(seen) if seen else None


def median_cell(runs: Sequence[replace.ReplaceRun], moment: str) -> str:
    value = median_at(runs, moment)
    count = sum(r.at(moment) is not None for r in runs)
    if value is None:
        return "-"
    return seconds(value) + ("" if count == len(runs) else f" ({count} of {len(runs)} runs)")


RATIOED = (replace.ELSEWHERE, replace.GONE)  # the rows the nodemedic / Karpenter ratio is printed for
REPLACE_ROWS = (replace.TAINTED, replace.FIRST_LEFT, replace.ADDED, replace.REPLACE_ASKED, replace.CLAIM_DELETED,
                replace.ELSEWHERE, replace.GONE)


def real_node_rows(r: RealNodeResult) -> list[tuple[str, str, str, str, str]]:
    """One row per moment of the real node's fault: nodemedic's run, Kubernetes alone, Karpenter's documented
    figure where it has one."""
    rows = [("kubelet stopped on the real node -> ...", "", "", "", "")]
    for moment in (UNHEALTHY, TAINTED, ASKED, DONE, NOT_READY, UNREACHABLE, READY, CLEARED, UNTAINTED):
        ours = seconds(r.repaired.get(moment), missing="never" if moment in (NOT_READY, UNREACHABLE) else "-")
        alone = seconds(r.alone.get(moment), missing="never" if moment in (NOT_READY, UNREACHABLE) else "-")
        theirs = "-"
        if moment == NOT_READY:
            ours += f" (Ready={r.not_ready_status})" if moment in r.repaired else ""
            alone += f" (Ready={r.alone_not_ready_status})" if moment in r.alone else ""
        if moment == READY:
            alone = seconds(r.alone.get(READY), missing=f"not in {r.window:.0f} s")
            theirs = f">= {KARPENTER_READY_TOLERATION_S} s, documented *"
        rows.append((f"  {moment}", ours, alone, theirs, ""))
    return rows


def karpenter_rows(results: dict[str, list[replace.ReplaceRun]]) -> list[tuple[str, str, str, str, str]]:
    ours, theirs = results.get("nodemedic", []), results.get("karpenter-repair", [])
    rows = [(f"{chain.REPAIRABLE}=True kept on a Karpenter node -> ... (median of {max(len(ours), len(theirs))})",
             "", "", "", "")]
    for moment in REPLACE_ROWS:
        label = moment if moment != replace.TAINTED else "node tainted (nodemedic's / karpenter.sh/disrupted)"
        n, k = median_at(ours, moment), median_at(theirs, moment)
        shown = format_ratio(ratio(n, k)) if moment in RATIOED and n is not None and k is not None else ""
        rows.append((f"  {label}", median_cell(ours, moment) if ours else "-", "-",
                     median_cell(theirs, moment) if theirs else "-", shown))
    return rows


def summary(real: RealNodeResult | None, replaced: dict[str, list[replace.ReplaceRun]] | None) -> list[str]:
    rows: list[tuple[str, str, str, str, str]] = []
    if real is not None:
        rows += real_node_rows(real)
    if replaced:
        rows += karpenter_rows(replaced)
    columns = (Column("seconds after the fault"), Column("nodemedic", ">"), Column("Kubernetes alone", ">"),
               Column("Karpenter repair", ">"), Column("nodemedic / Karpenter", ">"))
    return table(columns, rows, gap="  ")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="runs of each series on Karpenter nodes (default 3)")
    ap.add_argument("--window", type=float, default=180.0,
                    help="seconds the real node is watched with its kubelet stopped and nothing acting (default 180)")
    ap.add_argument("--skip-real-node", action="store_true", help="only the Karpenter half")
    ap.add_argument("--skip-karpenter", action="store_true", help="only the real node's half")
    args = ap.parse_args()
    wanted = set() if args.skip_karpenter else set(build.DEMO)
    if not args.skip_real_node:
        wanted |= set(build.COMPONENTS)
    if unbuilt(sorted(wanted)):
        return 2
    if not args.skip_real_node:
        if image.is_missing():
            print(f"the image for this code ({image.reference()}) is not built: run `hack/cluster build --only image`",
                  file=sys.stderr)
            return 2
        if realnode.LOCK.exists():
            print(f"the real node is taken: {realnode.LOCK} names the cluster at {realnode.LOCK.read_text().strip()}."
                  " One real node runs on a machine at a time; run this once that cluster is down (or with "
                  "--skip-real-node).", file=sys.stderr)
            return 2
    say(f"machine: {machine()}; Karpenter v{versions.KARPENTER}, Kubernetes v{versions.KUBERNETES}")
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-repair-"))
    for half in ("real-node", "karpenter"):
        (tmp / half).mkdir()
    real = None if args.skip_real_node else real_node_half(args, tmp / "real-node")
    replaced = None if args.skip_karpenter else karpenter_half(args, tmp / "karpenter")
    halves = ([] if real is None else ["one run of the real node's fault"]) + \
        ([] if replaced is None else [f"{args.runs} runs of each series on Karpenter nodes"])
    say(f"\nsummary (machine: {machine()}; {', '.join(halves)}):")
    for line in summary(real, replaced):
        say(line)
    if real is not None:
        say(f"* Karpenter repair on the real node's fault: not run. Karpenter replaces a node whose Ready is False or "
            f"Unknown after a toleration its cloud provider sets: {KARPENTER_READY_TOLERATION_S // 60} min as "
            "documented (karpenter.sh node auto repair; pkg/controllers/node/health), "
            f"{KWOK_READY_TOLERATION_S // 60} min in the kwok provider of v{versions.KARPENTER}; the benchmark waits "
            "for neither (and the real node is no Karpenter node). The figure is the documented one, not measured.")
    say(f"per-run files and logs: {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
