"""The release's artefacts and workflows with the pinned tools `hack/cluster build` makes: the chart as
`hack/package.py` packages it (the pinned helm), and the workflows under .github/workflows as actionlint (pinned,
built from the module proxy) and the shellcheck it runs on their scripts (a pinned Debian package) read them.
A tool missing: these tests FAIL, never skip."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import (
    manifests,  # the chart and the pinned helm
    package,  # what `make package` and the release workflow run
)
from hack.kcp import build, debian, paths, versions

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e

WORKFLOWS = ROOT / ".github" / "workflows"


@pytest.fixture(scope="module")
def helm() -> Path:
    try:
        return manifests.helm()
    except manifests.HelmMissing as e:
        pytest.fail(f"{e}; the release tests need it and never skip", pytrace=False)


@pytest.fixture(scope="module")
def actionlint() -> list[str]:
    """actionlint's command line: the pinned build, the pinned shellcheck for `run:` scripts, no pyflakes (not
    pinned; no workflow runs inline Python)."""
    if build.is_missing("actionlint"):
        pytest.fail(f"actionlint v{versions.ACTIONLINT} is not built ({paths.binary('actionlint')} missing or of "
                    "another version): run `make build` (or `hack/cluster build --only actionlint`); the workflow "
                    "lint needs it and never skips", pytrace=False)
    pinned = versions.DEBIAN_PACKAGES["shellcheck"]
    shellcheck = shutil.which("shellcheck")
    if debian.installed("shellcheck") != pinned or shellcheck is None:
        pytest.fail(f"shellcheck {pinned} is not installed (found {debian.installed('shellcheck') or 'none'}): run "
                    "`make build` (or `hack/cluster build --only debian`); the workflow lint needs it and never skips",
                    pytrace=False)
    return [str(paths.binary("actionlint")), "-no-color", f"-shellcheck={shellcheck}", "-pyflakes="]


def test_actionlint_finds_nothing_in_the_workflows(actionlint: list[str]) -> None:
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    assert {w.name for w in workflows} >= {"ci.yml", "release.yml"}
    done = subprocess.run([*actionlint, *map(str, workflows)], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, f"actionlint on .github/workflows:\n{done.stdout}{done.stderr}"


def test_actionlint_reports_a_wrong_expression_and_an_unquoted_variable(actionlint: list[str],
                                                                        tmp_path: Path) -> None:
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo '${{ github.no_such_property }}'\n"
                      "      - run: rm -rf $DIR/*\n")
    done = subprocess.run([*actionlint, str(broken)], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'property "no_such_property" is not defined' in done.stdout and "[expression]" in done.stdout, done.stdout
    assert "SC2086" in done.stdout and "[shellcheck]" in done.stdout, done.stdout


def _archive(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_the_packaged_chart_is_named_by_its_version_and_holds_the_whole_chart(helm: Path, tmp_path: Path) -> None:
    archive = package.package_chart(tmp_path, helm=helm)
    version = package.chart_field("version")
    assert archive.name == f"nodemedic-{version}.tgz"
    files = _archive(archive)
    chart: dict[str, Any] = yaml.safe_load(files["nodemedic/Chart.yaml"])
    source: dict[str, Any] = yaml.safe_load((manifests.CHART / "Chart.yaml").read_text())
    assert (chart["version"], chart["appVersion"], chart["kubeVersion"]) == (
        version, package.chart_field("appVersion"), source["kubeVersion"])
    shipped = {f"nodemedic/{p.relative_to(manifests.CHART)}": p.read_bytes()
               for p in sorted(manifests.CHART.rglob("*")) if p.is_file() and p.name != "Chart.yaml"}
    assert any(name.startswith("nodemedic/templates/") for name in shipped)
    assert "nodemedic/values.yaml" in shipped and "nodemedic/files/policy.yaml" in shipped
    if (manifests.CHART / "values.schema.json").exists():
        assert "nodemedic/values.schema.json" in shipped
    missing = sorted(set(shipped) - set(files))
    assert not missing, f"not in {archive.name}: {missing}"
    changed = sorted(name for name, body in shipped.items() if files[name] != body)
    assert not changed, f"differ in {archive.name} from the repository: {changed}"


def test_the_released_chart_runs_the_released_image_and_the_repositorys_chart_is_unchanged(helm: Path,
                                                                                         tmp_path: Path) -> None:
    values_before = (manifests.CHART / "values.yaml").read_bytes()
    archive = package.package_chart(tmp_path, helm=helm, image_repository="ghcr.io/example/nodemedic")
    assert (manifests.CHART / "values.yaml").read_bytes() == values_before
    out = manifests.run_helm("template", "nodemedic", str(archive), "--namespace", "nodemedic")
    workloads = [d for d in yaml.safe_load_all(out) if d and d["kind"] in ("DaemonSet", "Deployment")]
    images = {(d["kind"], c["image"]) for d in workloads for c in d["spec"]["template"]["spec"]["containers"]}
    app_version = package.chart_field("appVersion")
    assert images == {("DaemonSet", f"ghcr.io/example/nodemedic:{app_version}"),
                      ("Deployment", f"ghcr.io/example/nodemedic:{app_version}")}
