"""A real node beside the kwok ones: containerd and runc, the CNI plugins, a kubelet and kube-proxy, running real
containers from the nodemedic image built from the Dockerfile (hack/kcp/image.py), and the cluster's DNS, CoreDNS
behind the `kube-dns` Service (hack/kcp/coredns.py).

It takes the machine's standard places: the CRI socket at /run/containerd/containerd.sock, the kubelet's root at
/var/lib/kubelet, the host's network. The chart's agent, installed as it ships, finds them there as on any node. So
one real node runs on a machine at a time: a lock file names the cluster that has it, and `up` refuses a second.
Facts it relies on (../shared/reference/real-nodes.md): cgroup v1 (the cgroupfs driver, `failCgroupV1: false`), root
without CAP_SYS_RESOURCE (containerd's `restrict_oom_score_adj`), the CNI plugins under /usr/lib/cni.

`stop` leaves nothing behind: processes (the pods' too, found by their cgroups), mounts, network namespaces, the CNI
bridge, kube-proxy's iptables rules, the pods' cgroups, the runtime's state, and the sysctls it changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from hack.kcp import coredns, image, paths, pki, procs
from hack.kcp.api import Api

NAME = "real-node-0"
ZONE = "zone-a"
SOCKET = Path("/run/containerd/containerd.sock")
CONTAINERD_ROOT, CONTAINERD_STATE = Path("/var/lib/containerd"), Path("/run/containerd")
KUBELET_ROOT = Path("/var/lib/kubelet")
POD_CIDR = "10.244.0.0/24"
BRIDGE = "nodemedic0"
CNI_NETWORK = "nodemedic"
CNI_BIN = Path("/usr/lib/cni")  # Debian's containernetworking-plugins, not /opt/cni/bin
LOCK = Path("/run/nodemedic/real-node.lock")
# Left by the kubelet, containerd and the CNI plugins; removed by `stop` (the lock says they are ours).
LEFTOVERS = (KUBELET_ROOT, CONTAINERD_ROOT, CONTAINERD_STATE, Path("/var/lib/cni/networks") / CNI_NETWORK,
             Path("/var/log/pods"), Path("/var/log/containers"))
MOUNT_ROOTS = (KUBELET_ROOT, CONTAINERD_ROOT, CONTAINERD_STATE, Path("/run/netns"), Path("/var/run/netns"))
SYSCTLS = (Path("/proc/sys/net/ipv4/ip_forward"), Path("/proc/sys/net/bridge/bridge-nf-call-iptables"))
CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBELET_HEALTHZ = "http://127.0.0.1:10248/healthz"
KUBE_PROXY_HEALTHZ_PORT = 10256
IPTABLES = ("iptables", "ip6tables")

Log = Callable[[str], None]


def _cri_answers() -> bool:
    """containerd answers a CRI Version call: its socket answers `ctr version` earlier, before the CRI plugin has
    initialised, and a kubelet started then exits ("server is not initialized yet"; seen in CI after a restart
    under load). The call is the agent's own probe (the project is installed wherever the real node runs)."""
    from agent.checks.runtime import probe  # noqa: PLC0415 - only the real node needs the agent here
    from agent.services.cri_wire import ProbeError  # noqa: PLC0415 - only the real node needs the agent here

    try:
        asyncio.run(asyncio.wait_for(probe(SOCKET), 5))
    except (ProbeError, OSError, TimeoutError):
        return False
    return True


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


# The real node's processes, and what says each one serves (after a start, and after `start_again`).
SERVING: dict[str, tuple[str, Callable[[], bool]]] = {
    "containerd": ("containerd's CRI service", _cri_answers),
    "kubelet": ("the kubelet's healthz", lambda: _http_ok(KUBELET_HEALTHZ)),
    "kube-proxy": ("kube-proxy's healthz", lambda: _http_ok(f"http://127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}/healthz")),
    "coredns": ("CoreDNS's ready endpoint", lambda: _http_ok(f"http://127.0.0.1:{coredns.READY_PORT}/ready")),
}


