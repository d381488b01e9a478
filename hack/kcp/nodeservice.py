"""A service manager for the real node (hack/kcp/realnode.py), for the agent's repair commands.

On a production node the agent runs `nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl restart kubelet`
or `systemctl reboot`. These machines have no systemd and cannot reboot, so the e2e tests give the agent these
instead (through the same nsenter prefix, so they run in the host's namespaces but inside the agent container's
cgroups, which runc kills with the container):

- `hack/cluster node-service restart <kubelet|containerd|kube-proxy|coredns>`: stops the recorded process, starts it
  with the argv it first ran with, waits until it serves (realnode.SERVING) and updates the cluster's state file.
- `hack/cluster node-reboot --boot-id-file PATH`: returns at once; a detached worker then does to the node what a
  reboot does to Kubernetes (stops every service and container, clears what /run, the mounts, the network namespaces
  and the cgroups lose in a reboot), writes a new boot id to PATH and starts the node's services again.

Both move themselves out of the caller's cgroups first (into the root of every hierarchy: what systemd's children
are born in) and do their work in a worker of their own session, so neither the caller's death nor its container's
kill stops a restart half done, and the services they start are nobody's container's children. A flock on the state
directory serialises them with each other and with `hack/cluster down`.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from hack.kcp import procs, realnode

CGROUP_ROOT = Path("/sys/fs/cgroup")
LOCK_NAME = "node-service.lock"
SERVICES = ("containerd", "kubelet", "kube-proxy", "coredns")  # realnode.SERVING's, in start order
# What a reboot stops, in order (the pods and the shims between the kubelet and containerd, as realnode.stop does).
STOP_ORDER = ("coredns", "kube-proxy", "kubelet")
HACK = Path(__file__).resolve().parents[1]
CLUSTER_SCRIPT = HACK / "cluster"
# The services' environment, as a service manager gives one: not the caller's (the agent container's PATH, its
# Service variables, its HOSTNAME).
SERVICE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
               "HOME": "/root"}

Log = Callable[[str], None]


# --- leaving the caller's cgroups and session -----------------------------------------------------------------------
def hierarchy_roots(root: Path = CGROUP_ROOT) -> list[Path]:
    """The root directory of every cgroup hierarchy mounted at `root`: `root` itself where it is a cgroup v2 mount
    (its subdirectories are cgroups then), else each directory below it with a cgroup.procs (cgroup v1: one per
    hierarchy, the unified v2 one included; a link such as cpu -> cpu,cpuacct counted once)."""
    if (root / "cgroup.procs").exists():
        return [root]
    seen: dict[Path, Path] = {}
    for d in sorted(root.iterdir()):
        if d.is_dir() and (d / "cgroup.procs").exists():
            seen.setdefault(d.resolve(), d)
    return list(seen.values())


def escape_cgroups(pid: int, root: Path = CGROUP_ROOT) -> list[Path]:
    """Move process `pid` (all its threads) into the root cgroup of every hierarchy at `root`; returns the files
    written. Raises RuntimeError naming the hierarchy that refused."""
    written = []
    for top in hierarchy_roots(root):
        target = top / "cgroup.procs"
        try:
            with open(target, "w") as f:
                f.write(f"{pid}\n")
        except OSError as e:
            raise RuntimeError(f"cannot move pid {pid} into {target}: {e}") from None
        written.append(target)
    if not written:
        raise RuntimeError(f"no cgroup hierarchy under {root}")
    return written


def not_in_root(proc_cgroup: str) -> list[str]:
    """The lines of a /proc/<pid>/cgroup text whose cgroup is not its hierarchy's root ("id:controllers:path")."""
    return [line for line in proc_cgroup.splitlines() if line.count(":") >= 2 and line.split(":", 2)[2] != "/"]


def leave_caller(log: Log) -> None:
    """Out of the caller's cgroups, verified: a process started after this is born in every hierarchy's root."""
    escape_cgroups(os.getpid())
    left = not_in_root(Path("/proc/self/cgroup").read_text())
    if left:
        raise RuntimeError(f"still in the caller's cgroups after moving to the roots: {left}")
    log(f"moved out of the caller's cgroups (pid {os.getpid()} in every hierarchy's root)")


