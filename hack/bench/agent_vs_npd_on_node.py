"""Benchmark: the nodemedic agent pod and node-problem-detector's pod side by side on the real node, each as its
project ships it, at steady state: RSS and CPU of their containers, read from their cgroups.

- nodemedic: the Helm chart as it ships (values: image.repository, image.tag, image.pullPolicy=Never only), so the
  agent runs its shipped config (deploy/agent/default.yaml: every built-in check at its defaults, the shipped
  kernel and GPU log monitors), from the image built from the repository's Dockerfile (hack/kcp/image.py).
- node-problem-detector v1.36.0: its own deployment/ manifests (rbac.yaml, node-problem-detector-config.yaml,
  node-problem-detector.yaml, as its kustomization lists them) from the module's source (`go mod download`);
  only the DaemonSet's container is changed: image and imagePullPolicy=Never, and its `--config.system-log-monitor`
  loses the monitors whose plugin is journald (docker-monitor.json, the Docker daemon's journal), because this
  binary has no journald and NPD exits on a monitor whose plugin it lacks ("No create function found for plugin
  journald"). Its default config is otherwise upstream's ConfigMap as is: kernel-monitor.json and
  readonly-monitor.json, both kmsg. Its resources too (limits cpu 10m, memory 80Mi: CFS caps it at 1% of a core;
  the table shows how often it was throttled); the chart's agent has no CPU limit.

NPD's image is built the way ours is: from its Dockerfile's final stage, with buildah, on the Debian bookworm base
hack/kcp/image.py makes with mmdebstrap (`localhost/nodemedic-base:<key>`), into a docker-archive in
~/.cache/nodemedic/images/ (npd-<version>-<key>.tar, keyed by the NPD version and a hash of the Containerfile and
the base it names), imported into the real node's containerd once the cluster is up. How it differs from upstream's:
- no builder stage (its golang:1.26.5-bookworm image cannot be pulled here): the binary is the one
  hack/bench/agent_vs_npd.py's build_npd() makes from the Go module proxy, CGO_ENABLED=0, so without the journald
  build tag (upstream's Makefile builds it with cgo and journald);
- only /node-problem-detector and /config/ are copied: not the health-checker (nor log-counter, journald only)
  that upstream puts in /home/kubernetes/bin/ for its other manifests; config/ comes from the module zip, whose
  files have no mode bits: 0644, scripts (*.sh) 0755, as in the git tree;
- the base is Debian bookworm from mmdebstrap (minbase plus the Python 3.11 our image needs, which NPD does not
  use), not registry.k8s.io/build-image/debian-base:bookworm-v1.0.8; the same packages are installed on it
  (util-linux, bash, libsystemd-dev, as debian-base's clean-install does), and the same /etc/localtime step, the
  same ENTRYPOINT.

A private cluster (`bench-agent-npd-node`: two kwok nodes and the real node) runs both, its kubelet writing the
Node's status at kubelet's default pace (nodeStatusReportFrequency 5m; the tests' real node writes it every 10 s,
and the agent, whose repair worker watches its own Node, was woken by each); the real node is cordoned while the
chart installs, so the remediator's pods go to the kwok nodes and the only pods on the real node are the
two measured (and nothing of ours runs beside them). After a warm-up, both containers' cgroups (cgroup v1,
cgroupfs driver) are read once a second for --seconds: memory.stat total_rss and memory.usage_in_bytes, and
cpuacct.usage and cpu.stat at both ends of the window (CPU as % of one core, throttled CFS periods). Nothing is
written to /dev/kmsg: this is steady state only. The API server's audit log counts each one's requests in the
window. The cluster is always torn down. It refuses to run (exit 2) while the real node is taken: one real node
per machine, and hack/kcp/realnode.LOCK says who has it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import yaml
from kubernetes import client, config

from hack.bench.agent_vs_npd import (
    AGENT,
    MONITOR_FLAG,
    NPD,
    NPD_VERSION,
    build_npd,
    daemonset_monitors,
    npd_source,
)
from hack.bench.lib.cluster import unbuilt
from hack.bench.lib.comparison import Comparison, format_ratio
from hack.bench.lib.report import note
from hack.bench.lib.stats import summarize
from hack.bench.lib.table import Column, table
from hack.kcp import audit, build, controlplane, image, paths, realnode
from hack.kcp.measure import wait
from hack.kcp.steps import log, run

ROOT = Path(__file__).resolve().parents[2]

CLUSTER = "bench-agent-npd-node"
KWOK_NODES = 2
STATUS_REPORT = "5m"  # kubelet's default nodeStatusReportFrequency: the Node's status as production nodes write it
CHART = ROOT / "deploy" / "helm" / "nodemedic"
NAMESPACE = "nodemedic"
NPD_NAMESPACE = "kube-system"  # upstream's manifests name it
NPD_REPOSITORY = "localhost/node-problem-detector"
NPD_MANIFESTS = ("rbac.yaml", "node-problem-detector-config.yaml", "node-problem-detector.yaml")
AGENT_PODS, NPD_PODS = "app.kubernetes.io/component=agent", "app=node-problem-detector"  # label selectors
MIB = 2**20

# node-problem-detector's Dockerfile, final stage, on our base (the module docstring says how it differs).
ENTRYPOINT = ["/node-problem-detector",
              "--config.system-log-monitor=/config/kernel-monitor.json,/config/readonly-monitor.json"]
CONTAINERFILE = """\
ARG BASE
FROM ${BASE}