def node_ip() -> str:
    """The machine's first global IPv4 address: the kubelet refuses a loopback node IP, and pods reach the API
    server there."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "scope", "global"], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        fields = line.split()
        if "inet" in fields:
            return fields[fields.index("inet") + 1].split("/")[0]
    raise RuntimeError("no global IPv4 address on this machine: a real node needs one for its node IP")


def preflight() -> list[str]:
    """What is missing for a real node here, one line each (empty: ready)."""
    problems = []
    if os.geteuid() != 0:
        problems.append("a real node runs as root (containerd, the kubelet and the CNI plugins need it)")
    for tool in ("containerd", "runc", "ctr", "ip", "iptables"):
        if shutil.which(tool) is None:
            problems.append(f"{tool} not found: run `hack/cluster build` (it installs the Debian packages)")
    if not paths.binary("coredns").is_file():
        problems.append("CoreDNS not built: run `hack/cluster build --only coredns`")
    if not (CNI_BIN / "bridge").exists():
        problems.append(f"no CNI plugins in {CNI_BIN}: run `hack/cluster build`")
    for archive in image.archives():
        if not archive.is_file():
            problems.append(f"image archive {archive} missing: run `hack/cluster build --only image`")
    if LOCK.exists():
        owner = LOCK.read_text().strip()
        if Path(owner).exists():
            problems.append(f"the real node is taken by the cluster at {owner}: `hack/cluster down` it first")
    if SOCKET.exists() and not LOCK.exists():
        problems.append(f"{SOCKET} exists and is not ours: another containerd runs on this machine")
    return problems


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def any_mount_shared() -> bool:
    """Whether any mount propagates (this machine's are all private; a systemd machine's are shared)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if any(f.startswith("shared:") for f in fields[6:fields.index("-")]):
            return True
    return False


def _containerd_config(node_dir: Path) -> Path:
    cni_conf = node_dir / "cni"
    _write(cni_conf / "10-nodemedic.conflist", json.dumps({
        "cniVersion": "0.4.0", "name": CNI_NETWORK,
        "plugins": [
            {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
             "ipam": {"type": "host-local", "ranges": [[{"subnet": POD_CIDR}]], "routes": [{"dst": "0.0.0.0/0"}]}},
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ]}, indent=1))
    return _write(node_dir / "containerd.toml", f"""version = 2
root = "{CONTAINERD_ROOT}"
state = "{CONTAINERD_STATE}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
                    "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = "{SOCKET}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{image.pause_reference()}"
  # root here lacks CAP_SYS_RESOURCE: without this every sandbox fails to lower its oom_score_adj.
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni_conf}"
""")


def _kubeconfig(path: Path, server: str, ca: Path, cert: Path, key: Path) -> Path:
    return _write(path, json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": "user"}}],
        "current-context": "local"}, indent=1))


# How often the kubelet writes its Node's status when nothing changed (a change is written within
# nodeStatusUpdateFrequency, 5 s here): 10 s for the tests, where kubelet's default is 5 min.
TEST_STATUS_REPORT = "10s"


def _kubelet_config(node_dir: Path, pki_dir: Path, serving: tuple[Path, Path], status_report: str) -> Path:
    return _write(node_dir / "kubelet.yaml", json.dumps({
        "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
        "cgroupDriver": "cgroupfs",
        "failCgroupV1": False,  # these machines have cgroup v1 only; kubelets from 1.35 on refuse it otherwise
        "containerRuntimeEndpoint": f"unix://{SOCKET}",
        "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True},
                           "x509": {"clientCAFile": str(pki_dir / "ca.crt")}},
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": str(serving[0]), "tlsPrivateKeyFile": str(serving[1]),
        "readOnlyPort": 0, "healthzBindAddress": "127.0.0.1", "healthzPort": 10248,
        "failSwapOn": False, "resolvConf": "/etc/resolv.conf", "clusterDomain": "cluster.local",
        "clusterDNS": [coredns.SERVICE_IP],
        # A developer's disk is often fuller than a node's: the kubelet evicts only when it is nearly full.
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "2%", "imagefs.available": "2%",
                         "nodefs.inodesFree": "2%"},
        "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False, "podPidsLimit": 4096,
        "nodeStatusReportFrequency": status_report, "nodeStatusUpdateFrequency": "5s",
        # A changed ConfigMap reaches a pod's volume at the pod's next sync (default every minute): 10 s keeps the
        # policy hot-reload test short; nothing else depends on it.
        "syncFrequency": "10s",
    }, indent=1))


