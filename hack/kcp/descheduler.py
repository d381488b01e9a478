"""Run descheduler (the reference nodemedic's strategies are compared against) against a local cluster, dry-run only.

* `one_cycle(kubeconfig, policy)`: one descheduling cycle (`--descheduling-interval=0`) and the pods it would
  evict, parsed from its JSON log lines "Evicted pod in dry run mode" (pkg/descheduler/evictions/evictions.go).
* `Continuous`: a descheduler that loops every `interval`, serving its metrics on a free loopback port (for the
  benchmark: `descheduler_loop_duration_seconds`).
* `settled_cycle(kubeconfig, policy)`: the second (or a later) cycle of a looping dry-run descheduler: what the
  comparison test uses, because the check below cannot see every incomplete one-shot run (a plugin that logs no
  pod counts, such as RemovePodsViolatingNodeTaints, can plan over a mirror that has the nodes but not yet the
  pods, and the view can fill up during the cycle).

The parser is strict, so that a run that failed can never read as "evicts nothing": it raises when the process
exits non-zero or times out, when a cycle has no end marker ("Number of evictions/requests"), when the count of
dry-run evictions disagrees with that marker's `totalEvicted`, on any error line other than a reached eviction
limit, and on a real (non dry-run) eviction.

It also checks what the cycle looked at. descheduler's dry-run mirrors the cluster into a fake clientset through
event handlers on the real informers (pkg/descheduler/kubeclientsandbox.go, `registerEventHandlers`); nothing waits
for those handlers, nor for the fake informers to see the copies, before the first cycle (descheduler.go,
`bootstrapDescheduler`). So a one-shot dry run sometimes plans over a partial cluster: no nodes at all
("Skipping descheduling cycle: requires >=2 nodes" found=0) or some nodes/pods missing. `one_cycle` compares the
nodes (and pod counts) the plugins logged with the cluster (Ready nodes matching the policy's `nodeSelector`,
non-terminal pods) and runs again, up to `attempts` times, when the view was incomplete; `CycleResult.attempts`
says how many runs it took.

Stdlib only, like the rest of hack/kcp.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.kcp import paths
from hack.kcp.api import Api
from hack.kcp.ports import free_port

END_MARKER = "Number of evictions/requests"  # descheduler.go runDeschedulerLoop: the last line of every cycle
START_MARKER = "Resetting pod evictor counters"  # the first line of a cycle, at -v 3
DRY_RUN_EVICTION = "Evicted pod in dry run mode"  # evictions.go EvictPod, -v 1
REAL_EVICTION = "Evicted pod"
SKIPPED = "Skipping descheduling cycle: requires >=2 nodes"
LIMIT_ERROR = "Error evicting pod"  # logged with a `limit` key when a maxNoOfPodsToEvict* limit is reached
# Error-level lines that say nothing about the cycle's result. LowNodeUtilization logs its criteria with
# v1.ResourceName keys (lownodeutilization.go:269/271, `l.underCriteria...`); the JSON logger only takes string
# keys, so it reports the call itself as an error and drops the values.
BENIGN_ERRORS = ("non-string key argument passed to logging, ignoring all later arguments",)
# The answer to an eviction of a pod that is gone (evictions.go:656), logged there and again by the plugin ("eviction
# failed", e.g. topologyspreadconstraint.go:251). In a dry run an earlier plugin of the cycle deleted the pod from
# descheduler's in-memory copy of the cluster while a later plugin's lister still held it: nothing was evicted the
# second time, and the cycle's totalEvicted does not count it (CI saw it at 6 nodes).
GONE_ERROR = "pod not found when evicting "
# Log lines that name a node the cycle looked at: LowNodeUtilization/HighNodeUtilization log every node with its
# usage (pods included), RemovePodsViolatingNodeTaints logs "Processing node" (-v 1).
NODE_LINES = ("Node has been classified", "Node is appropriately utilized", "Processing node")

# Where each plugin runs (pkg/framework/plugins/*): descheduler runs every Deschedule plugin before any Balance one.
EXTENSION_POINTS = {
    "RemovePodsViolatingNodeTaints": "deschedule",
    "RemovePodsViolatingNodeAffinity": "deschedule",
    "RemovePodsViolatingInterPodAntiAffinity": "deschedule",
    "RemovePodsHavingTooManyRestarts": "deschedule",
    "PodLifeTime": "deschedule",
    "RemoveFailedPods": "deschedule",
    "LowNodeUtilization": "balance",
    "HighNodeUtilization": "balance",
    "RemoveDuplicates": "balance",
    "RemovePodsViolatingTopologySpreadConstraint": "balance",
}


class DeschedulerError(RuntimeError):
    """descheduler failed, or its output cannot be trusted; the message carries the log's tail."""


