"""`up` and `down` of one local control plane: etcd, kube-apiserver, KCM, kube-scheduler and kwok.

State of a cluster lives in one directory (default ~/.cache/nodemedic/clusters/<name>): pki/, etcd/,
logs/, kubeconfig and state.json (ports and the PID + start time of every process it started).
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hack.kcp import audit as kube_audit
from hack.kcp import nodes as kwok_nodes
from hack.kcp import nodeservice, paths, pki, procs, realnode
from hack.kcp.api import Api
from hack.kcp.ports import free_port

STAGES = Path(__file__).with_name("kwok-stages.yaml")
KWOK_METRICS = Path(__file__).with_name("kwok-metrics.yaml")
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def _wait_http(url: str, *, deadline: float, what: str, ctx: ssl.SSLContext | None, log_path: Path,
               alive: Callable[[], bool]) -> None:
    last = ""
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError(f"{what} exited during start-up; last lines of {log_path}:\n{_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
                body = r.read().decode(errors="replace")
                if r.status == 200:
                    return
                last = f"HTTP {r.status} {body[:200]}"
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}"
        except (OSError, urllib.error.URLError) as e:
            last = str(e)
        time.sleep(0.1)
    raise TimeoutError(f"{what} not healthy at {url} ({last}); last lines of {log_path}:\n{_tail(log_path)}")


def _insecure() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # KCM/scheduler serve a self-signed cert on loopback
    return ctx


def _tail(p: Path, n: int = 30) -> str:
    try:
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return "(no log)"


@dataclass
class Cluster:
    """One local cluster, addressed by its state directory."""

    state_dir: Path
    ports: dict[str, int] = field(default_factory=dict)
    processes: list[procs.ProcessRecord] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    audit: bool = False  # the API server writes an audit log (every request, level Metadata) to `audit_log`
    scheduler_config: Path | None = None  # the KubeSchedulerConfiguration kube-scheduler was started with
    real_nodes: int = 0  # 1: a real node (kubelet, containerd) beside the kwok ones (hack/kcp/realnode.py)
    # The AdmissionConfiguration kube-apiserver reads (--admission-control-config-file), e.g. GKE's limit on the
    # system-* priority classes; a copy in the state directory, so a restarted API server reads the same.
    admission_config: Path | None = None
    # kwok emulates each node's kubelet resource metrics (hack/kcp/kwok-metrics.yaml) over HTTPS on ports["kwok"],
    # for metrics-server and Prometheus (hack/kcp/metrics_server.py); its nodes carry the path annotation.
    kwok_metrics: bool = False
    # The real node's kubelet writes its Node's status this often when nothing changed (nodeStatusReportFrequency)
    status_report: str = realnode.TEST_STATUS_REPORT

    @classmethod
    def named(cls, name: str) -> Cluster:
        return cls(paths.state_root() / name)

    # --- paths -------------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "kubeconfig"

    @property
    def pki_dir(self) -> Path:
        return self.state_dir / "pki"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "logs"

    @property
    def state_file(self) -> Path:
        return self.state_dir / "state.json"

    @property
    def audit_log(self) -> Path:
        return self.log_dir / "audit.log"

    @property
    def server(self) -> str:
        return f"https://127.0.0.1:{self.ports['apiserver']}"

    def api(self) -> Api:
        return Api(self.server, self.pki_dir / "ca.crt", self.pki_dir / "admin.crt", self.pki_dir / "admin.key")

    # --- state file --------------------------------------------------------------------------------
    def load(self) -> bool:
        if not self.state_file.exists():
            return False
        data = json.loads(self.state_file.read_text())
        self.ports = data["ports"]
        self.processes = [procs.ProcessRecord(**p) for p in data["processes"]]
        self.audit = bool(data.get("audit", False))
        self.real_nodes = int(data.get("real_nodes", 0))
        self.admission_config = Path(data["admission_config"]) if data.get("admission_config") else None
        self.kwok_metrics = bool(data.get("kwok_metrics", False))
        return True

    def save(self) -> None:
        data = {"ports": self.ports, "processes": [p.to_json() for p in self.processes],
                "kubeconfig": str(self.kubeconfig), "audit": self.audit, "real_nodes": self.real_nodes,
                "admission_config": str(self.admission_config) if self.admission_config else None,
                "kwok_metrics": self.kwok_metrics}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.rename(self.state_file)

    def running(self) -> list[procs.ProcessRecord]:
        return [p for p in self.processes if procs.is_ours_and_alive(p)]

    # --- up ----------------------------------------------------------------------------------------
    def up(self, node_count: int, *, scheduler_config: Path | None = None, timeout: float = 120.0,
           audit: bool = False, real_nodes: int = 0, admission_config: str | None = None,
           kwok_metrics: bool = False, status_report: str = realnode.TEST_STATUS_REPORT) -> None:
        """Start everything and `node_count` Ready kwok nodes. `audit`: the API server logs every request
        (level Metadata) to `audit_log`, for counting a client's requests (off by default: it costs I/O).
        `real_nodes` (0 or 1): also a real node, which takes this machine's container runtime and kubelet paths.
        `admission_config`: an AdmissionConfiguration (YAML text) for kube-apiserver's admission plugins.
        `kwok_metrics`: kwok serves each node's emulated kubelet resource metrics (see the field).
        `status_report`: the real node's kubelet writes its Node's status this often when nothing changed."""
        if real_nodes not in (0, 1):
            raise RuntimeError(f"real_nodes {real_nodes}: one real node per machine at most (it takes the machine's "
                               "CRI socket and kubelet root)")
        if real_nodes and (problems := realnode.preflight()):
            raise RuntimeError("the real node cannot start:\n  " + "\n  ".join(problems))
        missing = [c for c in COMPONENTS if not paths.binary(c).exists()]
        if missing:
            raise RuntimeError(f"control-plane binaries missing ({', '.join(missing)}): run `hack/cluster build`")
        if self.load() and self.running():
            raise RuntimeError(f"cluster at {self.state_dir} is already running; `hack/cluster down` first")
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        self.state_dir.mkdir(parents=True)
        self.processes = []
        self.audit = audit
        self.real_nodes = real_nodes
        self.kwok_metrics = kwok_metrics
        self.status_report = status_report
        self.admission_config = None
        if admission_config is not None:
            self.admission_config = self.state_dir / "admission-config.yaml"
            self.admission_config.write_text(admission_config)
        t0 = time.monotonic()
        deadline = t0 + timeout
        try:
            self._start_all(node_count, scheduler_config, deadline, t0)
        except BaseException:
            log(f"start-up failed; stopping what was started (logs kept in {self.log_dir})")
            self._stop_all()
            raise

    def _step(self, name: str, t0: float) -> None:
        self.timings[name] = round(time.monotonic() - t0, 2)

    def _start_all(self, node_count: int, scheduler_config: Path | None, deadline: float, t0: float) -> None:
        pki.make(self.pki_dir, extra_sans=f"IP:{realnode.node_ip()}" if self.real_nodes else "")
        self._step("pki", t0)
        self.ports = {k: free_port() for k in ("etcd", "etcd_peer", "apiserver", "kcm", "scheduler")}
        if self.kwok_metrics:
            self.ports["kwok"] = free_port()
            pki.server_cert(self.pki_dir, "kwok", "kwok", "IP:127.0.0.1,DNS:localhost")
        self._write_kubeconfig()
        self.save()
        insecure = _insecure()

        etcd = self._start("etcd", self._etcd_args())
        self._wait_healthy(etcd, f"http://127.0.0.1:{self.ports['etcd']}/health", deadline, None)
        self._step("etcd", t0)

        apiserver = self._start("kube-apiserver", self._apiserver_args())
        ca = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
        self._wait_healthy(apiserver, f"{self.server}/readyz", deadline, ca)
        self._step("kube-apiserver", t0)

        kcm = self._start("kube-controller-manager", self._kcm_args())
        self.scheduler_config = scheduler_config
        sched = self._start("kube-scheduler", self._scheduler_args(scheduler_config))
        kwok = self._start("kwok", self._kwok_args())
        api = self.api()
        manifests = kwok_nodes.standard_nodes(node_count)
        if self.kwok_metrics:
            manifests = [kwok_nodes.with_resource_metrics(m) for m in manifests]
        kwok_nodes.create_nodes(api, manifests)
        self._step("nodes-created", t0)
        self._wait_healthy(kcm, f"https://127.0.0.1:{self.ports['kcm']}/healthz", deadline, insecure)
        self._wait_healthy(sched, f"https://127.0.0.1:{self.ports['scheduler']}/healthz", deadline, insecure)
        self._step("controllers-healthy", t0)
        remaining = max(1.0, deadline - time.monotonic())
        try:
            kwok_nodes.wait_ready(api, [m["metadata"]["name"] for m in manifests], remaining)
        except TimeoutError as e:
            if not procs.is_ours_and_alive(kwok):
                raise RuntimeError(f"kwok exited; last lines of {kwok.log}:\n{_tail(Path(kwok.log))}") from e
            raise
        self._step("nodes-ready", t0)
        self._wait_default_service_account(api, deadline)
        if self.real_nodes:
            realnode.start(self.state_dir, self.server, self._start, deadline, log, api=api,
                           status_report=self.status_report)
            kwok_nodes.wait_ready(api, [realnode.NAME], max(1.0, deadline - time.monotonic()))
            self._step("real-node-ready", t0)
        self._step("ready", t0)

    @staticmethod
    def _wait_healthy(rec: procs.ProcessRecord, url: str, deadline: float, ctx: ssl.SSLContext | None) -> None:
        _wait_http(url, deadline=deadline, what=rec.name, ctx=ctx, log_path=Path(rec.log),
                   alive=lambda: procs.is_ours_and_alive(rec))

    def _wait_default_service_account(self, api: Api, deadline: float) -> None:
        """Pods cannot be created in a namespace until KCM has made its `default` ServiceAccount."""
        while True:
            try:
                api.get("/api/v1/namespaces/default/serviceaccounts/default")
                return
            except Exception:  # noqa: BLE001 - 404 until the controller has run
                if time.monotonic() > deadline:
                    raise TimeoutError("ServiceAccount default/default was never created by KCM") from None
                time.sleep(0.2)

    def _start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> procs.ProcessRecord:
        rec = procs.start(name, argv, self.log_dir, env=env)
        self.processes.append(rec)
        self.save()
        return rec

    def start_process(self, name: str, argv: list[str], *, env: dict[str, str], health_url: str,
                      timeout: float = 60.0, tls: ssl.SSLContext | None = None) -> procs.ProcessRecord:
        """One more process beside the control plane (the node autoscaler, metrics-server): recorded with the
        cluster's own, so `down` stops it (first, being newest); healthy at `health_url` when this returns (plain
        HTTP, or HTTPS checked with `tls`)."""
        rec = self._start(name, argv, env)
        self._wait_healthy(rec, health_url, time.monotonic() + timeout, tls)
        return rec

    def _write_kubeconfig(self) -> None:
        p = self.pki_dir
        self.kubeconfig.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "nodemedic-local",
                                  "cluster": {"server": self.server, "certificate-authority": str(p / "ca.crt")}}],
                    "users": [{"name": "admin", "user": {"client-certificate": str(p / "admin.crt"),
                                                         "client-key": str(p / "admin.key")}}],
                    "contexts": [{"name": "nodemedic-local",
                                  "context": {"cluster": "nodemedic-local", "user": "admin"}}],
                    "current-context": "nodemedic-local",
                },
                indent=1,
            )
        )

    # --- component flags ---------------------------------------------------------------------------
    def _etcd_args(self) -> list[str]:
        c, pp = self.ports["etcd"], self.ports["etcd_peer"]
        return [
            str(paths.binary("etcd")), "--name=node0", f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls=http://127.0.0.1:{c}", f"--advertise-client-urls=http://127.0.0.1:{c}",
            f"--listen-peer-urls=http://127.0.0.1:{pp}", f"--initial-advertise-peer-urls=http://127.0.0.1:{pp}",
            f"--initial-cluster=node0=http://127.0.0.1:{pp}", "--auto-compaction-retention=1",
            "--quota-backend-bytes=4294967296", "--unsafe-no-fsync=true", "--log-level=warn",
        ]

    def _apiserver_args(self) -> list[str]:
        p = self.pki_dir
        # With a real node its pods reach the API server through the kubernetes Service: at the node's address, and
        # the Service's endpoints kept by the server itself; the server reaches the kubelet at the node's address.
        network = ["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"]
        if self.real_nodes:
            network = ["--bind-address=0.0.0.0", f"--advertise-address={realnode.node_ip()}",
                       "--endpoint-reconciler-type=lease", "--kubelet-preferred-address-types=InternalIP",
                       f"--kubelet-client-certificate={p / 'apiserver-kubelet-client.crt'}",
                       f"--kubelet-client-key={p / 'apiserver-kubelet-client.key'}",
                       f"--kubelet-certificate-authority={p / 'ca.crt'}"]
        audit = []
        if self.audit:
            policy = kube_audit.write_policy(self.state_dir / "audit-policy.yaml")
            self.log_dir.mkdir(parents=True, exist_ok=True)
            audit = [f"--audit-policy-file={policy}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json",
                     "--audit-log-maxbackup=0", "--audit-log-maxsize=0"]
        admission = [f"--admission-control-config-file={self.admission_config}"] if self.admission_config else []
        return [
            str(paths.binary("kube-apiserver")),
            f"--etcd-servers=http://127.0.0.1:{self.ports['etcd']}", "--etcd-prefix=/registry",
            *network, f"--secure-port={self.ports['apiserver']}",
            f"--tls-cert-file={p / 'apiserver.crt'}", f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--client-ca-file={p / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={p / 'sa.pub'}", f"--service-account-signing-key-file={p / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
            "--allow-privileged=true", "--profiling=false",
            f"--requestheader-client-ca-file={p / 'ca.crt'}", "--requestheader-allowed-names=front-proxy-client",
            "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
            "--requestheader-extra-headers-prefix=X-Remote-Extra-",
            f"--proxy-client-cert-file={p / 'front-proxy-client.crt'}",
            f"--proxy-client-key-file={p / 'front-proxy-client.key'}",
            *audit, *admission,
        ]

    def _kcm_args(self) -> list[str]:
        p = self.pki_dir
        return [
            str(paths.binary("kube-controller-manager")), f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['kcm']}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
            f"--root-ca-file={p / 'ca.crt'}", f"--service-account-private-key-file={p / 'sa.key'}",
            "--cluster-name=nodemedic-local", "--leader-elect=false",
            "--node-monitor-period=5s", "--node-monitor-grace-period=40s",
            "--kube-api-qps=200", "--kube-api-burst=400", "--profiling=false",
        ]

    def _scheduler_args(self, config: Path | None) -> list[str]:
        args = [
            str(paths.binary("kube-scheduler")),
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={self.ports['scheduler']}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics", "--profiling=false",
        ]
        if config is not None:
            # A KubeSchedulerConfiguration carries the kubeconfig path and leader election itself.
            return [*args, f"--config={config}"]
        return [*args, f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"]

    def _kwok_args(self) -> list[str]:
        args = [
            str(paths.binary("kwok")), f"--kubeconfig={self.kubeconfig}", f"--config={STAGES}",
            "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={kwok_nodes.KWOK_ANNOTATION}=fake",
            "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40", "--cidr=10.0.0.0/16",
        ]
        if self.kwok_metrics:
            # HTTPS with a certificate from the cluster CA, like a kubelet's: metrics-server verifies it.
            args += [f"--config={KWOK_METRICS}", f"--server-address=127.0.0.1:{self.ports['kwok']}",
                     f"--node-port={self.ports['kwok']}", f"--tls-cert-file={self.pki_dir / 'kwok.crt'}",
                     f"--tls-private-key-file={self.pki_dir / 'kwok.key'}"]
        return args

    def stop_component(self, name: str) -> None:
        """Stop one component (kube-apiserver or etcd, to test clients riding out an outage; kube-scheduler, to
        keep new pods Pending; a real node's containerd, to test the agent's runtime probe)."""
        rec = next(p for p in self.processes if p.name == name)
        procs.stop(rec)

    def start_component(self, name: str, timeout: float = 60.0) -> None:
        """Start a stopped component again with the same flags, ports and data, and wait until it is healthy
        (etcd: its own /health, then the API server's /readyz, which checks etcd, when the API server runs; a real
        node's containerd, kubelet or kube-proxy: its own readiness, realnode.SERVING)."""
        index = next(i for i, p in enumerate(self.processes) if p.name == name)
        if name in realnode.SERVING:
            def again(name: str, argv: list[str]) -> procs.ProcessRecord:
                self.processes[index] = procs.start(name, argv, self.log_dir)
                self.save()
                return self.processes[index]
            realnode.start_again(self.state_dir, name, again, time.monotonic() + timeout)
            return
        argvs: dict[str, Callable[[], list[str]]] = {
            "kube-apiserver": self._apiserver_args, "etcd": self._etcd_args,
            "kube-scheduler": lambda: self._scheduler_args(self.scheduler_config)}
        argv = argvs[name]()
        rec = procs.start(name, argv, self.log_dir)
        # Same place in the list: `down` stops newest first, and the API server must outlive its clients
        # (stopped before them it waits for their open watches and gets killed after the grace period).
        self.processes[index] = rec
        self.save()
        deadline = time.monotonic() + timeout
        if name == "etcd":
            self._wait_healthy(rec, f"http://127.0.0.1:{self.ports['etcd']}/health", deadline, None)
            rec = next(p for p in self.processes if p.name == "kube-apiserver")
            if not procs.is_ours_and_alive(rec):
                return
        if name == "kube-scheduler":  # serves /healthz with a self-signed certificate, as at start-up
            self._wait_healthy(rec, f"https://127.0.0.1:{self.ports['scheduler']}/healthz", deadline, _insecure())
            return
        ca = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
        self._wait_healthy(rec, f"{self.server}/readyz", deadline, ca)

    # --- down --------------------------------------------------------------------------------------
    def stop_processes(self) -> list[str]:
        """Stop every recorded process, newest first; returns one line per process."""
        out = []
        for rec in reversed(self.processes):
            out.append(f"{rec.name} (pid {rec.pid}): {procs.stop(rec)}")
        return out

    def strays(self) -> list[tuple[int, str]]:
        """Processes on this machine whose command line names this cluster's state directory.

        Every component gets a path below the state directory on its command line, so after `down` this
        must be empty; it verifies the stop, it is never used to choose what to kill.
        """
        needle = str(self.state_dir) + "/"
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if needle in cmd:
                found.append((int(entry), cmd[:160]))
        return found

    def _stop_all(self) -> list[str]:
        """The real node first (its pods, mounts and network before its processes' parents), then every process."""
        lines = []
        if self.real_nodes:
            lines += realnode.stop(self.state_dir, self._stop_named, log)
        return lines + self.stop_processes()

    def _stop_named(self, name: str) -> str:
        found = [rec for rec in self.processes if rec.name == name]
        return "; ".join(f"{rec.name} (pid {rec.pid}): {procs.stop(rec)}" for rec in found) or f"{name}: not started"

    def down(self, keep_state: bool = False) -> list[str]:
        if not self.load():
            return [f"no cluster state at {self.state_dir}"]
        # A node-service restart or a node-reboot worker (hack/kcp/nodeservice.py) may be starting the real node's
        # processes: wait until it has recorded them, then stop them with the rest.
        with nodeservice.state_lock(self.state_dir, timeout=180.0) as held:
            if not held:
                log(f"{self.state_dir / nodeservice.LOCK_NAME} still held after 180s: stopping anyway")
            self.load()
            lines = self._stop_all()
        left = [(p.name, p.pid) for p in self.running()] + self.strays()
        if left:
            raise RuntimeError(f"processes still running after down: {left}")
        if not keep_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        return lines


def environ_for(cluster: Cluster) -> dict[str, str]:
    """Environment for tools run against the cluster: KUBECONFIG and kubectl on PATH."""
    env = dict(os.environ)
    env["KUBECONFIG"] = str(cluster.kubeconfig)
    env["PATH"] = f"{paths.binary('kubectl').parent}{os.pathsep}{env.get('PATH', '')}"
    return env