def _sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check, timeout=120)


def _wait(what: str, ready: Callable[[], bool], deadline: float, rec: procs.ProcessRecord) -> None:
    while not ready():
        if not procs.is_ours_and_alive(rec):
            raise RuntimeError(f"{rec.name} exited while waiting for {what}; see {rec.log}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready in time; see {rec.log}")
        time.sleep(0.2)


def start(state_dir: Path, server: str, start_process: Callable[[str, list[str]], procs.ProcessRecord],
          deadline: float, log: Log, *, api: Api, status_report: str = TEST_STATUS_REPORT) -> None:
    """Start the real node of the cluster at `state_dir` (its API server at `server`, reachable from pods; `api` the
    admin client that registers the cluster DNS). `status_report`: the kubelet's nodeStatusReportFrequency."""
    problems = preflight()
    if problems:
        raise RuntimeError("the real node cannot start:\n  " + "\n  ".join(problems))
    _write(LOCK, str(state_dir))
    node_dir = state_dir / "real-node"
    pki_dir = state_dir / "pki"
    ip = node_ip()
    _write(node_dir / "sysctls.json", json.dumps({str(p): p.read_text().strip() for p in SYSCTLS if p.exists()}))
    Path("/proc/sys/net/bridge/bridge-nf-call-iptables").write_text("1")  # Service traffic between pods on the bridge
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1")
    # A pod that mounts the host's / with HostToContainer propagation (the agent) needs / shared, as systemd makes it
    # on every node; on these machines every mount is private. `stop` makes them private again (only if all were).
    _write(node_dir / "root-propagation", "shared" if any_mount_shared() else "private")
    _sh("mount", "--make-rshared", "/")

    def launch(name: str, argv: list[str]) -> None:
        _write(node_dir / "argv" / f"{name}.json", json.dumps(argv))  # for `start_again`, as it started
        _wait(SERVING[name][0], SERVING[name][1], deadline, start_process(name, argv))

    launch("containerd", ["containerd", f"--config={_containerd_config(node_dir)}"])
    for archive in image.archives():
        t0 = time.monotonic()
        _sh("ctr", f"--address={SOCKET}", "--namespace=k8s.io", "images", "import", str(archive))
        log(f"real node: imported {archive.name} into containerd in {time.monotonic() - t0:.1f}s")

    kubelet_cert = pki.client_cert(pki_dir, "kubelet-client", f"system:node:{NAME}", ("system:nodes",))
    serving = pki.server_cert(pki_dir, "kubelet-serving", NAME, f"IP:{ip},IP:127.0.0.1,DNS:{NAME}")
    proxy_cert = pki.client_cert(pki_dir, "kube-proxy-client", "system:kube-proxy")
    kubelet_kubeconfig = _kubeconfig(node_dir / "kubelet.kubeconfig", server, pki_dir / "ca.crt", *kubelet_cert)
    proxy_kubeconfig = _kubeconfig(node_dir / "kube-proxy.kubeconfig", server, pki_dir / "ca.crt", *proxy_cert)

    launch("kubelet", [
        str(paths.binary("kubelet")), f"--config={_kubelet_config(node_dir, pki_dir, serving, status_report)}",
        f"--kubeconfig={kubelet_kubeconfig}", f"--hostname-override={NAME}", f"--node-ip={ip}",
        f"--node-labels=topology.kubernetes.io/zone={ZONE},nodemedic.io/real-node=true",
        f"--root-dir={KUBELET_ROOT}", f"--cert-dir={node_dir / 'kubelet-pki'}", "--v=1"])
    launch("kube-proxy", [
        str(paths.binary("kube-proxy")), f"--kubeconfig={proxy_kubeconfig}", f"--hostname-override={NAME}",
        "--proxy-mode=iptables", f"--cluster-cidr={POD_CIDR}", "--conntrack-max-per-core=0",
        f"--healthz-bind-address=127.0.0.1:{KUBE_PROXY_HEALTHZ_PORT}", "--metrics-bind-address=127.0.0.1:10249"])
    coredns.register(api, ip)
    dns_cert = pki.client_cert(pki_dir, "coredns-client", coredns.USER)
    dns_kubeconfig = _kubeconfig(node_dir / "coredns.kubeconfig", server, pki_dir / "ca.crt", *dns_cert)
    launch("coredns", coredns.argv(_write(node_dir / "Corefile", coredns.corefile(ip, dns_kubeconfig))))