# --- policy -----------------------------------------------------------------------------------------------
def policy(plugins: Mapping[str, Mapping[str, Any] | None], *, evictor: Mapping[str, Any] | None = None,
           profile: str = "nodemedic-compare", **top: Any) -> dict[str, Any]:
    """A `descheduler/v1alpha2` policy with one profile running `plugins` (name -> args, None for defaults).

    `evictor` are the DefaultEvictor args; `top` are top-level fields (nodeSelector, maxNoOfPodsToEvictPerNode,
    maxNoOfPodsToEvictPerNamespace, maxNoOfPodsToEvictTotal, ...), passed through as given.
    """
    configs: list[dict[str, Any]] = [{"name": "DefaultEvictor", "args": dict(evictor or {})}]
    enabled: dict[str, list[str]] = {}
    for name, args in plugins.items():
        point = EXTENSION_POINTS.get(name)
        if point is None:
            raise ValueError(f"unknown descheduler plugin {name!r} (known: {', '.join(sorted(EXTENSION_POINTS))})")
        configs.append({"name": name, "args": dict(args)} if args is not None else {"name": name})
        enabled.setdefault(point, []).append(name)
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **{k: v for k, v in top.items() if v is not None},
        "profiles": [{"name": profile, "pluginConfig": configs,
                      "plugins": {point: {"enabled": names} for point, names in enabled.items()}}],
    }


def write_policy(doc: Mapping[str, Any], path: Path) -> Path:
    """descheduler reads its policy with a YAML decoder, and JSON is YAML."""
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


# --- results ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Eviction:
    namespace: str
    name: str
    node: str
    strategy: str
    reason: str
    profile: str


@dataclass
class Cycle:
    """One descheduling cycle as its log tells it."""

    evictions: list[Eviction] = field(default_factory=list)
    total_evicted: int = 0  # the end marker's own count
    skipped_found: int | None = None  # nodes found when the cycle was skipped (fewer than 2 Ready nodes)
    nodes: dict[str, int | None] = field(default_factory=dict)  # node -> pods of the first usage line (None: no count)
    evicted_before_usage: dict[str, int] = field(default_factory=dict)  # node -> evictions logged before that line
    limits_reached: list[str] = field(default_factory=list)
    start_ms: float | None = None
    end_ms: float | None = None

    @property
    def pods(self) -> set[tuple[str, str]]:
        return {(e.namespace, e.name) for e in self.evictions}

    @property
    def seconds(self) -> float | None:
        """From the cycle's first line (START_MARKER, needs -v 3) to its end marker."""
        if self.start_ms is None or self.end_ms is None:
            return None
        return (self.end_ms - self.start_ms) / 1000.0


@dataclass
class CycleResult:
    cycle: Cycle
    wall_seconds: float  # process start to exit: informer start-up and sync included
    attempts: int  # runs it took to get a cycle that saw the whole cluster (see the module docstring)
    incomplete: list[str]  # why each earlier run was discarded
    log_path: Path

    @property
    def pods(self) -> set[tuple[str, str]]:
        return self.cycle.pods

    @property
    def evictions(self) -> list[Eviction]:
        return self.cycle.evictions

    @property
    def cycle_seconds(self) -> float | None:
        return self.cycle.seconds


# --- parsing ----------------------------------------------------------------------------------------------
def _tail(text: str, n: int = 40) -> str:
    return "\n".join(text.splitlines()[-n:])