# debian-base's clean-install, spelled out.
RUN apt-get update \\
 && apt-get install -y --no-install-recommends util-linux bash libsystemd-dev \\
 && apt-get clean -y \\
 && rm -rf /var/cache/debconf/* /var/lib/apt/lists/* /var/log/* /tmp/* /var/tmp/*

# Avoid symlink of /etc/localtime.
RUN test -h /etc/localtime && rm -f /etc/localtime && cp /usr/share/zoneinfo/UTC /etc/localtime || true

COPY node-problem-detector /node-problem-detector
COPY config/ /config
ENTRYPOINT {entrypoint}
""".replace("{entrypoint}", json.dumps(ENTRYPOINT))


# --- NPD's image ----------------------------------------------------------------------------------------------------
def npd_key() -> str:
    base = f"{image.BASE_REPOSITORY}:{image.base_key()}"
    return hashlib.sha256("\0".join((NPD_VERSION, CONTAINERFILE, base)).encode()).hexdigest()[:16]


def npd_reference() -> str:
    return f"{NPD_REPOSITORY}:{NPD_VERSION}-{npd_key()}"


def npd_archive() -> Path:
    return paths.images_dir() / f"npd-{NPD_VERSION}-{npd_key()}.tar"


def build_npd_image(binary: Path, source: Path) -> Path:
    """NPD's final stage built with buildah into npd_archive() (kept: the archive is the cache)."""
    if npd_archive().is_file():
        return npd_archive()
    env = dict(os.environ)
    paths.images_dir().mkdir(parents=True, exist_ok=True)
    base = image.ensure_base(env, [])
    ref = npd_reference()
    with tempfile.TemporaryDirectory(prefix="npd-image-", dir=paths.images_dir()) as work:
        context = Path(work) / "context"
        context.mkdir()
        shutil.copy2(binary, context / "node-problem-detector")
        shutil.copytree(source / "config", context / "config")
        for p in (context / "config").rglob("*"):  # module zips carry no modes: the git tree's
            p.chmod(0o755 if p.is_dir() or p.suffix == ".sh" else 0o644)
        (context / "Containerfile").write_text(CONTAINERFILE)
        run(image.buildah("bud", "--pull-never", "--isolation=chroot", f"--build-arg=BASE={base}", f"--tag={ref}",
                          "--file=Containerfile", "."), cwd=context, env=env)
        try:
            container = run(image.buildah("from", ref), cwd=context, env=env).strip().splitlines()[-1]
            try:
                log("in the image: node-problem-detector --version: " + run(image.buildah(
                    "run", "--isolation=chroot", container, "--", "/node-problem-detector", "--version"),
                    cwd=context, env=env).strip())
            finally:
                subprocess.run(image.buildah("rm", container), capture_output=True, check=False)
            out = Path(work) / "npd.tar"
            run(image.buildah("push", "--quiet", ref, f"docker-archive:{out}:{ref}"), cwd=context, env=env)
            for old in paths.images_dir().glob("npd-*.tar"):  # one NPD image in the cache
                old.unlink()
            out.rename(npd_archive())
        finally:
            subprocess.run(image.buildah("rmi", ref), capture_output=True, check=False)
    return npd_archive()


def layers(archive: Path) -> dict[str, int]:
    """A docker-archive's layers: name -> size in bytes (a layer's name is its digest, so shared ones match)."""
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        return {name: tar.getmember(name).size for name in manifest[0]["Layers"]}


def sizes_line(agent_archive: Path, npd: Path) -> str:
    if not agent_archive.is_file():
        return (f"node-problem-detector's image: {npd.stat().st_size / MIB:.0f} MiB as a docker-archive "
                f"(uncompressed); nodemedic's image for this code is not built ({agent_archive.name})")
    ours, theirs = layers(agent_archive), layers(npd)
    shared = sum(size for name, size in ours.items() if name in theirs)
    return (f"images as docker-archives (uncompressed): nodemedic {agent_archive.stat().st_size / MIB:.0f} MiB, "
            f"node-problem-detector {npd.stat().st_size / MIB:.0f} MiB; the Debian base layer both start from "
            f"{shared / MIB:.0f} MiB (with Python 3.11, which only nodemedic uses); own layers: nodemedic "
            f"{sum(ours.values()) / MIB - shared / MIB:.0f} MiB, node-problem-detector "
            f"{sum(theirs.values()) / MIB - shared / MIB:.0f} MiB")


# --- the cluster ----------------------------------------------------------------------------------------------------
def tool(cluster: controlplane.Cluster, name: str, *args: str) -> str:
    argv = [str(paths.binary(name)), f"--kubeconfig={cluster.kubeconfig}", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{name} {' '.join(args)}: {done.stderr[-3000:]}")
    return done.stdout


def npd_daemonset(source: Path, reference: str, out: Path) -> tuple[Path, list[str], list[str]]:
    """Upstream's DaemonSet with our image, pullPolicy Never and no journald monitor; the monitors kept and dropped."""
    ds = yaml.safe_load((source / "deployment" / "node-problem-detector.yaml").read_text())
    monitors = daemonset_monitors(source)
    container = ds["spec"]["template"]["spec"]["containers"][0]
    container.update(image=reference, imagePullPolicy="Never")
    command = container["command"]
    at = next(i for i, arg in enumerate(command) if arg.startswith(MONITOR_FLAG))
    files = command[at].removeprefix(MONITOR_FLAG).split(",")
    dropped = [f for f in files if monitors[Path(f).name]["plugin"] == "journald"]
    kept = [f for f in files if f not in dropped]
    command[at] = MONITOR_FLAG + ",".join(kept)
    out.write_text(yaml.safe_dump(ds, sort_keys=False))
    return out, kept, dropped


@dataclass(frozen=True)
class PodSeen:
    """What the benchmark reads of a measured pod, taken from the API's V1Pod (where every field may be absent)."""

    name: str
    uid: str
    ready: bool  # Running, every container ready
    restarts: int
    container_id: str  # the first container's, without the runtime's prefix ("" before it starts)
    resources: str  # the first container's requests and limits, as printed


def seen(pod: client.V1Pod) -> PodSeen:
    meta, status, spec = pod.metadata or client.V1ObjectMeta(), pod.status or client.V1PodStatus(), pod.spec
    containers = status.container_statuses or []
    r = (spec.containers[0].resources if spec else None) or client.V1ResourceRequirements()
    return PodSeen(name=meta.name or "", uid=meta.uid or "",
                   ready=status.phase == "Running" and all(c.ready for c in containers),
                   restarts=sum(c.restart_count for c in containers),
                   container_id=(containers[0].container_id or "").split("://", 1)[-1] if containers else "",
                   resources=f"requests {r.requests or {}}, limits {r.limits or {}}")


def pod_on_real_node(core: client.CoreV1Api, namespace: str, selector: str) -> PodSeen | None:
    return next((seen(p) for p in core.list_namespaced_pod(namespace, label_selector=selector).items
                 if p.spec and p.spec.node_name == realnode.NAME and p.metadata
                 and p.metadata.deletion_timestamp is None), None)


def both_running(core: client.CoreV1Api) -> tuple[PodSeen, PodSeen] | None:
    """The agent's pod and NPD's on the real node, once both run and are ready."""
    a = pod_on_real_node(core, NAMESPACE, AGENT_PODS)
    n = pod_on_real_node(core, NPD_NAMESPACE, NPD_PODS)
    return (a, n) if a and a.ready and n and n.ready else None


def scheduled(core: client.CoreV1Api, selector: str) -> list[str] | None:
    """The nodes the pods of `selector` in NAMESPACE are bound to, once every one is bound."""
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=selector).items
    bound = [p.spec.node_name for p in pods if p.spec and p.spec.node_name]
    return bound if pods and len(bound) == len(pods) else None


def cordon(core: client.CoreV1Api, node: str, on: bool) -> None:
    core.patch_node(node, {"spec": {"unschedulable": on}})


# --- the measurement ------------------------------------------------------------------------------------------------
def container_cgroup(pod: PodSeen, controller: str) -> Path:
    """The cgroup (cgroup v1, cgroupfs driver) of the pod's container on the real node."""
    found = list(Path("/sys/fs/cgroup", controller, "kubepods").glob(f"**/pod{pod.uid}/{pod.container_id}"))
    if len(found) != 1:
        raise RuntimeError(f"no single {controller} cgroup for {pod.name}'s container: {found}")
    return found[0]


