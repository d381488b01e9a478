"""Benchmark: nodemedic-agent and node-problem-detector side by side, tailing the same kernel log on one host.

node-problem-detector v1.36.0 is built here from the Go module proxy (`k8s.io/node-problem-detector`) as its release
image builds it (its Makefile's default ENABLE_JOURNALD=1: cgo and the `journald` build tag, against the headers of
Debian's libsystemd-dev at the version of this machine's libsystemd0) into ~/.cache/nodemedic/bin/npd-v1.36.0-journald/
when missing.
A private local control plane gets three kwok nodes, one played by each process:
- node-problem-detector as its own DaemonSet (deployment/node-problem-detector.yaml) runs it: the system-log
  monitors that manifest passes it, from upstream's ConfigMap (v1.36.0: kernel-monitor.json, readonly-monitor.json,
  docker-monitor.json), a journald one's logPath pointed at the folder where this host keeps its journal (the
  DaemonSet mounts the host's), plus a bench monitor
  with N permanent conditions `Bench00..`, each set by its own line. The ratios and their targets are against it;
- node-problem-detector with one kmsg monitor, nodemedic's shipped kernel-monitor.json (NPD's format), plus the
  bench monitor: the least NPD runs, shown beside it;
- nodemedic-agent with its defaults (every built-in check on, every shipped log monitor: kernel, GPU and journal)
  plus the same bench monitor, from compiled bytecode as in the image, with this machine's `/` as its host root,
  as the DaemonSet sees its node's (a root of symlinks to the real directories would make the runtime check chase
  `run -> /run` round its re-rooting 40 times a socket).
  `stuckPods` watches the pods of its node, as in a cluster.
Both read the real `/dev/kmsg`, which the benchmark writes to (root): the lines are `nodemedic-bench: probe NN`,
which no shipped rule of either program matches, so nothing else on the machine reacts to them.
The agent's host has a journal, so its journal monitors run (on by default wherever there is one) and their
reader, libsystemd in the agent's process, is counted in its RSS: this machine's own journal, or, where it keeps
none, one its systemd-journald writes
for the benchmark in `/run/log/journal/<machine-id>/` (tests/real_journal.py, `volatile=True`), the volatile
journal folder the agent's default discovery reads below its host root; what the benchmark created there is
removed after. NPD's docker monitor reads that same journal through libsystemd in NPD's process.

1. Steady state: after a warm-up, RSS (VmRSS of the process tree: plugin children count) once a
   second and CPU time over the window, for all three: the scheduler's exact runtime (`schedstat`, which the CPU
   ratio uses) and the 10 ms clock ticks of `stat` for comparison.
2. Latency: N times, one kernel line (1-2 s after the last one was seen), then the time until a watch sees
   `BenchNN` True on each node.
Prints every process's numbers and the three ratios agent / NPD for each NPD (targets, against NPD as its DaemonSet
runs it: RSS ≤ 1, CPU ≤ 1.5, p95 latency ≤ 250 ms).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

from agent.logsources.journal_hub import JOURNAL_DIRS, JournalHub
from agent.npd.logmonitor_config import DEFAULT_MONITORS
from hack.bench.lib import child
from hack.bench.lib.bytecode import compile_as_installed
from hack.bench.lib.cluster import clean_cluster, unbuilt
from hack.bench.lib.comparison import format_ratio, ratio
from hack.bench.lib.monitor import bench_condition, bench_monitor
from hack.bench.lib.node_conditions import ConditionWatch, has_condition
from hack.bench.lib.process import commands, open_journal_files
from hack.bench.lib.report import machine
from hack.bench.lib.stats import percentiles_ms, summarize
from hack.bench.lib.steady_state import sample_steady_state
from hack.kcp import build, debian, nodes, paths
from hack.kcp.measure import wait
from tests.real_journal import RealJournal

ROOT = Path(__file__).resolve().parents[2]

NPD_VERSION = "v1.36.0"
NPD_MODULE = "k8s.io/node-problem-detector"
AGENT_NODE, NPD_NODE, NPD_KMSG_NODE = "agent-bench", "npd-bench", "npd-kmsg-bench"
AGENT, NPD, NPD_KMSG = "nodemedic-agent", "node-problem-detector", "npd-kmsg-only"
MONITOR_FLAG = "--config.system-log-monitor="
LINE = "nodemedic-bench: probe {i:02d} stalled"


def npd_binary(*, journald: bool) -> Path:
    return paths.cache_root() / "bin" / f"npd-{NPD_VERSION}{'-journald' if journald else ''}" / "node-problem-detector"


def npd_source() -> Path:
    """The module's source tree in the Go module cache (Dockerfile, deployment/, config/)."""
    out = subprocess.run(["go", "mod", "download", "-json", f"{NPD_MODULE}@{NPD_VERSION}"], cwd=paths.cache_root(),
                         env=dict(os.environ, GOTOOLCHAIN="local", GOFLAGS=""), capture_output=True, text=True,
                         check=True).stdout
    return Path(json.loads(out)["Dir"])