def parse(text: str, *, where: str = "descheduler output",
          still_writing: bool = False) -> tuple[list[Cycle], Cycle | None]:
    """(the completed cycles, the one still running or None) of a `--logging-format=json` log. Raises
    DeschedulerError on anything that makes the result untrustworthy (see the module docstring).

    `still_writing`: the log of a running descheduler, read while it writes. Its last line, when it has no
    newline yet, is a line being written, not a malformed one: it is left for the next read. A complete line
    that is not JSON is an error either way, and so is a partial last line once the writer has exited.
    """
    cycles: list[Cycle] = []
    cur = Cycle()
    started = False  # any cycle line seen since the last end marker
    lines = text.split("\n")  # JSON escapes every control character, so only "\n" ends a record
    if still_writing:
        lines.pop()  # "" after a final newline, else the line still being written
    for lineno, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            raise DeschedulerError(f"{where}:{lineno}: not a JSON log line (did it crash?): {line[:300]}\n"
                                   f"--- last lines ---\n{_tail(text)}") from None
        if not isinstance(rec, dict):
            raise DeschedulerError(f"{where}:{lineno}: unexpected log record {line[:300]}")
        msg = str(rec.get("msg", ""))
        ts = rec.get("ts")
        if "v" not in rec:  # klog's JSON format marks info lines with a verbosity; error lines have none
            if msg == LIMIT_ERROR and "limit" in rec:
                cur.limits_reached.append(str(rec.get("err", "")))
                continue
            if msg in BENIGN_ERRORS or str(rec.get("err", "")).startswith(GONE_ERROR):
                continue
            raise DeschedulerError(f"{where}:{lineno}: descheduler logged an error: {line[:500]}\n"
                                   f"--- last lines ---\n{_tail(text)}")
        if msg == START_MARKER:
            if started and (cur.evictions or cur.nodes):
                raise DeschedulerError(f"{where}:{lineno}: a new cycle began before the last one ended")
            cur.start_ms = ts
            started = True
        elif msg == DRY_RUN_EVICTION:
            pod = rec.get("pod") or {}
            cur.evictions.append(Eviction(str(pod.get("namespace", "")), str(pod.get("name", "")),
                                          str(rec.get("node", "")), str(rec.get("strategy", "")),
                                          str(rec.get("reason", "")), str(rec.get("profile", ""))))
            started = True
        elif msg == REAL_EVICTION:
            raise DeschedulerError(f"{where}:{lineno}: a real eviction (not dry-run): {line[:300]}")
        elif msg == SKIPPED:
            cur.skipped_found = int(rec.get("found", 0))
            started = True
        elif msg in NODE_LINES:
            node = str((rec.get("node") or {}).get("name", ""))
            usage = rec.get("usage")
            count = int(usage["pods"]) if isinstance(usage, dict) and "pods" in usage else None
            if node not in cur.nodes or (cur.nodes[node] is None and count is not None):
                cur.nodes[node] = count
                cur.evicted_before_usage[node] = sum(1 for e in cur.evictions if e.node == node)
            started = True
        elif msg == END_MARKER:
            cur.total_evicted = int(rec.get("totalEvicted", -1))
            cur.end_ms = ts
            if cur.total_evicted != len(cur.evictions):
                raise DeschedulerError(f"{where}:{lineno}: the cycle logged {len(cur.evictions)} dry-run evictions "
                                       f"but its end marker says totalEvicted={cur.total_evicted}")
            cycles.append(cur)
            cur, started = Cycle(), False
    return cycles, (cur if started else None)


# --- what the cycle should have seen ----------------------------------------------------------------------
def api_from_kubeconfig(kubeconfig: Path) -> Api:
    """An Api for a kubeconfig written by `hack/cluster up` (JSON, client certificate)."""
    doc = json.loads(Path(kubeconfig).read_text())
    ctx_name = doc["current-context"]
    ctx = next(c["context"] for c in doc["contexts"] if c["name"] == ctx_name)
    cl = next(c["cluster"] for c in doc["clusters"] if c["name"] == ctx["cluster"])
    user = next(u["user"] for u in doc["users"] if u["name"] == ctx["user"])
    return Api(cl["server"], Path(cl["certificate-authority"]), Path(user["client-certificate"]),
               Path(user["client-key"]))


def _selector_matches(selector: str, labels: Mapping[str, str]) -> bool:
    """Equality-based label selectors only (k=v, k==v, k!=v, k, !k), comma-separated."""
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        if any(s in term for s in (" in ", " notin ", "(")):
            raise ValueError(f"set-based selector {term!r}: pass `expect` to one_cycle instead")
        if "!=" in term:
            k, v = (s.strip() for s in term.split("!=", 1))
            ok = labels.get(k) != v
        elif "=" in term:
            k, v = (s.strip() for s in term.replace("==", "=").split("=", 1))
            ok = labels.get(k) == v
        elif term.startswith("!"):
            ok = term[1:].strip() not in labels
        else:
            ok = term in labels
        if not ok:
            return False
    return True


