"""The Debian packages of versions.DEBIAN_PACKAGES, installed with apt at their pinned versions when absent.

They are the one part of the toolchain that lives outside the cache: containerd, runc and buildah run as root
against the host's kernel, and apt is how this machine gets them. A package at another version is replaced by the
pinned one, so every machine runs the same runtime."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hack.kcp import versions
from hack.kcp.steps import TreeRssSampler, log, run


def installed(package: str) -> str:
    """The installed version of `package`, or "" when it is not installed."""
    done = subprocess.run(["dpkg-query", "-W", "-f", "${Status}\t${Version}", package], capture_output=True,
                          text=True, check=False)
    status, _, version = done.stdout.partition("\t")
    return version if done.returncode == 0 and status.endswith(" installed") else ""


def missing() -> dict[str, str]:
    """package -> pinned version, for each package not installed at its pinned version."""
    return {p: v for p, v in versions.DEBIAN_PACKAGES.items() if installed(p) != v}


def install(samplers: list[TreeRssSampler]) -> None:
    wanted = missing()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    args = ["apt-get", "install", "-y", "--no-install-recommends", *(f"{p}={v}" for p, v in sorted(wanted.items()))]
    try:
        run(args, cwd=Path("/"), env=env, sampler_out=samplers)
    except SystemExit:
        log("apt-get install failed; updating the package lists once and trying again")
        run(["apt-get", "update"], cwd=Path("/"), env=env, sampler_out=samplers)
        run(args, cwd=Path("/"), env=env, sampler_out=samplers)


def extract(package: str, version: str, work: Path, samplers: list[TreeRssSampler]) -> Path:
    """One package at `version` downloaded into `work` and unpacked there without installing it (no maintainer
    scripts run, nothing outside `work` changes); returns the unpacked root."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        run(["apt-get", "download", f"{package}={version}"], cwd=work, env=env, sampler_out=samplers)
    except SystemExit:
        log("apt-get download failed; updating the package lists once and trying again")
        run(["apt-get", "update"], cwd=Path("/"), env=env, sampler_out=samplers)
        run(["apt-get", "download", f"{package}={version}"], cwd=work, env=env, sampler_out=samplers)
    (deb,) = work.glob(f"{package}_*.deb")
    run(["dpkg-deb", "-x", str(deb), str(work / "root")], cwd=work, env=env, sampler_out=samplers)
    return work / "root"


def unpack(package: str, version: str, binaries: list[str], dest: Path, samplers: list[TreeRssSampler]) -> None:
    """The `usr/bin/` programs `binaries` of one package at its pinned version, unpacked into `dest` (`extract`)."""
    with tempfile.TemporaryDirectory(prefix=f"kcp-{package}-") as work:
        w = Path(work)
        root = extract(package, version, w, samplers)
        out = w / "out"
        out.mkdir()
        for name in binaries:
            shutil.move(root / "usr" / "bin" / name, out / name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            shutil.rmtree(dest)
        out.rename(dest)