def spawn_worker(argv: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """`hack/cluster <argv> --worker` in a session of its own (no terminal, no process group of the caller's), in the
    root cgroups (the caller left them first), at /, with the services' environment (not the caller's container's),
    its output appended to `log_path`: it outlives its caller, as a job outlives `systemctl`."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = dict(SERVICE_ENV, **{k: v for k, v in os.environ.items() if k.startswith("NODEMEDIC_")})
    with open(log_path, "ab") as out:
        return subprocess.Popen([sys.executable, str(CLUSTER_SCRIPT), *argv, "--worker"], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
                                cwd="/", env=env)


def printer(stream: Callable[[], TextIO] = lambda: sys.stdout) -> Log:
    """A log that prints timestamped lines to a stream and never fails (its reader may be gone)."""
    def log(msg: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {msg}", file=stream(), flush=True)
    return log


# --- the cluster's state file ---------------------------------------------------------------------------------------
@contextlib.contextmanager
def state_lock(state_dir: Path, timeout: float) -> Iterator[bool]:
    """An exclusive flock on `state_dir`/node-service.lock, waited for up to `timeout` s; yields whether it holds it
    (False: timed out, or the directory is gone)."""
    try:
        fd = os.open(state_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except FileNotFoundError:
        yield False
        return
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                    yield False
                    return
                time.sleep(0.1)
        yield True
    finally:
        os.close(fd)


def replace_record(state_file: Path, old: procs.ProcessRecord, new: procs.ProcessRecord) -> None:
    """In the state file as it is now (not as it was loaded), the record of `old` (same name and PID; else the first
    of that name) replaced by `new`, in its place: `down` stops newest first. Atomic (a rename)."""
    data = json.loads(state_file.read_text())
    records = data["processes"]
    index = next((i for i, p in enumerate(records) if p["name"] == old.name and p["pid"] == old.pid),
                 next((i for i, p in enumerate(records) if p["name"] == old.name), None))
    if index is None:
        raise RuntimeError(f"no record of {old.name} in {state_file}")
    records[index] = new.to_json()
    tmp = state_file.with_name(state_file.name + ".node-service.tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.rename(state_file)


def records(state_file: Path) -> list[procs.ProcessRecord]:
    return [procs.ProcessRecord(**p) for p in json.loads(state_file.read_text())["processes"]]


def check_real_node(state_dir: Path) -> None:
    """The cluster at `state_dir` exists and has this machine's real node."""
    if not (state_dir / "state.json").exists():
        raise RuntimeError(f"no cluster state at {state_dir}")
    owner = realnode.LOCK.read_text().strip() if realnode.LOCK.exists() else ""
    if owner != str(state_dir):
        raise RuntimeError(f"the real node on this machine is not the cluster at {state_dir}'s "
                           f"({realnode.LOCK}: {owner or 'absent'})")


# --- restart ----------------------------------------------------------------------------------------------------------
def _start_again(state_dir: Path, name: str, old: procs.ProcessRecord, deadline: float,
                 log: Log) -> procs.ProcessRecord:
    started: list[procs.ProcessRecord] = []

    def again(name: str, argv: list[str]) -> procs.ProcessRecord:
        rec = procs.start(name, argv, state_dir / "logs", env=dict(SERVICE_ENV))
        replace_record(state_dir / "state.json", old, rec)
        started.append(rec)
        log(f"{name}: started (pid {rec.pid}), recorded in {state_dir / 'state.json'}")
        return rec

    realnode.start_again(state_dir, name, again, deadline)
    return started[0]


def restart(state_dir: Path, name: str, timeout: float, log: Log) -> float:
    """`systemctl restart <name>` on the real node: stop, start with the same argv, wait until it serves; returns
    the seconds from the stop to serving."""
    if name not in SERVICES:
        raise RuntimeError(f"unknown service {name!r}: one of {', '.join(SERVICES)}")
    with state_lock(state_dir, timeout) as held:
        if not held:
            raise RuntimeError(f"the state of {state_dir} is locked by another node-service or `down` (or gone)")
        check_real_node(state_dir)
        old = next((r for r in records(state_dir / "state.json") if r.name == name), None)
        if old is None:
            raise RuntimeError(f"the cluster at {state_dir} records no {name}")
        t0 = time.monotonic()
        log(f"{name} (pid {old.pid}): {procs.stop(old)}")
        rec = _start_again(state_dir, name, old, t0 + timeout, log)
        took = time.monotonic() - t0
        log(f"{name}: {realnode.SERVING[name][0]} answers (pid {rec.pid}), {took:.1f}s after the stop")
        return took


# --- reboot -----------------------------------------------------------------------------------------------------------
def _step(what: str, fn: Callable[[], object], log: Log, failures: list[str]) -> None:
    """One step of the reboot: a failure is logged and the reboot goes on (a machine always comes back)."""
    try:
        result = fn()
        log(f"{what}: {result}" if isinstance(result, str) else what)
    except Exception as e:  # noqa: BLE001 - logged; the node must come back whatever failed
        failures.append(f"{what}: {e}")
        log(f"{what} FAILED: {e}")


def _sigterm_pods(grace: float) -> str:
    """What shutdown does first: SIGTERM to every pod process, a grace to exit (then realnode._kill_all SIGKILLs)."""
    pids = realnode._pod_pids()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while realnode._pod_pids() and time.monotonic() < deadline:
        time.sleep(0.1)
    return f"SIGTERM to {len(pids)} pod processes, {len(realnode._pod_pids())} left after {grace:g}s"


def _sh(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), capture_output=True, text=True, check=False, timeout=60,
                          env=dict(SERVICE_ENV))


