"""The README's first command (`make demo`): nodemedic's whole chain on a real local control plane and a real node
autoscaler.

1. starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok with no static node, and Karpenter
   (its kwok cloud provider) with a NodePool: every node of the demo is a NodeClaim Karpenter makes;
2. starts `nodemedic-remediator run` with the shipped default policy (deploy/policy/default.yaml) and demo-sized
   timers; its `autoscaler: {addsNodes: auto}` finds Karpenter by itself;
3. deploys 4 pods of 1500m with a PDB (minAvailable 3): Karpenter makes two 4-CPU nodes for them;
4. starts `nodemedic-agent run` playing the node with the most pods, on a fixture host root whose `/dev/kmsg` is a
   file, and appends a hung-task kernel line to it. Then: the agent sets `KernelDeadlock=True`, the remediator taints
   the node and evicts its pods (one at a time, as the PDB allows), Karpenter adds a node for them and removes the
   emptied one;
5. prints a summary table (what happened, seconds per step) and tears everything down.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml  # the demo runs under the project's venv (`make demo`)

from hack.kcp import build, chain, controlplane, karpenter

ROOT = Path(__file__).resolve().parents[1]

NS = "demo"
POOL = "demo"


def say(msg: str) -> None:
    print(msg if msg.startswith(" ") else f"==> {msg}", flush=True)


def demo_policy() -> str:
    """The shipped default policy with demo-sized timers; the node autoscaler is left for the remediator to find."""
    doc = yaml.safe_load((ROOT / "deploy" / "policy" / "default.yaml").read_text())
    for rule in doc.get("rules", []):
        rule.setdefault("condition", {})["for"] = "2s"
    doc.setdefault("limits", {})["ownerCooldown"] = "0s"
    doc.setdefault("evictor", {})["namespaces"] = {"include": [NS]}
    doc["eviction"] = {"initialBackoff": "200ms", "maxBackoff": "1s"}  # retry the PDB's 429s briskly
    return yaml.safe_dump(doc, sort_keys=False)


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m hack.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (hack/cluster down --name demo)")
    args = ap.parse_args()
    missing = build.missing(build.DEMO)
    if missing:
        print(f"control plane not built ({', '.join(missing)}): run `hack/cluster build --demo`", file=sys.stderr)
        return 2
    cluster = controlplane.Cluster.named("demo")
    if cluster.load() and cluster.running():
        cluster.down()
    t0 = time.monotonic()
    remediator = None
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-demo-"))
    try:
        say("starting a local control plane (no static node) and Karpenter with its kwok cloud provider")
        cluster.up(0)
        karpenter.start(cluster, karpenter.Options(node_pools=()))
        up = time.monotonic() - t0
        say(f"    up in {up:.1f}s; Karpenter log: {cluster.log_dir / 'karpenter.log'}")

        say("starting nodemedic-remediator: shipped default policy, rule `for` 2s, autoscaler.addsNodes: auto")
        (tmp / "policy.yaml").write_text(demo_policy())
        subprocess.run([sys.executable, "-m", "remediator", "validate", "--policy", str(tmp / "policy.yaml")],
                       check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        remediator = chain.start_remediator(cluster, demo_policy(), tmp)

        result = chain.run(cluster, mode="kernel", namespace=NS, pool=POOL, workdir=tmp, say=say)
        summary(result, up, detected(tmp / "remediator.log"))
    finally:
        if remediator is not None:
            remediator.terminate()
            remediator.wait(15)
        if args.keep:
            say("left running; stop it with: hack/cluster down --name demo")
        else:
            say("tearing down")
            for line in cluster.down():
                print(f"    {line}")
    return 0


def detected(log: Path) -> str:
    """What the remediator's log says it found: "karpenter (the API serves ...)", or "-"."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("msg") == "node autoscaler detected":
            found.append(f"{event.get('autoscaler')} ({event.get('evidence')})")
    return ", ".join(found) or "-"


def summary(r: chain.RunResult, up: float, autoscaler: str) -> None:
    print("\nsummary")
    print(f"  {'step':<52} {'seconds':>8}")
    print(f"  {'control plane and Karpenter up':<52} {up:>8.2f}")
    for name, secs in r.steps:
        print(f"  {name:<52} {secs:>8.2f}")
    print(f"  {'kernel line -> node removed':<52} {r.total:>8.2f}")
    print()
    print(f"  {'node autoscaler':<30} {autoscaler} (found by the remediator)")
    print(f"  {'detected':<30} 1 node: {r.node} (KernelDeadlock)")
    print(f"  {'tainted':<30} 1 node: {chain.KERNEL_TAINT}:NoSchedule")
    print(f"  {'evicted':<30} {r.evicted} pods (Eviction API; NodemedicEvicted Events)")
    print(f"  {'replacement node added':<30} {', '.join(r.added) or '-'} (Karpenter)")
    print(f"  {'node removed':<30} {', '.join(r.removed) or '-'} (Karpenter)")
    print(f"  {'PDB minAvailable ' + str(r.min_available):<30} fewest serving pods {r.fewest_serving}: "
          f"{'held' if not r.pdb_violated else 'VIOLATED'}")
    if r.unexpected_removals:
        print(f"  UNEXPECTED node removals: {r.unexpected_removals}")


if __name__ == "__main__":
    sys.exit(main())
