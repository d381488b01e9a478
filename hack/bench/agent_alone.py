"""Benchmark: the agent's steady-state cost, and kernel line → condition visible through the API server.

Starts its own local control plane with one kwok node for the agent to play, and a real
`nodemedic-agent run` whose host root shows this machine (`proc`, `sys`, `run`, `var/log` are symlinks to the
real ones) except for `dev/kmsg`, a regular file the benchmark appends kernel records to. The config is the
embedded default (every built-in check on, the shipped kernel monitor) plus one NPD system-log-monitor file
with 50 permanent conditions `Bench00..Bench49`, so every injection makes a fresh False → True transition.

1. Steady state: after a warm-up, samples the agent's RSS (VmRSS, the whole process tree) once a second and
   its CPU time over the window; prints mean and max RSS and CPU as % of one core.
2. Latency: N times, 1-2 s apart (past the agent's minimum gap between status writes), so at a random point
   of the 200 ms kmsg-file poll, appends a hung-task line for the next condition and times until a watch on
   the Node shows that condition True. Prints each sample and p50/p95/max (target p95 ≤ 1 s).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from functools import partial
from pathlib import Path

from kubernetes import client, config

from hack.bench.lib import child
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.monitor import bench_condition, bench_monitor
from hack.bench.lib.node_conditions import ConditionWatch, has_condition
from hack.bench.lib.process import tree_usage
from hack.bench.lib.report import machine
from hack.bench.lib.stats import percentiles_ms, summarize
from hack.bench.lib.steady_state import sample_steady_state
from hack.kcp import build, nodes
from hack.kcp.measure import wait
from hack.kcp.ports import free_port

ROOT = Path(__file__).resolve().parents[2]

NODE = "agent-bench"


def hung_task(i: int) -> str:
    """The pattern of condition i's rule: a hung-task line naming task bench<i>."""
    return f"task bench{i:02d}:\\d+ blocked for more than \\d+ seconds\\."


def host_root(base: Path) -> Path:
    root = base / "host"
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "kmsg").write_text("")
    (root / "var").mkdir()
    for d in ("proc", "sys", "run"):
        (root / d).symlink_to(f"/{d}")
    (root / "var" / "log").symlink_to("/var/log")
    return root


class KmsgWriter:
    """Appends records in /dev/kmsg format, timestamped in microseconds since this machine's boot."""

    def __init__(self, path: Path) -> None:
        self.path, self.seq = path, 0
        btime = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                     if line.startswith("btime "))
        self.boot = btime

    def write(self, message: str) -> float:
        self.seq += 1
        now = time.time()
        with open(self.path, "a") as f:
            f.write(f"3,{self.seq},{int((now - self.boot) * 1e6)},-;{message}\n")
        return now


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=50, help="kernel line injections (default 50)")
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds before steady-state sampling")
    ap.add_argument("--window", type=float, default=60.0, help="steady-state sampling window, seconds")
    args = ap.parse_args()
    if unbuilt(build.BINARIES):
        return 2
    cluster = clean_cluster("bench-agent")
    cluster.up(1)
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-agent-"))
    proc = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        cluster.api().post("/api/v1/nodes", nodes.node_manifest(NODE, nodes.ZONES[0]))  # kcp's client: dict bodies
        root = host_root(tmp)
        monitor = bench_monitor(args.samples, pattern=hung_task, reason="TaskHung", lookback="5m")
        (tmp / "bench-monitor.json").write_text(json.dumps(monitor))
        kernel = ROOT / "agent" / "defaults" / "kernel-monitor.json"
        (tmp / "agent.yaml").write_text(
            "apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\n"
            f"systemLogMonitors: [{kernel}, {tmp / 'bench-monitor.json'}]\n")
        port = free_port()
        log = open(tmp / "agent.log", "wb")  # noqa: SIM115 - lives as long as the process
        proc = subprocess.Popen(
            [sys.executable, "-m", "agent", "run", "--node-name", NODE, "--kubeconfig", str(cluster.kubeconfig),
             "--config", str(tmp / "agent.yaml"), "--host-root", str(root), "--state-dir", str(tmp / "state"),
             "--listen", f"127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        watched = ConditionWatch(core)
        wait(partial(has_condition, core, NODE, bench_condition(0)), 60, "the agent's first status write")

        # 1. steady state
        time.sleep(args.warmup)  # startup (imports, first run of every check) is not steady state
        steady = sample_steady_state({NODE: proc.pid}, args.window)[NODE]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            health = r.read().decode().strip()
        print(f"steady state, every default check on: RSS mean {steady.rss_mean_mib:.1f} MiB, "
              f"max {steady.rss_max_mib:.1f} MiB; CPU {steady.tick_cpu_percent:.2f} % of one core over "
              f"{args.window:.0f}s (targets ≤ 40 MiB, ≤ 1 %); /healthz: {health}", flush=True)
        status = core.read_node_status(NODE).status
        print("conditions on the node: " + ", ".join(
            f"{c.type}={c.status}" for c in (status.conditions if status else None) or []
            if not c.type.startswith("Bench")), flush=True)

        # 2. kernel line -> condition visible through the API server
        writer = KmsgWriter(root / "dev" / "kmsg")
        latencies = []
        for i in range(args.samples):
            # Spaced past the agent's minimum gap between two status writes (1 s, docs/bounds.md): this times one line
            # reaching the API server, not a node gaining a new condition twice a second.
            time.sleep(random.uniform(1.0, 2.0))
            t = writer.write(f"INFO: task bench{i:02d}:{4000 + i} blocked for more than 120 seconds.")
            condition = bench_condition(i)
            seen = wait(partial(watched.first_true, NODE, condition), 30, f"{condition}=True")
            latencies.append(seen - t)
            print(f"injection {i:2d}: kernel line → {condition}=True seen by a watch in "
                  f"{latencies[-1] * 1000:6.1f} ms", flush=True)
        print(f"kernel line → condition through the API: {percentiles_ms(summarize(latencies))} over "
              f"{len(latencies)} injections (target p95 ≤ 1 s)")
        print(f"RSS after the injections: {tree_usage(proc.pid).rss / 2**20:.1f} MiB")
        print(f"machine: {machine(platform.processor() or platform.node())}")
        if proc.poll() is not None:
            print(f"the agent exited ({proc.returncode}); log: {tmp / 'agent.log'}", file=sys.stderr)
            return 1
    finally:
        if proc is not None:
            child.stop(proc)
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