def cpu_stat(cgroup: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in (cgroup / "cpu.stat").read_text().splitlines())}


@dataclass
class Measured:
    """One measured container: its cgroups, the memory samples, and its CPU counters at the window's start."""

    pod: PodSeen
    memory: Path = field(init=False)
    cpuacct: Path = field(init=False)
    cpu: Path = field(init=False)
    rss: list[int] = field(default_factory=list)
    usage: list[int] = field(default_factory=list)
    start: tuple[int, dict[str, int]] = field(default_factory=lambda: (0, {}))

    def __post_init__(self) -> None:
        self.memory, self.cpuacct, self.cpu = (container_cgroup(self.pod, c) for c in ("memory", "cpuacct", "cpu"))

    def cpu_now(self) -> tuple[int, dict[str, int]]:
        """cpuacct.usage (ns) and cpu.stat (CFS periods, throttling)."""
        return int((self.cpuacct / "cpuacct.usage").read_text()), cpu_stat(self.cpu)

    def sample(self) -> None:
        stat = dict(line.split() for line in (self.memory / "memory.stat").read_text().splitlines())
        self.rss.append(int(stat["total_rss"]))
        self.usage.append(int((self.memory / "memory.usage_in_bytes").read_text()))

    def peak(self) -> int:
        return int((self.memory / "memory.max_usage_in_bytes").read_text())