def _descheduler_ready(node: Mapping[str, Any]) -> bool:
    # node.IsReady (pkg/descheduler/node/node.go): only a Ready condition that is not True excludes a node.
    return all(c.get("status") == "True" for c in node.get("status", {}).get("conditions") or []
               if c.get("type") == "Ready")


@dataclass
class View:
    """What a cycle must look at: Ready nodes matching the policy's nodeSelector, with their non-terminal pods."""

    pods: dict[str, int]  # node -> pods
    cordoned: set[str] = field(default_factory=set)  # HighNodeUtilization does not log a cordoned, busy node


def cluster_view(api: Api, node_selector: str = "") -> View:
    nodes = [n for n in api.get("/api/v1/nodes")["items"]
             if _descheduler_ready(n) and _selector_matches(node_selector, n["metadata"].get("labels") or {})]
    view = {n["metadata"]["name"]: 0 for n in nodes}
    cordoned = {n["metadata"]["name"] for n in nodes if n.get("spec", {}).get("unschedulable")}
    cont = ""
    while True:
        page = api.get(f"/api/v1/pods?limit=5000{'&continue=' + cont if cont else ''}")
        for p in page["items"]:
            node = p.get("spec", {}).get("nodeName", "")
            if node in view and p.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                view[node] += 1
        cont = page.get("metadata", {}).get("continue", "")
        if not cont:
            return View(view, cordoned)


def incomplete(cycle: Cycle, view: View) -> str | None:
    """Why `cycle` did not look at the whole of `view`, or None when it did."""
    expect = view.pods
    if cycle.skipped_found is not None:
        if len(expect) >= 2:
            return (f"cycle skipped: descheduler found {cycle.skipped_found} Ready node(s), "
                    f"the cluster has {len(expect)}")
        return None
    if not cycle.nodes:
        return None  # no plugin that names nodes ran (or none logged): nothing to check against
    missing = sorted(set(expect) - set(cycle.nodes) - view.cordoned)
    extra = sorted(set(cycle.nodes) - set(expect))
    if missing or extra:
        return f"nodes seen differ from the cluster: missing {missing[:10]} ({len(missing)}), extra {extra[:10]}"
    wrong = []
    for node, seen in cycle.nodes.items():
        if seen is None:
            continue
        # Pods evicted earlier in this cycle (an earlier plugin) may already be gone from the fake client.
        low, high = expect[node] - cycle.evicted_before_usage.get(node, 0), expect[node]
        if not low <= seen <= high:
            wrong.append(f"{node}: saw {seen} pods, cluster has {expect[node]}")
    if wrong:
        return f"pod counts seen differ from the cluster: {wrong[:10]} ({len(wrong)} nodes)"
    return None


# --- running ----------------------------------------------------------------------------------------------
def _argv(kubeconfig: Path, policy_file: Path, *, interval: str, verbosity: int, extra: list[str]) -> list[str]:
    binary = paths.binary("descheduler")
    if not binary.exists():
        raise DeschedulerError(f"{binary} is missing: run `hack/cluster build`")
    return [str(binary), f"--kubeconfig={kubeconfig}", f"--policy-config-file={policy_file}", "--dry-run",
            f"--descheduling-interval={interval}", f"-v={verbosity}", "--logging-format=json", *extra]


def coverage(cycle: Cycle, view: View) -> tuple[float, float]:
    """(share of the view's nodes, share of its pods) the cycle's plugins logged; (nan, nan) when none logged."""
    if not cycle.nodes:
        return (0.0, 0.0) if cycle.skipped_found is not None else (float("nan"), float("nan"))
    nodes = sum(1 for n in view.pods if n in cycle.nodes) / max(1, len(view.pods))
    counted = {n: c for n, c in cycle.nodes.items() if c is not None and n in view.pods}
    total = sum(view.pods[n] for n in counted)
    pods = sum(counted.values()) / total if total else float("nan")
    return nodes, pods