def _delete_netns() -> str:
    gone = []
    for line in _sh("ip", "netns", "list").stdout.splitlines():
        if line.startswith("cni-"):
            ns = line.split()[0]
            _sh("ip", "netns", "delete", ns)
            gone.append(ns)
    return f"{len(gone)} pod network namespaces deleted"


# What a reboot loses that the kubelet and containerd rely on losing: everything mounted below these (the containers'
# root filesystems and /dev/shm, the pods' network namespaces, the kubelet's tmpfs volumes) and containerd's state in
# /run (the shims' bundles and sockets, runc's state). The disks keep /var/lib/kubelet, /var/lib/containerd (images,
# the CRI plugin's records of the sandboxes, which it marks NotReady), the CNI plugins' address records and the logs.
REBOOT_MOUNT_ROOTS = (realnode.CONTAINERD_STATE, Path("/run/netns"), realnode.KUBELET_ROOT / "pods")


def _unmount_run_state() -> str:
    points = realnode._mounts_below(REBOOT_MOUNT_ROOTS)
    for point in points:
        _sh("umount", "--lazy", point)
    left = realnode._mounts_below(REBOOT_MOUNT_ROOTS)
    if left:
        raise RuntimeError(f"still mounted: {left[:5]}")
    return f"{len(points)} mounts gone below {', '.join(map(str, REBOOT_MOUNT_ROOTS))}"


def _clear_containerd_state() -> str:
    import shutil  # noqa: PLC0415

    shutil.rmtree(realnode.CONTAINERD_STATE, ignore_errors=True)
    if realnode.CONTAINERD_STATE.exists():
        raise RuntimeError(f"{realnode.CONTAINERD_STATE} still there")
    return f"{realnode.CONTAINERD_STATE} removed (a tmpfs in a reboot)"


def _remove_pod_cgroups() -> str:
    tops = list(realnode.CGROUP_ROOT.glob("*/kubepods"))
    realnode._rmdir_cgroups()
    return f"kubepods cgroups removed from {len(tops)} hierarchies"


# What the package manager leaves in /run (a tmpfs: a reboot empties it) when an update waits for a reboot; kured and
# the agent's reboot-required monitor read it.
REBOOT_MARKERS = (Path("/run/reboot-required"), Path("/run/reboot-required.pkgs"))


def _clear_reboot_marker(markers: tuple[Path, ...] = REBOOT_MARKERS) -> str:
    gone = [m for m in markers if m.exists()]
    for m in gone:
        m.unlink()
    return f"{', '.join(map(str, gone))} gone with /run" if gone else "no reboot marker in /run"


def write_boot_id(path: Path) -> str:
    """A new random boot id, written in place (a file bind-mounted into a container sees it: same inode)."""
    boot_id = str(uuid.uuid4())
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.write(boot_id + "\n")
        f.flush()
        os.fsync(f.fileno())
    return boot_id


