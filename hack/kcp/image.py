"""The nodemedic image, built from the repository's Dockerfile with buildah, as users build it with Docker.

Nothing can be pulled from an image registry here, so the Dockerfile's base (its PYTHON_IMAGE argument; Docker
users keep the default python:3.11-slim) is made from Debian's packages with mmdebstrap: bookworm's python3 is 3.11.
The result is a docker-archive in the cache, keyed by a hash of everything that goes into it, ready for
`ctr images import` on a real node. Only the base stays in buildah's storage between builds: the archive is the
cache, so the storage does not grow with every change to the code.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from hack.kcp import paths, versions
from hack.kcp.steps import TreeRssSampler, log, run

REPO = Path(__file__).resolve().parents[2]
REPOSITORY = "localhost/nodemedic"
BASE_REPOSITORY = "localhost/nodemedic-base"
# What the Dockerfile expects of its base: `python` 3.11 with venv (ensurepip), CA certificates for pip, and
# groupadd/useradd (passwd), as python:3.11-slim has them.
BASE_PACKAGES = ("python3", "python3-venv", "python-is-python3", "ca-certificates", "passwd")
# Documentation and translations are dead weight in an image (python:3.11-slim drops them too).
BASE_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*")
# Kept in the base's apt configuration, as python:3.11-slim's docker-clean does: packages a Dockerfile installs leave
# no downloaded .debs and no package caches behind (76 MB in the image without it).
BASE_APT_OPTIONS = ('Dir::Cache::pkgcache "";', 'Dir::Cache::srcpkgcache "";',
                    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb '
                    '/var/cache/apt/*.bin || true"; };')
# The build context, as .dockerignore admits it: what the Dockerfile copies.
CONTEXT = ("Dockerfile", ".dockerignore", "requirements.lock", "pyproject.toml", "README.md", "agent", "remediator",
           "nodemedic_common")
APT_SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))
# This machine reaches PyPI through a proxy whose CA only the host trusts: the build's RUN steps see the host's pip
# configuration and CA bundle (build-time mounts; nothing of them lands in the image).
BUILD_MOUNTS = (Path("/etc/pip.conf"), Path("/etc/ssl/certs/ca-certificates.crt"))


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:16]


def apt_sources() -> Path:
    """The host's apt sources: the base is made from the same mirror the host installs from."""
    for path in APT_SOURCES:
        if path.is_file():
            return path
    raise SystemExit(f"no apt sources at {' or '.join(map(str, APT_SOURCES))}: the image's base needs a Debian mirror")


def base_key() -> str:
    return _digest(versions.DEBIAN_SUITE.encode(), " ".join(BASE_PACKAGES).encode(), " ".join(BASE_EXCLUDES).encode(),
                   "\n".join(BASE_APT_OPTIONS).encode(), apt_sources().read_bytes())


def _context_files() -> list[Path]:
    files: list[Path] = []
    for name in CONTEXT:
        top = REPO / name
        found = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        files += [p for p in found if "__pycache__" not in p.parts and p.suffix != ".pyc"]
    return files


def image_key() -> str:
    """A hash of the base and of every file of the build context: any change to what the image holds changes it."""
    parts = [base_key().encode()]
    for path in _context_files():
        parts += [str(path.relative_to(REPO)).encode(), path.read_bytes()]
    return _digest(*parts)


def reference() -> str:
    """The image's name and tag, as containerd and the chart's values name it."""
    return f"{REPOSITORY}:{image_key()}"


def archive() -> Path:
    """The docker-archive of the current image (present once built)."""
    return paths.images_dir() / f"nodemedic-{image_key()}.tar"


PAUSE_SOURCE = Path(__file__).with_name("pause.c")
PAUSE_REPOSITORY = "localhost/pause"


def pause_reference() -> str:
    """The pod sandbox image (a real node's containerd runs every pod's sandbox from it), by its source's hash."""
    return f"{PAUSE_REPOSITORY}:{_digest(PAUSE_SOURCE.read_bytes())}"