def start_again(state_dir: Path, name: str, start_process: Callable[[str, list[str]], procs.ProcessRecord],
                deadline: float) -> None:
    """Start one of the real node's processes again, stopped by a test (a runtime outage, a kubelet restart), with
    the command line it first ran with; returns once it serves."""
    argv = json.loads((state_dir / "real-node" / "argv" / f"{name}.json").read_text())
    _wait(SERVING[name][0], SERVING[name][1], deadline, start_process(name, argv))


def _pod_pids(root: Path = CGROUP_ROOT) -> list[int]:
    """The processes in the pods' cgroups. Walked with os.walk, which passes over a directory removed under it:
    pathlib's recursive glob raises instead, and containerd's shim clean-up removes containers' cgroups while `stop`
    looks for their processes (CI, stop 47: the FileNotFoundError kept the lock and failed every later real-node
    test)."""
    pids: set[int] = set()
    for top in [t for t in root.glob("*/kubepods") if t.is_dir()]:
        for directory, _, files in os.walk(top):
            if "cgroup.procs" not in files:
                continue
            try:
                pids |= {int(p) for p in Path(directory, "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
    return sorted(pids)


def _shim_pids() -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if cmd and cmd[0].endswith(b"containerd-shim-runc-v2") and str(SOCKET).encode() in cmd:
            found.append(int(entry))
    return found


def _kill_all(pids: Callable[[], list[int]], what: str, log: Log) -> None:
    deadline = time.monotonic() + 20
    while found := pids():
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} still running after SIGKILL: {found}")
        time.sleep(0.1)
    log(f"real node: no {what} left")


def _mounts_below(roots: tuple[Path, ...]) -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if any(point == str(r) or point.startswith(f"{r}/") for r in roots):
            points.append(point)
    return sorted(set(points), key=lambda p: -p.count("/"))


def _owned_chain(name: str) -> bool:
    return name.startswith(("KUBE-", "CNI-"))


def _iptables_leftovers(tool: str) -> list[tuple[str, str, str]]:
    return owned_iptables(_sh(f"{tool}-save", check=False).stdout)


def owned_iptables(saved: str) -> list[tuple[str, str, str]]:
    """(table, chain, rule) of the chains the kubelet, kube-proxy and the CNI plugins add, and of the rules that jump
    to them from other chains, in an iptables-save text; rule is "" for a chain's declaration."""
    found, table = [], ""
    for line in saved.splitlines():
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":") and _owned_chain(chain := line[1:].split()[0]):
            found.append((table, chain, ""))
        elif line.startswith("-A "):
            words = shlex.split(line)
            target = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-j", "-g")), "")
            if not _owned_chain(words[1]) and _owned_chain(target):
                found.append((table, words[1], line))
    return found


def _remove_iptables_leftovers(tool: str) -> None:
    """kube-proxy --cleanup leaves the kubelet's chains (KUBE-FIREWALL, the canaries): jumps out, then the chains."""
    leftovers = _iptables_leftovers(tool)
    for table, _, rule in leftovers:
        if rule:
            _sh(tool, "-t", table, "-D", *shlex.split(rule)[1:])
    chains = sorted({(table, chain) for table, chain, rule in leftovers if not rule})
    for table, chain in chains:
        _sh(tool, "-t", table, "-F", chain)
    for table, chain in chains:
        _sh(tool, "-t", table, "-X", chain)


