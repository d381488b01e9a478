"""A second kube-scheduler (the pinned binary) beside the control plane's own, with a KubeSchedulerConfiguration the
test gives: what the chart's optional second scheduler runs, as a process."""

from __future__ import annotations

import contextlib
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from hack.kcp import paths, procs
from hack.kcp.ports import free_port
from tests.waiting import wait_until


def generated(policy: Path, *flags: str) -> str:
    """`nodemedic-remediator scheduler-config` for `policy`, as a user runs it."""
    done = subprocess.run([sys.executable, "-m", "remediator", "scheduler-config", "--policy", str(policy), *flags],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _healthy(url: str, rec: procs.ProcessRecord) -> bool:
    if not procs.is_ours_and_alive(rec):
        raise AssertionError(f"kube-scheduler exited:\n{Path(rec.log).read_text(errors='replace')[-3000:]}")
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # a self-signed serving certificate on loopback
    try:
        with urllib.request.urlopen(url, timeout=2, context=ctx) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def running(config: str, kubeconfig: Path, tmp: Path, name: str) -> Iterator[procs.ProcessRecord]:
    """kube-scheduler with `config` until the block ends; fails with its log when it does not become healthy."""
    path = tmp / f"{name}.yaml"
    path.write_text(config)
    port = free_port()
    rec = procs.start(name, [str(paths.binary("kube-scheduler")), f"--config={path}",
                             f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
                             "--bind-address=127.0.0.1", f"--secure-port={port}",
                             "--authorization-always-allow-paths=/healthz", "--profiling=false"], tmp)
    try:
        wait_until(lambda: _healthy(f"https://127.0.0.1:{port}/healthz", rec), timeout=60,
                   what=f"{name} /healthz")
        yield rec
    finally:
        procs.stop(rec)