def pause_archive() -> Path:
    return paths.images_dir() / f"pause-{pause_reference().rsplit(':', 1)[1]}.tar"


SCHEDULER_REPOSITORY = "localhost/kube-scheduler"


def scheduler_reference() -> str:
    """kube-scheduler at the pinned version as an image, for the chart's second scheduler on a real node (users pull
    registry.k8s.io/kube-scheduler, which cannot be pulled here)."""
    return f"{SCHEDULER_REPOSITORY}:v{versions.KUBERNETES}"


def scheduler_archive() -> Path:
    return paths.images_dir() / f"kube-scheduler-v{versions.KUBERNETES}.tar"


def archives() -> tuple[Path, ...]:
    """Every image a real node's containerd imports."""
    return pause_archive(), scheduler_archive(), archive()


def is_missing() -> bool:
    return not all(a.is_file() for a in archives())


def buildah(*args: str) -> list[str]:
    # Storage in the cache; its run-time state (locks, mounts) on tmpfs, one per storage, as containers/storage wants.
    root = paths.images_dir() / "buildah"
    return ["buildah", f"--root={root}", f"--runroot=/run/nodemedic-buildah-{_digest(str(root).encode())[:8]}",
            "--storage-driver=overlay", *args]


def _has_image(ref: str) -> bool:
    done = subprocess.run(buildah("images", "--quiet", ref), capture_output=True, text=True, check=False)
    return done.returncode == 0 and bool(done.stdout.strip())


def ensure_base(env: dict[str, str], samplers: list[TreeRssSampler]) -> str:
    """The Debian base in buildah's storage, made with mmdebstrap when missing; its reference. Also the base of
    node-problem-detector's image in hack/bench/agent_vs_npd_on_node.py."""
    ref = f"{BASE_REPOSITORY}:{base_key()}"
    if _has_image(ref):
        log(f"base {ref}: cached")
        return ref
    with tempfile.TemporaryDirectory(prefix="kcp-base-", dir=paths.images_dir()) as work:
        rootfs = Path(work) / "rootfs.tar"
        run(["mmdebstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
             *(f"--dpkgopt=path-exclude={x}" for x in BASE_EXCLUDES), *(f"--aptopt={o}" for o in BASE_APT_OPTIONS),
             versions.DEBIAN_SUITE, str(rootfs), str(apt_sources())], cwd=Path(work), env=env, sampler_out=samplers)
        container = run(buildah("from", "scratch"), cwd=Path(work), env=env).strip().splitlines()[-1]
        try:
            run(buildah("add", container, str(rootfs), "/"), cwd=Path(work), env=env)
            run(buildah("config", "--env", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                         "--cmd", "/bin/sh", container), cwd=Path(work), env=env)
            run(buildah("commit", "--quiet", container, ref), cwd=Path(work), env=env)
        finally:
            subprocess.run(buildah("rm", container), capture_output=True, check=False)
    # One base at a time: an older one (another package list or mirror) is of no further use.
    for old in _tags(BASE_REPOSITORY) - {ref}:
        subprocess.run(buildah("rmi", old), capture_output=True, check=False)
    return ref


def _tags(repository: str) -> set[str]:
    done = subprocess.run(buildah("images", "--format", "{{.Name}}:{{.Tag}}"), capture_output=True, text=True,
                          check=False)
    return {line for line in done.stdout.split() if line.startswith(repository + ":")}


def _build_pause(env: dict[str, str]) -> None:
    """A static binary in an otherwise empty image: nothing to pull, 0.7 MB."""
    with tempfile.TemporaryDirectory(prefix="kcp-pause-", dir=paths.images_dir()) as work:
        binary = Path(work) / "pause"
        run(["gcc", "-static", "-Os", "-s", "-o", str(binary), str(PAUSE_SOURCE)], cwd=Path(work), env=env)
        for old in paths.images_dir().glob("pause-*.tar"):  # keyed by the source's hash: an older one is stale
            old.unlink()
        _scratch_image(binary, "/pause", ref=pause_reference(), archive=pause_archive(), work=Path(work), env=env)