def daemonset_monitors(source: Path) -> dict[str, dict[str, Any]]:
    """The system-log monitors upstream's DaemonSet passes NPD (its --config.system-log-monitor, in order): file name
    -> the monitor as upstream's ConfigMap holds it (deployment/node-problem-detector*.yaml)."""
    deployment = source / "deployment"
    ds = yaml.safe_load((deployment / "node-problem-detector.yaml").read_text())
    data = yaml.safe_load((deployment / "node-problem-detector-config.yaml").read_text())["data"]
    command = ds["spec"]["template"]["spec"]["containers"][0]["command"]
    flag = next(arg for arg in command if arg.startswith(MONITOR_FLAG))
    return {Path(f).name: json.loads(data[Path(f).name]) for f in flag.removeprefix(MONITOR_FLAG).split(",")}


def _libsystemd_headers(work: Path) -> Path:
    """Debian's libsystemd-dev at the version of the installed libsystemd0 (what the binary dlopens), unpacked under
    `work`: the include folder for cgo."""
    return debian.extract("libsystemd-dev", debian.installed("libsystemd0"), work, []) / "usr" / "include"


def build_npd(*, journald: bool = False) -> Path:
    """go build in a throwaway wrapper module that requires NPD at the pinned version; renamed into place.
    `journald`: as upstream's Makefile builds its release binary (cgo, `-tags journald`); else CGO_ENABLED=0, a
    static binary with no journald monitor."""
    target = npd_binary(journald=journald)
    if target.exists():
        return target
    work = Path(tempfile.mkdtemp(prefix="npd-build-"))
    try:
        (work / "go.mod").write_text("module nodemedic.local/npdbuild\n\ngo 1.26\n")
        (work / "tools.go").write_text(
            f'//go:build tools\n\npackage tools\n\nimport _ "{NPD_MODULE}/cmd/nodeproblemdetector"\n')
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod", GOCACHE=str(paths.go_cache()))
        tags = []
        if journald:
            env.update(CGO_ENABLED="1", CGO_CFLAGS=f"-I{_libsystemd_headers(work)}")
            tags = ["-tags", "journald"]
        subprocess.run(["go", "get", f"{NPD_MODULE}@{NPD_VERSION}"], cwd=work, env=env, check=True)
        out = work / "out" / "node-problem-detector"
        subprocess.run(["go", "build", "-trimpath", *tags, "-ldflags",
                        f"-s -w -X {NPD_MODULE}/pkg/version.version={NPD_VERSION}", "-o", str(out),
                        f"{NPD_MODULE}/cmd/nodeproblemdetector"], cwd=work, env=env, check=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp_target = target.with_suffix(".partial")
        shutil.copy2(out, tmp_target)
        tmp_target.rename(target)
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def npd_daemonset_monitors(tmp: Path, journal_folder: Path) -> list[Path]:
    """Upstream's monitors as its DaemonSet passes them, copied to `tmp`; a journald one reads `journal_folder`."""
    monitors = []
    for name, monitor in daemonset_monitors(npd_source()).items():
        if monitor.get("plugin") == "journald":
            monitor["logPath"] = str(journal_folder)
        (tmp / f"npd-{name}").write_text(json.dumps(monitor))
        monitors.append(tmp / f"npd-{name}")
    return monitors


@contextlib.contextmanager
def host_journal(work: Path) -> Iterator[tuple[str, Path]]:
    """A journal where the agent, with `/` as its host root, looks for one by default; yields what it is and the
    folder that holds it (what a journald monitor's logPath names)."""
    host = Path("/")
    if JournalHub(host).present():
        yield "this machine's own", next(host / d for d in JOURNAL_DIRS if any((host / d).glob("*/*.journal")))
        return
    journal = RealJournal(host, work, volatile=True)
    created = next((p for p in (*reversed(journal.directory.parents), journal.directory) if not p.exists()), None)
    try:
        journal.start()
        journal.stream("nodemedic-bench")  # held open: journald keeps running for the whole benchmark
        if not JournalHub(host).present():
            raise RuntimeError(f"the agent's journal discovery does not see {journal.directory}")
        yield f"{journal.directory}, written by systemd-journald for the benchmark", journal.directory.parent
    finally:
        journal.stop()
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        else:  # the folder was there, empty of journal files: only what journald wrote goes
            for f in journal.directory.iterdir():
                f.unlink(missing_ok=True)


def probe(i: int) -> str:
    """The pattern of condition i's rule: the line `LINE` names, matched literally."""
    return LINE.format(i=i).replace(".", "\\.")


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
    if unbuilt(build.BINARIES):
        return 2
    if not os.access("/dev/kmsg", os.W_OK):
        print("writing test lines to /dev/kmsg needs root", file=sys.stderr)
        return 2
    t_build = time.monotonic()
    npd = build_npd(journald=True)
    print(f"node-problem-detector {NPD_VERSION} with journald: {npd} "
          f"({time.monotonic() - t_build:.0f} s to build or find)")
    cluster = clean_cluster("bench-agent-npd")
    cluster.up(1)
    tmp = Path(tempfile.mkdtemp(prefix="nodemedic-bench-npd-"))
    procs: dict[str, subprocess.Popen[bytes]] = {}
    stack = contextlib.ExitStack()
    try:
        journal, journal_folder = stack.enter_context(host_journal(tmp / "journald"))
        print(f"the host's journal: {journal}", flush=True)
        api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
        core = client.CoreV1Api(api)
        # created with kcp's client, whose bodies are the manifests as dicts
        for name in (AGENT_NODE, NPD_NODE, NPD_KMSG_NODE):
            cluster.api().post("/api/v1/nodes", nodes.node_manifest(name, nodes.ZONES[0]))
        monitor = bench_monitor(args.samples, pattern=probe, reason="Probe", lookback="0")
        (tmp / "bench-monitor.json").write_text(json.dumps(monitor))
        kernel = ROOT / "agent" / "defaults" / "kernel-monitor.json"
        monitors = ", ".join(str(m) for m in (*DEFAULT_MONITORS, tmp / "bench-monitor.json"))
        (tmp / "agent.yaml").write_text("apiVersion: nodemedic.io/v1alpha1\nkind: AgentConfig\n"
                                        f"systemLogMonitors: [{monitors}]\n")
        # As from the image: compiling the sources itself on every start leaves about 1 MiB more heap behind.
        compile_as_installed("agent", "nodemedic_common")
        with open(tmp / "agent.log", "wb") as log:
            procs[AGENT] = subprocess.Popen(
                [sys.executable, "-m", "agent", "run", "--node-name", AGENT_NODE, "--kubeconfig",
                 str(cluster.kubeconfig), "--config", str(tmp / "agent.yaml"), "--host-root", "/",
                 "--state-dir", str(tmp / "state"), "--listen", ""],
                stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        npd_monitors = {NPD: (NPD_NODE, [*npd_daemonset_monitors(tmp, journal_folder), tmp / "bench-monitor.json"]),
                        NPD_KMSG: (NPD_KMSG_NODE, [kernel, tmp / "bench-monitor.json"])}
        for name, (node, files) in npd_monitors.items():
            with open(tmp / f"{name}.log", "wb") as log:
                procs[name] = subprocess.Popen(
                    [str(npd), f"--hostname-override={node}",
                     f"--apiserver-override={api.configuration.host}?inClusterConfig=false&auth={cluster.kubeconfig}",
                     f"--config.system-log-monitor={','.join(str(f) for f in files)}",
                     "--port=0", "--prometheus-port=0", "--logtostderr"],
                    stdout=log, stderr=subprocess.STDOUT)
        watched = ConditionWatch(core)

        def written_or_exited(node: str) -> bool:
            return has_condition(core, node, bench_condition(0)) or any(p.poll() is not None for p in procs.values())

        for node in (AGENT_NODE, NPD_NODE, NPD_KMSG_NODE):
            wait(partial(written_or_exited, node), 90, f"the first status write of {node}")
        for name, p in procs.items():
            if p.poll() is not None:
                print(f"{name} exited ({p.returncode}); logs in {tmp}", file=sys.stderr)
                return 1

        # 1. steady state, both at once
        time.sleep(args.warmup)
        steady = sample_steady_state({name: p.pid for name, p in procs.items()}, args.window)
        for name, s in steady.items():
            print(f"{name:<22} steady state: RSS mean {s.rss_mean_mib:.1f} MiB (max {s.rss_max_mib:.1f}), "
                  f"CPU {s.cpu_percent:.4f} % of one core over {s.seconds:.0f} s ({s.cpu_ticks} clock ticks: "
                  f"{s.tick_cpu_percent:.3f} %)", flush=True)
        for name in (AGENT, NPD):
            tree, journal_files = commands(procs[name].pid), open_journal_files(procs[name].pid)
            print(f"{name}'s tree: {len(tree)} processes; journal files open in it: {journal_files} "
                  f"(its journal monitors {'ran' if journal_files else 'did not run'})", flush=True)

        # 2. one kernel line -> a condition on each node
        latency: dict[str, list[float]] = {AGENT_NODE: [], NPD_NODE: [], NPD_KMSG_NODE: []}
        for i in range(args.samples):
            # Spaced past the agent's minimum gap between two status writes (1 s, docs/bounds.md): this times
            # one line reaching the API server, not a node gaining a new condition twice a second.
            time.sleep(random.uniform(1.0, 2.0))
            t = kmsg(LINE.format(i=i))
            condition = bench_condition(i)
            for node, samples in latency.items():
                seen = wait(partial(watched.first_true, node, condition), 30, f"{condition} on {node}")
                samples.append(seen - t)
            print(f"line {i:2d}: agent {latency[AGENT_NODE][-1] * 1000:6.0f} ms, "
                  f"NPD {latency[NPD_NODE][-1] * 1000:6.0f} ms, "
                  f"NPD kmsg only {latency[NPD_KMSG_NODE][-1] * 1000:6.0f} ms", flush=True)
        summaries = {node: summarize(v) for node, v in latency.items()}
        for node, summary in summaries.items():
            print(f"{node}: kernel line → condition seen by a watch: {percentiles_ms(summary)} ({summary.count} lines)")
        a = steady[AGENT]
        for name, node, against in ((NPD, NPD_NODE, " (targets: RSS ≤ 1, CPU ≤ 1.5, agent p95 ≤ 250 ms)"),
                                    (NPD_KMSG, NPD_KMSG_NODE, "")):
            n = steady[name]
            p95 = ratio(summaries[AGENT_NODE].p95, summaries[node].p95)
            print(f"ratios agent / {name}: RSS {format_ratio(ratio(a.rss_mean_mib, n.rss_mean_mib))}, "
                  f"CPU {format_ratio(ratio(a.cpu_percent, n.cpu_percent), undefined='inf')}, "
                  f"p95 latency {format_ratio(p95)}{against}")
        print(f"machine: {machine()}")
    finally:
        for p in procs.values():
            child.stop(p)
        stack.close()  # the benchmark's journal, once its reader is gone
        cluster.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
