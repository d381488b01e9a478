"""Benchmark: the remediator's memory against a real API server, by cluster size, and the growth fitted to it.

For each size in --sizes (NODES:PODS), starts a local control plane with that many kwok nodes and fills it with the
cluster `make bench-descheduler` builds (hack/bench/cycle_vs_descheduler.py: the same workloads, spreads, affinities,
restarting and Failed pods), then runs `nodemedic-remediator run --dry-run` with the full policy (all ten
strategies), as the chart runs it but from this checkout, until --cycles planning cycles have run; reads its RSS
(VmRSS) and its peak (VmHWM: the initial LIST of every pod is the high-water mark) from /proc, and the API server's
RSS beside it. The sizes run one after the other, one cluster at a time.

Then fits peak = a + b * pods + c * nodes by least squares over the sizes (with two sizes, nodes ∝ pods: the fit is
peak = a + b * pods), prints each size's residual, and the memory limit each cluster size needs with 25 % headroom
over the fitted peak: the figures behind the chart's default and docs/deploy.md's sizing table.

Usage: .venv/bin/python -m hack.bench.remediator_memory [--sizes 500:15000,1000:30000] [--cycles 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from hack.bench.cycle_vs_descheduler import nodemedic_policy, plan_nodes, populate
from hack.bench.lib import child
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.report import note
from hack.bench.lib.table import Column, table
from hack.kcp import build, descheduler
from hack.kcp.measure import wait
from hack.kcp.ports import free_port

HEADROOM = 1.25  # the limit over the fitted peak: a cycle's garbage, a burst of watch events
SIZES_FOR_THE_TABLE = ((100, 3_000), (500, 15_000), (1_000, 30_000), (2_000, 60_000), (5_000, 150_000),
                       (10_000, 300_000))


@dataclass(frozen=True)
class Measured:
    nodes: int
    pods: int
    rss_mib: float  # after --cycles planning cycles
    peak_mib: float  # VmHWM: the most it held since it started
    apiserver_mib: float
    cycle_seconds: float  # mean planning cycle
    setup_seconds: float


def status_kib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return float(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no {field}")


def measure(nodes: int, pods: int, cycles: int, name: str, work: Path) -> Measured:
    cluster = clean_cluster(name)
    note(f"{nodes} nodes, {pods} pods: starting a control plane")
    t0 = time.monotonic()
    cluster.up(nodes, timeout=900)
    try:
        api = cluster.api()
        setup = populate(api, plan_nodes(nodes, pods, random.Random(1)), random.Random(1), workers=32)
        note(f"{setup.pods} pods in place after {time.monotonic() - t0:.0f}s")
        policy = work / f"policy-{nodes}.yaml"
        policy.write_text(nodemedic_policy(10, 500))
        port = free_port()
        log_path = work / f"remediator-{nodes}.log"
        argv = [sys.executable, "-m", "remediator", "run", "--policy", str(policy), "--kubeconfig",
                str(cluster.kubeconfig), "--dry-run", "--listen", f"127.0.0.1:{port}", "--lease-namespace", "default",
                "--identity", "bench", "--log-level", "WARNING"]
        with open(log_path, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    env=dict(os.environ, PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1"))
        try:
            def scraped() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
                if proc.poll() is not None:
                    raise RuntimeError(f"the remediator exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                        return descheduler.parse_metrics(r.read().decode())
                except OSError:
                    return {}

            def count(m: dict[tuple[str, tuple[tuple[str, str], ...]], float]) -> float:
                return descheduler.metric_sum(m, "nodemedic_plan_cycle_seconds_count")

            wait(lambda: count(scraped()) >= cycles, 900, f"{cycles} planning cycles", poll=1.0)
            m = scraped()
            rss = status_kib(proc.pid, "VmRSS") / 1024
            peak = status_kib(proc.pid, "VmHWM") / 1024
            mean = descheduler.metric_sum(m, "nodemedic_plan_cycle_seconds_sum") / count(m)
        finally:
            child.stop(proc)
        apiserver = next(p.pid for p in cluster.running() if p.name == "kube-apiserver")
        api_mib = status_kib(apiserver, "VmRSS") / 1024
    finally:
        for line in cluster.down():
            note(line)
    return Measured(nodes, setup.pods, round(rss, 1), round(peak, 1), round(api_mib, 1), round(mean, 3),
                    round(time.monotonic() - t0))


def least_squares(rows: list[list[float]], ys: list[float]) -> list[float]:
    """The coefficients x minimising |rows.x - ys|^2, by the normal equations (a handful of sizes, 2 or 3 unknowns)."""
    n = len(rows[0])
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(n)] for i in range(n)]
    aty = [sum(r[i] * y for r, y in zip(rows, ys, strict=True)) for i in range(n)]
    tiny = 1e-9 * max(abs(v) for row in ata for v in row)  # a pivot this small is a rounding error of zero
    for col in range(n):  # Gauss-Jordan with partial pivoting
        pivot = max(range(col, n), key=lambda r: abs(ata[r][col]))
        ata[col], ata[pivot], aty[col], aty[pivot] = ata[pivot], ata[col], aty[pivot], aty[col]
        if abs(ata[col][col]) <= tiny:
            raise ValueError("the sizes do not determine the fit: give sizes whose pods per node differ")
        for r in range(n):
            if r != col:
                f = ata[r][col] / ata[col][col]
                ata[r] = [a - f * b for a, b in zip(ata[r], ata[col], strict=True)]
                aty[r] -= f * aty[col]
    return [aty[i] / ata[i][i] for i in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # 2,000 nodes / 60,000 pods did not reach Running in 900 s on the 2-CPU machine: the default is what it holds.
    ap.add_argument("--sizes", default="500:15000,1000:30000", help="NODES:PODS,...")
    ap.add_argument("--cycles", type=int, default=3, help="planning cycles before reading the memory")
    ap.add_argument("--name", default="bench-remediator-memory")
    args = ap.parse_args()
    if unbuilt(build.BINARIES):
        return 2
    try:
        sizes = [(int(n), int(p)) for n, p in (s.split(":") for s in args.sizes.split(","))]
    except ValueError:
        print(f"--sizes: NODES:PODS,... expected, got {args.sizes!r}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="bench-remediator-memory-"))
    results = []
    for nodes, pods in sizes:
        try:
            m = measure(nodes, pods, args.cycles, args.name, work)
        except TimeoutError as e:  # a size this machine cannot bring up in time: say so, not a traceback
            print(f"{nodes} nodes, {pods} pods: {e}; not measured (a smaller size, or a larger machine)",
                  file=sys.stderr)
            return 1
        print(f"{m.nodes} nodes, {m.pods} pods: remediator RSS {m.rss_mib} MiB, peak {m.peak_mib} MiB; "
              f"planning cycle {m.cycle_seconds} s; API server RSS {m.apiserver_mib} MiB ({m.setup_seconds}s)",
              flush=True)
        results.append(m)
    print(f"\nnodemedic-remediator run --dry-run (all ten strategies) against a real API server, "
          f"{platform.machine()}, {os.cpu_count()} CPUs")
    columns = (Column("nodes"), Column("pods"), Column("RSS (MiB)"), Column("peak (MiB)"),
               Column("cycle (s)"), Column("API server (MiB)"))
    for line in table(columns, [(str(m.nodes), str(m.pods), f"{m.rss_mib}", f"{m.peak_mib}", f"{m.cycle_seconds}",
                                 f"{m.apiserver_mib}") for m in results], gap="  "):
        print(line)
    if len(results) < 2:
        return 0
    ratios = {round(m.pods / m.nodes, 3) for m in results}
    with_nodes = len(results) >= 3 and len(ratios) > 1
    rows = [[1.0, float(m.pods), float(m.nodes)] if with_nodes else [1.0, float(m.pods)] for m in results]
    coef = least_squares(rows, [m.peak_mib for m in results])
    per_pods = coef[1] * 1000
    fit = (f"peak = {coef[0]:.1f} MiB + {per_pods:.2f} MiB per 1,000 pods"
           + (f" + {coef[2] * 1000:.2f} MiB per 1,000 nodes" if with_nodes else " (nodes in proportion)"))
    print(f"\nfitted: {fit}")
    for m, row in zip(results, rows, strict=True):
        predicted = sum(c * x for c, x in zip(coef, row, strict=True))
        print(f"  {m.nodes} nodes / {m.pods} pods: measured {m.peak_mib} MiB, fitted {predicted:.1f} MiB")
    print(f"\nmemory limit by cluster size (fitted peak * {HEADROOM}):")
    for nodes, pods in SIZES_FOR_THE_TABLE:
        row = [1.0, float(pods), float(nodes)] if with_nodes else [1.0, float(pods)]
        peak = sum(c * x for c, x in zip(coef, row, strict=True))
        print(f"  {nodes:>6} nodes, {pods:>7} pods: peak {peak:7.0f} MiB, limit {peak * HEADROOM:7.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
