"""Benchmark: warm `hack/cluster up --nodes N` (binaries cached) until every node is Ready, then `down`.

Prints one line per run with the step timings (seconds since start) and the summary.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time

from hack.bench.lib.cluster import unbuilt
from hack.bench.lib.stats import summarize
from hack.kcp import build, controlplane


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if unbuilt(build.BINARIES):
        return 2
    results = []
    for i in range(args.runs):
        c = controlplane.Cluster.named(f"bench-up-{i}")
        t0 = time.monotonic()
        c.up(args.nodes)
        took = time.monotonic() - t0
        t1 = time.monotonic()
        c.down()
        down = time.monotonic() - t1
        results.append(took)
        print(json.dumps({"run": i, "nodes": args.nodes, "up_seconds": round(took, 2),
                          "down_seconds": round(down, 2), "steps": c.timings}), flush=True)
    up = summarize(results)
    print(f"cluster up, {args.nodes} nodes Ready, warm cache: median {up.median:.1f}s "
          f"min {up.minimum:.1f}s max {up.maximum:.1f}s over {args.runs} runs "
          f"({platform.machine()}, {platform.node()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