def _build_scheduler(env: dict[str, str]) -> None:
    """The pinned kube-scheduler binary (static) in an otherwise empty image, as the upstream image ships it."""
    with tempfile.TemporaryDirectory(prefix="kcp-scheduler-", dir=paths.images_dir()) as work:
        _scratch_image(paths.binary("kube-scheduler"), "/usr/local/bin/kube-scheduler", ref=scheduler_reference(),
                       archive=scheduler_archive(), work=Path(work), env=env)


def _scratch_image(binary: Path, entrypoint: str, *, ref: str, archive: Path, work: Path, env: dict[str, str]) -> None:
    """`binary` at `entrypoint` in an image with nothing else, saved as a docker-archive at `archive`."""
    container = run(buildah("from", "scratch"), cwd=work, env=env).strip().splitlines()[-1]
    try:
        run(buildah("copy", container, str(binary), entrypoint), cwd=work, env=env)
        run(buildah("config", "--entrypoint", f'["{entrypoint}"]', container), cwd=work, env=env)
        run(buildah("commit", "--quiet", container, ref), cwd=work, env=env)
    finally:
        subprocess.run(buildah("rm", container), capture_output=True, check=False)
    try:
        out = work / archive.name
        run(buildah("push", "--quiet", ref, f"docker-archive:{out}:{ref}"), cwd=work, env=env)
        out.rename(archive)
    finally:
        subprocess.run(buildah("rmi", ref), capture_output=True, check=False)


def build(samplers: list[TreeRssSampler]) -> None:
    """Build the image and leave it as archive(); checks that both programs run inside a container of it. Also the
    pause image a real node's sandboxes run (pause_archive()) and kube-scheduler's (scheduler_archive())."""
    images = paths.images_dir()
    images.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if not pause_archive().is_file():
        _build_pause(env)
    if not scheduler_archive().is_file():
        _build_scheduler(env)
    if archive().is_file():
        return
    base = ensure_base(env, samplers)
    ref = reference()
    mounts = [f"--volume={p}:{p}:ro" for p in BUILD_MOUNTS if p.is_file()]
    run(buildah("bud", "--pull-never", "--isolation=chroot", f"--build-arg=PYTHON_IMAGE={base}", *mounts,
                 f"--tag={ref}", "--file=Dockerfile", "."), cwd=REPO, env=env, sampler_out=samplers)
    try:
        container = run(buildah("from", ref), cwd=REPO, env=env).strip().splitlines()[-1]
        try:
            for program in ("nodemedic-agent", "nodemedic-remediator"):
                log(run(buildah("run", "--isolation=chroot", container, "--", program, "--version"), cwd=REPO,
                        env=env).strip())
        finally:
            subprocess.run(buildah("rm", container), capture_output=True, check=False)
        with tempfile.TemporaryDirectory(prefix="kcp-image-", dir=images) as work:
            out = Path(work) / "image.tar"
            run(buildah("push", "--quiet", ref, f"docker-archive:{out}:{ref}"), cwd=REPO, env=env)
            for old in images.glob("nodemedic-*.tar"):  # the cache keeps the current image only
                old.unlink()
            out.rename(archive())
    finally:
        subprocess.run(buildah("rmi", ref), capture_output=True, check=False)
    log(f"{ref}: {archive().stat().st_size / (1 << 20):.0f} MiB as a docker-archive at {archive()}")


def remove_all() -> None:
    """Forget every image and the builder's storage (`hack/cluster clean`)."""
    subprocess.run(buildah("rm", "--all"), capture_output=True, check=False)
    subprocess.run(buildah("rmi", "--all", "--force"), capture_output=True, check=False)
    shutil.rmtree(paths.images_dir(), ignore_errors=True)