def reboot(state_dir: Path, boot_id_file: Path, off_seconds: float, timeout: float, log: Log, *,
           power_button: Path | None = None) -> list[str]:
    """What a reboot does to the real node, to Kubernetes; returns the failed steps (empty: all went). With
    `power_button`, the node stays off until that file exists (at most `off_seconds`): a machine that died and is
    powered on again when a test says so."""
    failures: list[str] = []
    with state_lock(state_dir, timeout) as held:
        if not held:
            raise RuntimeError(f"the state of {state_dir} is locked by another node-service or `down` (or gone)")
        check_real_node(state_dir)
        recs = {r.name: r for r in records(state_dir / "state.json")}
        t0 = time.monotonic()
        log(f"reboot of {realnode.NAME}: going down")
        for name in STOP_ORDER:
            if name in recs:
                _step(f"{name} (pid {recs[name].pid})", functools.partial(procs.stop, recs[name]), log, failures)
        _step("pods", lambda: _sigterm_pods(5.0), log, failures)
        _step("pod processes SIGKILLed",
              lambda: realnode._kill_all(realnode._pod_pids, "pod processes", log), log, failures)
        _step("containerd shims SIGKILLed",
              lambda: realnode._kill_all(realnode._shim_pids, "containerd shims", log), log, failures)
        if "containerd" in recs:
            _step(f"containerd (pid {recs['containerd'].pid})", lambda: procs.stop(recs["containerd"]), log, failures)
        _step("network namespaces", _delete_netns, log, failures)
        _step("mounts", _unmount_run_state, log, failures)
        _step("containerd state", _clear_containerd_state, log, failures)
        _step("cgroups", _remove_pod_cgroups, log, failures)
        _step("the package manager's reboot marker", _clear_reboot_marker, log, failures)
        log(f"down after {time.monotonic() - t0:.1f}s; off for {off_seconds:g}s"
            + (f" or until {power_button} exists" if power_button else ""))
        off_until = time.monotonic() + off_seconds
        while time.monotonic() < off_until and not (power_button is not None and power_button.exists()):
            time.sleep(min(0.5, max(0.0, off_until - time.monotonic())))
        _step(f"new boot id in {boot_id_file}", lambda: write_boot_id(boot_id_file), log, failures)
        t1 = time.monotonic()
        for name in SERVICES:
            if name not in recs:
                continue
            try:
                _start_again(state_dir, name, recs[name], time.monotonic() + 60, log)
                log(f"{name}: serves, {time.monotonic() - t1:.1f}s after the boot")
            except Exception as e:  # noqa: BLE001 - the others still start
                failures.append(f"{name} start: {e}")
                log(f"{name} start FAILED: {e}")
        log(f"reboot of {realnode.NAME} done in {time.monotonic() - t0:.1f}s"
            + (f"; failed: {failures}" if failures else ""))
    return failures


# --- the commands (hack/cluster node-service, node-reboot) ------------------------------------------------------------
def run_restart(state_dir: Path, name: str, timeout: float, worker: bool) -> int:
    """The caller's side waits for the worker and relays its lines and exit status; the worker restarts."""
    log_path = state_dir / "logs" / "node-service.log"
    if worker:
        log = printer()
        try:
            leave_caller(log)
            restart(state_dir, name, timeout, log)
        except (RuntimeError, TimeoutError, OSError) as e:
            log(f"restart {name} FAILED: {e}")
            return 1
        return 0
    err = printer(lambda: sys.stderr)
    try:
        check_real_node(state_dir)
        leave_caller(err)
        offset = log_path.stat().st_size if log_path.exists() else 0
        proc = spawn_worker(["node-service", "restart", name, "--state-dir", str(state_dir),
                             "--timeout", str(timeout)], log_path)
    except (RuntimeError, OSError) as e:
        err(f"restart {name}: {e}")
        return 1
    code = proc.wait()
    with contextlib.suppress(OSError), open(log_path, "rb") as f:
        f.seek(offset)
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f.read().decode(errors="replace"))
            sys.stderr.flush()
    return code


def run_reboot(state_dir: Path, boot_id_file: Path, off_seconds: float, delay: float, worker: bool, *,
               power_button: Path | None = None) -> int:
    """The caller's side returns at once, as `systemctl reboot` does; the worker reboots after `delay` s."""
    log_path = state_dir / "logs" / "node-reboot.log"
    if worker:
        log = printer()
        try:
            leave_caller(log)
            time.sleep(delay)
            failures = reboot(state_dir, boot_id_file, off_seconds, 120.0, log, power_button=power_button)
        except (RuntimeError, TimeoutError, OSError) as e:
            log(f"reboot FAILED: {e}")
            return 1
        return 1 if failures else 0
    err = printer(lambda: sys.stderr)
    try:
        check_real_node(state_dir)
        if not boot_id_file.is_absolute():
            raise RuntimeError(f"--boot-id-file {boot_id_file}: an absolute path, please (the worker runs at /)")
        leave_caller(err)
        proc = spawn_worker(["node-reboot", "--state-dir", str(state_dir), "--boot-id-file", str(boot_id_file),
                             "--off-seconds", str(off_seconds), "--delay", str(delay),
                             *(["--power-button", str(power_button)] if power_button else [])], log_path)
    except (RuntimeError, OSError) as e:
        err(f"reboot: {e}")
        return 1
    err(f"{realnode.NAME}: rebooting in {delay:g}s (worker pid {proc.pid}, log {log_path})")
    proc.returncode = 0  # not waited for: it outlives this process (init or a subreaper reaps it)
    return 0