def _rmdir_cgroups(root: Path = CGROUP_ROOT, timeout: float = 20) -> None:
    """Remove the pods' cgroups, deepest first. containerd's clean-up of the shims `stop` killed (`runc delete`, in
    processes that outlive containerd) removes some of them at the same time: a directory gone under the walk is
    what was wanted (CI, stop 46: a FileNotFoundError here kept the lock and failed every later real-node test); one
    still busy, a process not yet reaped, is tried again until the deadline, then named."""
    deadline = time.monotonic() + timeout
    while tops := [t for t in root.glob("*/kubepods") if t.is_dir()]:
        busy = []
        for top in tops:
            for directory, _, _ in os.walk(top, topdown=False):  # os.walk passes over what vanishes while it walks
                try:
                    os.rmdir(directory)
                except FileNotFoundError:
                    continue
                except OSError as e:
                    busy.append(f"{directory}: {e.strerror}")
        if busy and time.monotonic() > deadline:
            raise RuntimeError(f"pod cgroups not removable after {timeout:g}s: {'; '.join(busy[:5])}")
        if busy:
            time.sleep(0.1)


def stop(state_dir: Path, stop_process: Callable[[str], str], log: Log) -> list[str]:
    """Stop the real node of the cluster at `state_dir` and remove every trace of it; one line per step."""
    if not LOCK.exists() or LOCK.read_text().strip() != str(state_dir):
        return []
    lines = [stop_process("coredns"), stop_process("kube-proxy"), stop_process("kubelet")]
    _kill_all(_pod_pids, "pod processes", log)  # containers outlive their shims: find them by their cgroups
    _kill_all(_shim_pids, "containerd shims", log)
    lines.append(stop_process("containerd"))
    cleanup = _sh(str(paths.binary("kube-proxy")), "--cleanup", "--proxy-mode=iptables", check=False)
    lines.append(f"kube-proxy --cleanup: exit {cleanup.returncode}")
    for tool in IPTABLES:
        _remove_iptables_leftovers(tool)
    for point in _mounts_below(MOUNT_ROOTS):
        _sh("umount", "--lazy", point)
    lines.append("mounts: none left below " + ", ".join(map(str, MOUNT_ROOTS)))
    for ns in _sh("ip", "netns", "list").stdout.split("\n"):
        if ns.startswith("cni-"):
            _sh("ip", "netns", "delete", ns.split()[0])
    if _sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        _sh("ip", "link", "delete", BRIDGE)
    _rmdir_cgroups()
    for path in LEFTOVERS:
        shutil.rmtree(path, ignore_errors=True)
    propagation = state_dir / "real-node" / "root-propagation"
    if propagation.exists() and propagation.read_text() == "private":
        _sh("mount", "--make-rprivate", "/")
    saved = state_dir / "real-node" / "sysctls.json"
    if saved.exists():
        for path, value in json.loads(saved.read_text()).items():
            Path(path).write_text(value)
    LOCK.unlink()
    lines.append("real node: network namespaces, bridge, cgroups, runtime state and sysctls restored")
    return lines


def traces() -> list[str]:
    """What a stopped real node must not have left (empty after `stop`): for tests and `hack/cluster status`."""
    left = [f"pod process {p}" for p in _pod_pids()] + [f"containerd shim {p}" for p in _shim_pids()]
    left += [f"mount {m}" for m in _mounts_below(MOUNT_ROOTS)]
    left += [f"cgroup {c}" for c in CGROUP_ROOT.glob("*/kubepods")]
    left += [f"path {p}" for p in LEFTOVERS if p.exists()]
    if _sh("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        left.append(f"bridge {BRIDGE}")
    left += [f"netns {ns.split()[0]}" for ns in _sh("ip", "netns", "list").stdout.splitlines() if ns.startswith("cni-")]
    left += [f"{tool} {table} {rule or 'chain ' + chain}" for tool in IPTABLES
             for table, chain, rule in _iptables_leftovers(tool)]
    if LOCK.exists():
        left.append(f"lock {LOCK}")
    return left
