"""Render the plain manifests in deploy/manifests/ from the Helm chart (`make manifests`); `--check` only compares.

The chart carries copies of the shipped configs (Helm reads files only from inside a chart): this script refreshes
them from deploy/policy/default.yaml and deploy/agent/default.yaml first. Helm is the pinned one that
`hack/cluster build` puts in the cache (`hack.kcp.paths.binary("helm")`); its own state goes to the cache too.
"""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys
from pathlib import Path

from hack.kcp import paths

ROOT = Path(__file__).resolve().parents[1]
CHART = ROOT / "deploy" / "helm" / "nodemedic"
MANIFESTS = ROOT / "deploy" / "manifests"
RELEASE = "nodemedic"
NAMESPACE = "nodemedic"
# Chart copy -> source of truth.
CHART_FILES = {
    CHART / "files" / "policy.yaml": ROOT / "deploy" / "policy" / "default.yaml",
    CHART / "files" / "agent.yaml": ROOT / "deploy" / "agent" / "default.yaml",
}
# Output file -> (header line, extra `helm template` arguments).
RENDERINGS: dict[str, tuple[str, list[str]]] = {
    "nodemedic.yaml": (
        "the agent, the remediator, their RBAC, ConfigMaps, the admission policies and the Landing CRD",
        ["--set", "namespace.create=true", "--include-crds"],
    ),
    "monitoring.yaml": (
        "the ServiceMonitors and the PrometheusRule (needs the Prometheus Operator's CRDs), and the Grafana dashboard",
        ["--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true",
         "--show-only", "templates/servicemonitor.yaml", "--show-only", "templates/prometheusrule.yaml",
         "--show-only", "templates/grafana-dashboard.yaml"],
    ),
}


class HelmMissing(Exception):
    pass


def helm() -> Path:
    binary = paths.binary("helm")
    if not binary.exists():
        raise HelmMissing(f"helm is not built ({binary} missing): run `make build` (or `hack/cluster build`)")
    return binary


def helm_env() -> dict[str, str]:
    """Helm's cache, config and data directories under nodemedic's cache, never in the repo or ~/.config."""
    base = paths.cache_root() / "helm"
    return {**os.environ, "HELM_CACHE_HOME": str(base / "cache"), "HELM_CONFIG_HOME": str(base / "config"),
            "HELM_DATA_HOME": str(base / "data")}


def run_helm(*args: str) -> str:
    proc = subprocess.run([str(helm()), *args], capture_output=True, text=True, env=helm_env(), check=False,
                          timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"helm {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def lint() -> str:
    """`helm lint --strict`, with the default values and with the monitoring objects on."""
    out = run_helm("lint", "--strict", str(CHART))
    out += run_helm("lint", "--strict", str(CHART), "--namespace", NAMESPACE,
                    "--set", "serviceMonitor.enabled=true,prometheusRule.enabled=true,namespace.create=true")
    return out


def render() -> dict[Path, str]:
    """What every file under deploy/manifests/ must contain."""
    out: dict[Path, str] = {}
    for name, (what, extra) in RENDERINGS.items():
        body = run_helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *extra)
        header = (f"# {what}.\n"
                  f"# Rendered from deploy/helm/nodemedic (release {RELEASE}, namespace {NAMESPACE})\n"
                  "# by `make manifests`: do not edit, change the chart and re-render.\n")
        out[MANIFESTS / name] = header + body
    return out


def expected() -> dict[Path, str]:
    """Every generated file (the chart's config copies and the manifests) and what it must contain."""
    files = {copy: source.read_text() for copy, source in CHART_FILES.items()}
    files.update(render())
    return files


def stale(files: dict[Path, str]) -> list[str]:
    """A unified diff per file whose content differs from what it must be (empty when all are current)."""
    diffs = []
    for path, want in files.items():
        have = path.read_text() if path.exists() else ""
        if have != want:
            rel = path.relative_to(ROOT)
            diffs.append("".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                                      f"{rel} (in the repo)", f"{rel} (rendered)")))
    return diffs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff when anything is stale")
    args = ap.parse_args(argv)
    try:
        if args.check:
            lint()
            diffs = stale(expected())
            for d in diffs:
                print(d)
            if diffs:
                print("stale: run `make manifests`", file=sys.stderr)
                return 1
            print("deploy/manifests/ and the chart's config copies are current")
            return 0
        for copy, source in CHART_FILES.items():  # first: the rendering reads them
            copy.write_text(source.read_text())
        lint()
        MANIFESTS.mkdir(parents=True, exist_ok=True)
        for path, text in render().items():
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    except (HelmMissing, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