def run_once(kubeconfig: Path, policy_file: Path, log_path: Path, *, verbosity: int = 3,
             timeout: float = 300.0) -> tuple[Cycle, float]:
    """One `--descheduling-interval=0` process: its cycle (strictly parsed) and its wall time. No view check."""
    argv = _argv(kubeconfig, policy_file, interval="0s", verbosity=verbosity, extra=["--secure-port=0"])
    # A scratch working directory: descheduler's default --cert-dir is relative to it.
    with tempfile.TemporaryDirectory(prefix="descheduler-") as cwd, open(log_path, "wb") as log:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            # With interval 0 a failing cycle is retried at once, forever (wait.NonSlidingUntil with period 0).
            proc.kill()
            proc.wait()
            text = log_path.read_text(errors="replace")
            raise DeschedulerError(f"descheduler did not finish one cycle in {timeout:g}s; log {log_path}:\n"
                                   f"{_tail(text)}") from None
        wall = time.monotonic() - t0
    text = log_path.read_text(errors="replace")
    if code != 0:
        raise DeschedulerError(f"descheduler exited with {code}; log {log_path}:\n{_tail(text)}")
    cycles, running = parse(text, where=str(log_path))
    if running is not None or len(cycles) != 1:
        raise DeschedulerError(f"expected exactly one finished cycle, got {len(cycles)} finished"
                               f"{' and one without its end marker' if running else ''}; log {log_path}:\n"
                               f"{_tail(text)}")
    return cycles[0], wall


def one_cycle(kubeconfig: Path, policy_doc: Mapping[str, Any], *, workdir: Path | None = None,
              expect: View | None = None, check_view: bool = True, attempts: int = 10,
              verbosity: int = 3, timeout: float = 300.0) -> CycleResult:
    """Run descheduler in dry-run for exactly one cycle with `policy_doc`; the pods it would evict.

    `expect` is what the cycle must have looked at; by default it is read from the cluster
    (Ready nodes matching the policy's nodeSelector). A run that saw less is discarded and run again.
    """
    own_dir = workdir is None
    work = Path(tempfile.mkdtemp(prefix="descheduler-cycle-")) if workdir is None else workdir
    work.mkdir(parents=True, exist_ok=True)
    policy_file = write_policy(policy_doc, work / "descheduler-policy.json")
    if check_view and expect is None:
        expect = cluster_view(api_from_kubeconfig(kubeconfig), str(policy_doc.get("nodeSelector") or ""))
    discarded: list[str] = []
    for attempt in range(1, attempts + 1):
        log_path = work / f"descheduler-{attempt}.log"
        cycle, wall = run_once(kubeconfig, policy_file, log_path, verbosity=verbosity, timeout=timeout)
        why = incomplete(cycle, expect) if check_view and expect is not None else None
        if why is None:
            if own_dir:
                # keep the log of the run that counted; drop the rest of the scratch directory
                for other in work.iterdir():
                    if other != log_path:
                        other.unlink()
            return CycleResult(cycle, wall, attempt, discarded, log_path)
        discarded.append(f"run {attempt}: {why}")
    raise DeschedulerError(f"descheduler saw an incomplete cluster in all {attempts} runs:\n" + "\n".join(discarded)
                           + f"\nlogs in {work}")


