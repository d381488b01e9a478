#!/usr/bin/env python3
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
import contextlib
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from kubernetes import client, config, watch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

from kcp import build, controlplane, nodes  # noqa: E402
from kcp.measure import percentile, wait  # noqa: E402
from kcp.ports import free_port  # noqa: E402

NODE = "agent-bench"
TICK = os.sysconf("SC_CLK_TCK")


def bench_monitor(n: int) -> dict:
    """An NPD kmsg monitor with n permanent conditions, each set by its own hung-task line."""
    return {
        "plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": "5m", "bufferSize": 10, "source": "bench-monitor",
        "conditions": [{"type": f"Bench{i:02d}", "reason": f"Bench{i:02d}Fine", "message": "fine"}
                       for i in range(n)],
        "rules": [{"type": "permanent", "condition": f"Bench{i:02d}", "reason": "TaskHung",
                   "pattern": f"task bench{i:02d}:\\d+ blocked for more than \\d+ seconds\\."} for i in range(n)],
    }


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


class NodeWatch:
    """First time each condition type is seen True on the node (wall clock)."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.core, self.true_seen = core, {}
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # ends when the cluster is torn down
            for ev in watch.Watch().stream(self.core.list_node, field_selector=f"metadata.name={NODE}",
                                           _request_timeout=3600):
                seen = time.time()
                for c in ev["object"].status.conditions or []:
                    if c.status == "True":
                        self.true_seen.setdefault(c.type, seen)


def tree_usage(pid: int) -> tuple[int, int]:
    """(RSS bytes, CPU ticks) of pid and its descendants (plugins run as children)."""
    rss = ticks = 0
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(d.name))
    todo = [pid]
    while todo:
        p = todo.pop()
        todo += children.get(p, [])
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            status = Path(f"/proc/{p}/status").read_text()
            rss += int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1]) * 1024
    return rss, ticks




def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=50, help="kernel line injections (default 50)")
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds before steady-state sampling")
    ap.add_argument("--window", type=float, default=60.0, help="steady-state sampling window, seconds")
    args = ap.parse_args()
    if build.missing(build.BINARIES):
        print(f"not built: {build.missing(build.BINARIES)}; run `make build`", file=sys.stderr)
        return 2
    cluster = controlplane.Cluster.named("bench-agent")
    if cluster.load() and cluster.running():
        cluster.down()
    cluster.up(1)
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-agent-"))
    proc = None
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        core.create_node(nodes.node_manifest(NODE, nodes.ZONES[0]))
        root = host_root(tmp)
        (tmp / "bench-monitor.json").write_text(json.dumps(bench_monitor(args.samples)))
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
        nw = NodeWatch(core)
        wait(lambda: "Bench00" in {c.type for c in core.read_node_status(NODE).status.conditions or []}, 60,
             "the agent's first status write")

        # 1. steady state
        time.sleep(args.warmup)  # startup (imports, first run of every check) is not steady state
        rss_samples = []
        _, ticks0 = tree_usage(proc.pid)
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.window:
            rss_samples.append(tree_usage(proc.pid)[0])
            time.sleep(1.0)
        _, ticks1 = tree_usage(proc.pid)
        cpu = (ticks1 - ticks0) / TICK / (time.monotonic() - t0) * 100
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            health = r.read().decode().strip()
        mib = [r / 2**20 for r in rss_samples]
        print(f"steady state, every default check on: RSS mean {statistics.mean(mib):.1f} MiB, "
              f"max {max(mib):.1f} MiB; CPU {cpu:.2f} % of one core over {args.window:.0f}s "
              f"(targets ≤ 40 MiB, ≤ 1 %); /healthz: {health}", flush=True)
        print("conditions on the node: " + ", ".join(
            f"{c.type}={c.status}" for c in core.read_node_status(NODE).status.conditions
            if not c.type.startswith("Bench")), flush=True)

        # 2. kernel line -> condition visible through the API server
        writer = KmsgWriter(root / "dev" / "kmsg")
        latencies = []
        for i in range(args.samples):
            # Spaced past the agent's minimum gap between two status writes (1 s, docs/bounds.md): this times one line
            # reaching the API server, not a node gaining a new condition twice a second.
            time.sleep(random.uniform(1.0, 2.0))
            t = writer.write(f"INFO: task bench{i:02d}:{4000 + i} blocked for more than 120 seconds.")
            seen = wait(lambda i=i: nw.true_seen.get(f"Bench{i:02d}"), 30, f"Bench{i:02d}=True")
            latencies.append(seen - t)
            print(f"injection {i:2d}: kernel line → Bench{i:02d}=True seen by a watch in "
                  f"{latencies[-1] * 1000:6.1f} ms", flush=True)
        print(f"kernel line → condition through the API: p50 {statistics.median(latencies) * 1000:.0f} ms, "
              f"p95 {percentile(latencies, 0.95) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms over "
              f"{len(latencies)} injections (target p95 ≤ 1 s)")
        rss, _ = tree_usage(proc.pid)
        print(f"RSS after the injections: {rss / 2**20:.1f} MiB")
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or platform.node()}, "
              f"Python {platform.python_version()}")
        if proc.poll() is not None:
            print(f"the agent exited ({proc.returncode}); log: {tmp / 'agent.log'}", file=sys.stderr)
            return 1
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            proc.wait(15)
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