def agent_check_runs(port: int) -> dict[str, float]:
    """Runs per check so far, from the agent's /metrics (host network: this machine's port); empty if unreachable."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
            text = answer.read().decode()
    except OSError as e:
        note(f"the agent's /metrics on port {port}: {e}")
        return {}
    prefix = 'nodemedic_agent_check_duration_seconds_count{check="'
    return {line[len(prefix):].split('"', 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith(prefix)}


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


UNIT_DIGITS = {"": 0, "%": 3, "MiB": 1, "ms": 0}


def comparison_table(rows: list[Comparison]) -> list[str]:
    """One line per quantity: the agent's value, NPD's, and their ratio; no ratio with a 0 on either side."""
    def cell(value: float, unit: str) -> str:
        return f"{value:.{UNIT_DIGITS[unit]}f} {unit}".rstrip()

    columns = (Column("", "<", 48), Column(AGENT, ">", 18), Column(NPD, ">", 24), Column("agent / NPD", ">", 14))
    return table(columns, [(c.label, cell(c.ours, c.unit), cell(c.theirs, c.unit),
                            format_ratio(c.ratio if c.ours else None, undefined="-")) for c in rows])


def measure(cluster: controlplane.Cluster, args: argparse.Namespace, agent_image: str, npd_image: Path,
            source: Path) -> int:
    api = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api)
    t0 = time.monotonic()
    subprocess.run(["ctr", f"--address={realnode.SOCKET}", "--namespace=k8s.io", "images", "import", str(npd_image)],
                   capture_output=True, text=True, timeout=300, check=True)
    note(f"real node: imported {npd_image.name} into containerd in {time.monotonic() - t0:.1f}s")

    # Cordoned while installing: the remediator's Deployment goes to the kwok nodes; DaemonSets ignore a cordon.
    cordon(core, realnode.NAME, True)
    repository, tag = agent_image.rsplit(":", 1)
    tool(cluster, "helm", "install", "nodemedic", str(CHART), f"--namespace={NAMESPACE}", "--create-namespace",
         f"--set=image.repository={repository}", f"--set=image.tag={tag}", "--set=image.pullPolicy=Never")
    with tempfile.TemporaryDirectory(prefix="bench-npd-") as tmp:
        daemonset, kept, dropped = npd_daemonset(source, npd_reference(), Path(tmp) / "node-problem-detector.yaml")
        deployment = source / "deployment"
        tool(cluster, "kubectl", "apply", "-f", str(deployment / NPD_MANIFESTS[0]), "-f",
             str(deployment / NPD_MANIFESTS[1]), "-f", str(daemonset))
    remediators = wait(partial(scheduled, core, "app.kubernetes.io/component=remediator"), 120,
                       "the remediator's pods scheduled", poll=1.0)
    try:
        found = wait(partial(both_running, core), 180, f"both pods Running and ready on {realnode.NAME}", poll=1.0)
    except TimeoutError:
        print(tool(cluster, "kubectl", "get", "pods", "-A", "-o", "wide"), file=sys.stderr)
        raise
    finally:
        cordon(core, realnode.NAME, False)
    pods = {AGENT: Measured(found[0]), NPD: Measured(found[1])}
    print(f"on {realnode.NAME}: {found[0].name} and {found[1].name} Running "
          f"{time.monotonic() - t0:.0f}s after the image import; remediator pods on "
          f"{sorted(set(remediators))}; warm-up {args.warmup:.0f}s", flush=True)
    time.sleep(args.warmup)

    port = int(yaml.safe_load((CHART / "values.yaml").read_text())["agent"]["port"])
    runs_before = agent_check_runs(port)
    _, offset = audit.read(cluster.audit_log)
    load_before = loadavg()
    for p in pods.values():
        p.start = p.cpu_now()
    t_start = time.monotonic()
    while (elapsed := time.monotonic() - t_start) < args.seconds:
        for p in pods.values():
            p.sample()
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t_start - elapsed)))
    elapsed = time.monotonic() - t_start
    end = {name: p.cpu_now() for name, p in pods.items()}
    requests, _ = audit.read(cluster.audit_log, offset)
    runs = {k: v - runs_before.get(k, 0) for k, v in agent_check_runs(port).items()}
    after = {AGENT: pod_on_real_node(core, NAMESPACE, AGENT_PODS), NPD: pod_on_real_node(core, NPD_NAMESPACE, NPD_PODS)}
    restarts = {name: pod.restarts if pod else 0 for name, pod in after.items()}
    if any(pod is None or pod.uid != pods[name].pod.uid or pod.restarts for name, pod in after.items()):
        print(f"a measured pod was replaced or restarted during the window: restarts {restarts}", file=sys.stderr)
        return 1

    cpu = {name: (end[name][0] - p.start[0]) / 1e9 / elapsed * 100 for name, p in pods.items()}
    periods = {name: end[name][1]["nr_periods"] - p.start[1]["nr_periods"] for name, p in pods.items()}
    throttled = {name: end[name][1]["nr_throttled"] - p.start[1]["nr_throttled"] for name, p in pods.items()}
    calls = {name: sum(audit.count(requests, name).values()) for name in pods}
    a, n = pods[AGENT], pods[NPD]
    print(f"\nsteady state on {realnode.NAME}, {elapsed:.0f}s window after a {args.warmup:.0f}s warm-up, "
          f"{len(a.rss)} samples of each container's cgroup (cgroup v1); the kubelet writes an unchanged Node status "
          f"every {STATUS_REPORT}:")
    rss = {name: summarize(p.rss) for name, p in pods.items()}
    usage = {name: summarize(p.usage) for name, p in pods.items()}
    for line in comparison_table([
        Comparison("RSS (memory.stat total_rss), mean", rss[AGENT].mean / MIB, rss[NPD].mean / MIB, "MiB"),
        Comparison("RSS (memory.stat total_rss), max", rss[AGENT].maximum / MIB, rss[NPD].maximum / MIB, "MiB"),
        Comparison("memory.usage_in_bytes, mean", usage[AGENT].mean / MIB, usage[NPD].mean / MIB, "MiB"),
        Comparison("memory.usage_in_bytes, max", usage[AGENT].maximum / MIB, usage[NPD].maximum / MIB, "MiB"),
        Comparison("memory.max_usage_in_bytes (peak since start)", a.peak() / MIB, n.peak() / MIB, "MiB"),
        Comparison("CPU, % of one core (cpuacct.usage delta)", cpu[AGENT], cpu[NPD], "%"),
        Comparison("CPU time in the window (cpuacct.usage delta)", cpu[AGENT] * elapsed * 10, cpu[NPD] * elapsed * 10,
                   "ms"),
        Comparison("CFS periods throttled (cpu.stat)", throttled[AGENT], throttled[NPD], ""),
        Comparison("CFS periods with a quota (cpu.stat nr_periods)", periods[AGENT], periods[NPD], ""),
        Comparison("API requests in the window (audit log)", calls[AGENT], calls[NPD], ""),
    ]):
        print(line)
    print(f"\nresources: {AGENT} {a.pod.resources}; {NPD} {n.pod.resources} (both as shipped)")
    print(f"{AGENT}: image {agent_image}, the chart {CHART.relative_to(ROOT)} as it ships, the shipped agent "
          "config (every built-in check at its defaults, the shipped kernel and GPU log monitors); check runs in "
          "the window: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(runs.items())))
    started = [line.split("]", 1)[-1].strip() for line in tool(
        cluster, "kubectl", "logs", "-n", NPD_NAMESPACE, n.pod.name).splitlines()
        if "Start log monitor" in line or "Use log watcher" in line]
    print(f"{NPD}: {NPD_VERSION}, image {npd_reference()}, upstream's deployment/ manifests and default ConfigMap; "
          f"system-log-monitors {', '.join(kept)} (dropped, journald: {', '.join(dropped) or 'none'}); "
          f"its log: {'; '.join(started)}")
    print(f"machine: {' '.join(filter(None, platform.uname()))}; nproc {os.cpu_count()}; {cpu_model()}; load average "
          f"{load_before} before the window, {loadavg()} after (the whole machine: control plane, kubelet and more)")
    print(sizes_line(paths.images_dir() / f"nodemedic-{agent_image.rsplit(':', 1)[1]}.tar", npd_image))
    return 0


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "CPU model unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=120.0, help="steady-state sampling window (default 120)")
    ap.add_argument("--warmup", type=float, default=60.0, help="seconds after both pods run, before it (default 60)")
    ap.add_argument("--build-only", action="store_true",
                    help="build NPD's binary and image, print the image sizes, start nothing (no real node needed)")
    args = ap.parse_args()
    if unbuilt(build.BINARIES if args.build_only else list(build.COMPONENTS)):
        return 2
    cluster = controlplane.Cluster.named(CLUSTER)
    if not args.build_only and realnode.LOCK.exists():
        owner = realnode.LOCK.read_text().strip()
        mine = f" (this benchmark's, left by a run that died: `hack/cluster down --name {CLUSTER}`)" \
            if owner == str(cluster.state_dir) else ""
        print(f"the real node is taken: {realnode.LOCK} names the cluster at {owner}{mine}. One real node runs on a "
              "machine at a time; run this once that cluster is down.", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    source = npd_source()
    npd_image = build_npd_image(build_npd(), source)
    print(f"{NPD} {NPD_VERSION}: source {source}, image {npd_reference()} at {npd_image} "
          f"({time.monotonic() - t0:.0f}s to build or find)", flush=True)
    if args.build_only:
        print(sizes_line(image.archive(), npd_image))
        return 0
    agent_image = image.reference()  # the code as it is now: the image the real node imports as it starts
    if problems := realnode.preflight():
        print("the real node cannot start:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    try:
        cluster.up(KWOK_NODES, real_nodes=1, audit=True, timeout=240, status_report=STATUS_REPORT)
        return measure(cluster, args, agent_image, npd_image, source)
    finally:
        for line in cluster.down():
            note(line)
        if left := realnode.traces():
            print(f"the real node left traces: {left}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
