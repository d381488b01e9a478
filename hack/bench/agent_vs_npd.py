#!/usr/bin/env python3
"""Benchmark: nodemedic-agent and node-problem-detector side by side, tailing the same kernel log on one host.

node-problem-detector v1.36.0 is built here from the Go module proxy (`k8s.io/node-problem-detector`,
CGO_ENABLED=0, so without journald, which needs cgo) into ~/.cache/nodemedic/bin/npd-v1.36.0/ when missing.
A private local control plane gets two kwok nodes, one played by each program:
- node-problem-detector with its kmsg system-log-monitor: nodemedic's shipped kernel-monitor.json (NPD's format)
  plus a bench monitor with N permanent conditions `Bench00..`, each set by its own line;
- nodemedic-agent with its defaults (every built-in check on, the shipped kernel and GPU monitors) plus the same
  bench monitor, with this machine's `/` as its host root, as the DaemonSet sees its node's (a root of symlinks to
  the real directories would make the runtime check chase `run -> /run` round its re-rooting 40 times a socket).
  `stuckPods` watches the pods of its node, as in a cluster.
Both read the real `/dev/kmsg`, which the benchmark writes to (root): the lines are `nodemedic-bench: probe NN`,
which no shipped rule of either program matches, so nothing else on the machine reacts to them.

1. Steady state: after a warm-up, RSS (VmRSS of the process tree: journalctl or plugin children count) once a
   second and CPU time over the window, for both: the scheduler's exact runtime (`schedstat`, which the CPU ratio
   uses) and the 10 ms clock ticks of `stat` for comparison.
2. Latency: N times, one kernel line (1-2 s after the last one was seen), then the time until a watch sees
   `BenchNN` True on each node.
Prints both programs' numbers and the three ratios agent / NPD (targets: RSS ≤ 1, CPU ≤ 2, p95 latency ≤ 250 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kubernetes import client, config, watch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

from kcp import build, controlplane, nodes, paths  # noqa: E402
from kcp.measure import percentile, wait  # noqa: E402

NPD_VERSION = "v1.36.0"
NPD_MODULE = "k8s.io/node-problem-detector"
AGENT_NODE, NPD_NODE = "agent-bench", "npd-bench"
TICK = os.sysconf("SC_CLK_TCK")
LINE = "nodemedic-bench: probe {i:02d} stalled"


def npd_binary() -> Path:
    return paths.cache_root() / "bin" / f"npd-{NPD_VERSION}" / "node-problem-detector"


def build_npd() -> Path:
    """go build in a throwaway wrapper module that requires NPD at the pinned version; renamed into place."""
    target = npd_binary()
    if target.exists():
        return target
    work = Path(tempfile.mkdtemp(prefix="npd-build-"))
    try:
        (work / "go.mod").write_text("module nodemedic.local/npdbuild\n\ngo 1.26\n")
        (work / "tools.go").write_text(
            f'//go:build tools\n\npackage tools\n\nimport _ "{NPD_MODULE}/cmd/nodeproblemdetector"\n')
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOCACHE=str(paths.go_cache()))
        subprocess.run(["go", "get", f"{NPD_MODULE}@{NPD_VERSION}"], cwd=work, env=env, check=True)
        out = work / "out" / "node-problem-detector"
        subprocess.run(["go", "build", "-trimpath", "-ldflags",
                        f"-s -w -X {NPD_MODULE}/pkg/version.version={NPD_VERSION}", "-o", str(out),
                        f"{NPD_MODULE}/cmd/nodeproblemdetector"], cwd=work, env=env, check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp_target = target.with_suffix(".partial")
        shutil.copy2(out, tmp_target)
        tmp_target.rename(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench_monitor(n: int) -> dict:
    return {
        "plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": "0", "bufferSize": 10, "source": "bench-monitor",
        "conditions": [{"type": f"Bench{i:02d}", "reason": f"Bench{i:02d}Fine", "message": "fine"} for i in range(n)],
        "rules": [{"type": "permanent", "condition": f"Bench{i:02d}", "reason": "Probe",
                   "pattern": LINE.format(i=i).replace(".", "\\.")} for i in range(n)],
    }


class NodeWatch:
    """First time each condition type is seen True on each node (wall clock)."""

    def __init__(self, core: client.CoreV1Api) -> None:
        self.core = core
        self.true_seen: dict[tuple[str, str], float] = {}
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # ends when the cluster is torn down
            for ev in watch.Watch().stream(self.core.list_node, _request_timeout=3600):
                seen = time.time()
                node = ev["object"].metadata.name
                for c in ev["object"].status.conditions or []:
                    if c.status == "True":
                        self.true_seen.setdefault((node, c.type), seen)


def tree_usage(pid: int) -> tuple[int, int, int]:
    """(RSS bytes, CPU clock ticks, CPU nanoseconds) of pid and its descendants. Ticks (utime + stime) include
    threads that have exited but come in 10 ms steps, a coarse unit for a process that uses a few ticks a minute;
    the scheduler's own runtime per thread (`task/*/schedstat`) is exact but only counts threads still alive."""
    rss = ticks = nanos = 0
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
            ticks += int(fields[11]) + int(fields[12])
            status = Path(f"/proc/{p}/status").read_text()
            rss += int(next(x for x in status.splitlines() if x.startswith("VmRSS:")).split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    nanos += int((task / "schedstat").read_text().split()[0])
    return rss, ticks, nanos


def kmsg(message: str) -> float:
    """One record in the real kernel log (user facility, level warning), timed just before the write."""
    fd = os.open("/dev/kmsg", os.O_WRONLY)
    try:
        now = time.time()
        os.write(fd, f"<4>{message}\n".encode())  # the newline ends the record: an open one is not readable yet
        return now
    finally:
        os.close(fd)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=30, help="kernel lines (default 30)")
    ap.add_argument("--warmup", type=float, default=20.0, help="seconds before steady-state sampling")
    ap.add_argument("--window", type=float, default=60.0, help="steady-state sampling window, seconds")
    args = ap.parse_args()
    if build.missing(build.BINARIES):
        print(f"not built: {build.missing(build.BINARIES)}; run `make build`", file=sys.stderr)
        return 2
    if not os.access("/dev/kmsg", os.W_OK):
        print("writing test lines to /dev/kmsg needs root", file=sys.stderr)
        return 2
    t_build = time.monotonic()
    npd = build_npd()
    print(f"node-problem-detector {NPD_VERSION}: {npd} ({time.monotonic() - t_build:.0f} s to build or find)")
    cluster = controlplane.Cluster.named("bench-agent-npd")
    if cluster.load() and cluster.running():
        cluster.down()
    cluster.up(1)
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-npd-"))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        for name in (AGENT_NODE, NPD_NODE):
            core.create_node(nodes.node_manifest(name, nodes.ZONES[0]))
        (tmp / "bench-monitor.json").write_text(json.dumps(bench_monitor(args.samples)))
        kernel = ROOT / "agent" / "defaults" / "kernel-monitor.json"
        gpu = ROOT / "agent" / "defaults" / "gpu-monitor.json"
        (tmp / "agent.yaml").write_text("apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\n"
                                        f"systemLogMonitors: [{kernel}, {gpu}, {tmp / 'bench-monitor.json'}]\n")
        with open(tmp / "agent.log", "wb") as log:
            procs["nodemedic-agent"] = subprocess.Popen(
                [sys.executable, "-m", "agent", "run", "--node-name", AGENT_NODE, "--kubeconfig",
                 str(cluster.kubeconfig), "--config", str(tmp / "agent.yaml"), "--host-root", "/",
                 "--state-dir", str(tmp / "state"), "--listen", ""],
                stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        with open(tmp / "npd.log", "wb") as log:
            procs["node-problem-detector"] = subprocess.Popen(
                [str(npd), f"--hostname-override={NPD_NODE}",
                 f"--apiserver-override={api.configuration.host}?inClusterConfig=false&auth={cluster.kubeconfig}",
                 f"--config.system-log-monitor={kernel},{tmp / 'bench-monitor.json'}",
                 "--port=0", "--prometheus-port=0", "--logtostderr"],
                stdout=log, stderr=subprocess.STDOUT)
        nw = NodeWatch(core)
        for node in (AGENT_NODE, NPD_NODE):
            wait(lambda n=node: "Bench00" in {c.type for c in core.read_node_status(n).status.conditions or []}
                 or any(p.poll() is not None for p in procs.values()), 90, f"the first status write of {node}")
        for name, p in procs.items():
            if p.poll() is not None:
                print(f"{name} exited ({p.returncode}); logs in {tmp}", file=sys.stderr)
                return 1

        # 1. steady state, both at once
        time.sleep(args.warmup)
        rss: dict[str, list[int]] = {name: [] for name in procs}
        start = {name: tree_usage(p.pid) for name, p in procs.items()}
        t0 = time.monotonic()
        while time.monotonic() - t0 < args.window:
            for name, p in procs.items():
                rss[name].append(tree_usage(p.pid)[0])
            time.sleep(1.0)
        elapsed = time.monotonic() - t0
        end = {name: tree_usage(p.pid) for name, p in procs.items()}
        ticks = {name: end[name][1] - start[name][1] for name in procs}
        cpu = {name: (end[name][2] - start[name][2]) / 1e9 / elapsed * 100 for name in procs}
        mean_rss = {name: statistics.mean(v) / 2**20 for name, v in rss.items()}
        for name in procs:
            print(f"{name:<22} steady state: RSS mean {mean_rss[name]:.1f} MiB (max {max(rss[name]) / 2**20:.1f}), "
                  f"CPU {cpu[name]:.4f} % of one core over {elapsed:.0f} s ({ticks[name]} clock ticks: "
                  f"{ticks[name] / TICK / elapsed * 100:.3f} %)", flush=True)

        # 2. one kernel line -> a condition on each node
        latency: dict[str, list[float]] = {AGENT_NODE: [], NPD_NODE: []}
        for i in range(args.samples):
            # Spaced past the agent's minimum gap between two status writes (1 s, docs/bounds.md): this times
            # one line reaching the API server, not a node gaining a new condition twice a second.
            time.sleep(random.uniform(1.0, 2.0))
            t = kmsg(LINE.format(i=i))
            for node, samples in latency.items():
                seen = wait(lambda n=node, i=i: nw.true_seen.get((n, f"Bench{i:02d}")), 30, f"Bench{i:02d} on {node}")
                samples.append(seen - t)
            print(f"line {i:2d}: agent {latency[AGENT_NODE][-1] * 1000:6.0f} ms, "
                  f"NPD {latency[NPD_NODE][-1] * 1000:6.0f} ms", flush=True)
        p95 = {node: percentile(v, 0.95) for node, v in latency.items()}
        for node, v in latency.items():
            print(f"{node}: kernel line → condition seen by a watch: p50 {statistics.median(v) * 1000:.0f} ms, "
                  f"p95 {p95[node] * 1000:.0f} ms, max {max(v) * 1000:.0f} ms ({len(v)} lines)")
        a, n = "nodemedic-agent", "node-problem-detector"
        print(f"ratios agent / NPD: RSS {mean_rss[a] / mean_rss[n]:.2f} (target ≤ 1), "
              f"CPU {cpu[a] / cpu[n] if cpu[n] else float('inf'):.2f} (target ≤ 2), "
              f"p95 latency {p95[AGENT_NODE] / p95[NPD_NODE]:.2f} (agent p95 target ≤ 250 ms)")
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(15)
            if p.poll() is None:
                p.kill()
                p.wait()
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