def parse_metrics(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Prometheus text format -> {(sample name, sorted labels): value}."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: list[tuple[str, str]] = []
        rest = rest.rstrip("}")
        while rest:
            key, _, rest = rest.partition('="')
            val = []
            i = 0
            while i < len(rest):
                if rest[i] == "\\" and i + 1 < len(rest):
                    val.append(rest[i + 1])
                    i += 2
                    continue
                if rest[i] == '"':
                    break
                val.append(rest[i])
                i += 1
            labels.append((key.strip(", "), "".join(val)))
            rest = rest[i + 1:].lstrip(",")
        out[(name, tuple(sorted(labels)))] = float(value)
    return out


def metric_sum(samples: Mapping[tuple[str, tuple[tuple[str, str], ...]], float], name: str,
               **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in samples.items()
               if n == name and all((k, val) in ls for k, val in labels.items()))


class Continuous:
    """descheduler looping every `interval` seconds in dry-run, metrics on a free loopback port.

    `with Continuous(kubeconfig, policy_doc, interval=10, workdir=d) as d: d.wait_cycles(3); d.metrics()`.
    """

    def __init__(self, kubeconfig: Path, policy_doc: Mapping[str, Any], *, interval: float, workdir: Path,
                 verbosity: int = 1) -> None:
        self.kubeconfig, self.interval, self.workdir, self.verbosity = kubeconfig, interval, workdir, verbosity
        workdir.mkdir(parents=True, exist_ok=True)
        self.policy_file = write_policy(policy_doc, workdir / "descheduler-policy.json")
        self.log_path = workdir / "descheduler-continuous.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self._ctx = ssl.create_default_context()
        self._ctx.check_hostname = False
        self._ctx.verify_mode = ssl.CERT_NONE  # descheduler serves a self-signed certificate on loopback

    def start(self, timeout: float = 60.0) -> None:
        certs = self.workdir / "certs"
        certs.mkdir(exist_ok=True)
        argv = _argv(self.kubeconfig, self.policy_file, interval=f"{self.interval:g}s", verbosity=self.verbosity,
                     extra=[f"--secure-port={self.port}", "--bind-address=127.0.0.1", f"--cert-dir={certs}"])
        self.started_at = time.time()  # the clock of the log's `ts` (ms since the epoch)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(argv, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise DeschedulerError(f"descheduler exited with {self.proc.returncode}; log {self.log_path}:\n"
                                       f"{_tail(self.log())}")
            with contextlib.suppress(OSError):
                self.metrics_text()
                return
            if time.monotonic() > deadline:
                raise DeschedulerError(f"descheduler served no metrics in {timeout:g}s; log:\n{_tail(self.log())}")
            time.sleep(0.2)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def cycles(self) -> list[Cycle]:
        """Every finished cycle so far (strictly parsed: raises on errors in the log)."""
        if self.proc is not None and self.proc.poll() is not None:
            raise DeschedulerError(f"descheduler exited with {self.proc.returncode}; log:\n{_tail(self.log())}")
        return parse(self.log(), where=str(self.log_path), still_writing=True)[0]

    def wait_cycles(self, count: int, timeout: float) -> list[Cycle]:
        deadline = time.monotonic() + timeout
        while True:
            done = self.cycles()
            if len(done) >= count:
                return done
            if time.monotonic() > deadline:
                raise DeschedulerError(f"only {len(done)} of {count} cycles in {timeout:g}s; log:\n{_tail(self.log())}")
            time.sleep(0.2)

    def metrics_text(self) -> str:
        with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/metrics", timeout=5, context=self._ctx) as r:
            body: bytes = r.read()
        return body.decode()

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return parse_metrics(self.metrics_text())

    def loop_duration(self) -> tuple[float, float]:
        """(count, sum) of `descheduler_loop_duration_seconds`."""
        m = self.metrics()
        return (metric_sum(m, "descheduler_loop_duration_seconds_count"),
                metric_sum(m, "descheduler_loop_duration_seconds_sum"))

    def stop(self, grace: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)  # our own child, by its PID
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> Continuous:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def continuous(kubeconfig: Path, policy_doc: Mapping[str, Any], *, interval: float,
               workdir: Path, verbosity: int = 1) -> Iterator[Continuous]:
    with Continuous(kubeconfig, policy_doc, interval=interval, workdir=workdir, verbosity=verbosity) as d:
        yield d


def settled_cycle(kubeconfig: Path, policy_doc: Mapping[str, Any], *, workdir: Path, expect: View | None = None,
                  interval: float = 1.0, timeout: float = 120.0) -> CycleResult:
    """A cycle of a looping dry-run descheduler after its first one: by then the dry-run mirror has caught up
    with the informers (a one-shot run races it, see the module docstring), and every pod the previous cycle
    "evicted" has been restored. The second cycle is taken, or a later one when the check of what it saw
    (`expect`, read from the cluster by default) still finds it incomplete."""
    if expect is None:
        expect = cluster_view(api_from_kubeconfig(kubeconfig), str(policy_doc.get("nodeSelector") or ""))
    d = Continuous(kubeconfig, policy_doc, interval=interval, workdir=workdir, verbosity=3)
    t0 = time.monotonic()
    d.start()
    try:
        discarded: list[str] = []
        for want in range(2, 12):
            cycles = d.wait_cycles(want, timeout=max(1.0, timeout - (time.monotonic() - t0)))
            why = incomplete(cycles[want - 1], expect)
            if why is None:
                return CycleResult(cycles[want - 1], time.monotonic() - t0, want, discarded, d.log_path)
            discarded.append(f"cycle {want}: {why}")
        raise DeschedulerError("descheduler saw an incomplete cluster in cycles 2-11:\n" + "\n".join(discarded))
    finally:
        d.stop()
