"""`make package`: the release artefacts in dist/ (git-ignored), each named by the version it carries:

- the chart as `helm package` makes it, nodemedic-<Chart.yaml version>.tgz (the pinned helm of `hack/cluster build`);
- the Python sdist and wheel (`python -m build`, the dev extras' `build`);
- the image as the docker-archive `hack/cluster build --only image` left in the cache, linked (or copied) to
  nodemedic-image-<appVersion>.tar: `docker load -i` or `ctr images import` it.

The release workflow (.github/workflows/release.yml) runs the same steps: `--check-tag` before anything is pushed,
then `--only chart --image-repository ghcr.io/OWNER/nodemedic` (the packaged chart's default image is the released
one; the repository's chart keeps its own) and `--only python`. The image it pushes is built there by Docker.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from hack import manifests  # the chart's path, the pinned helm and its state directories
from hack.kcp import image

ROOT = Path(__file__).resolve().parents[1]
CHART = manifests.CHART
PYPROJECT = ROOT / "pyproject.toml"
DIST = ROOT / "dist"
ARTEFACTS = ("chart", "python", "image")
# values.yaml's `image:` block down to its `repository:` line (the chart's values are two-space indented).
IMAGE_REPOSITORY = re.compile(r"^(image:\n(?:  .*\n)*?  repository: ).*$", re.M)


def chart_field(name: str) -> str:
    """A top-level scalar of Chart.yaml (version, appVersion), quotes removed."""
    m = re.search(rf"^{re.escape(name)}:\s*(.+?)\s*$", (CHART / "Chart.yaml").read_text(), re.M)
    if not m:
        raise SystemExit(f"{CHART / 'Chart.yaml'}: no top-level {name}")
    return m.group(1).strip("\"'")


def project_version() -> str:
    return str(tomllib.loads(PYPROJECT.read_text())["project"]["version"])


def check_tag(tag: str) -> list[str]:
    """What stops a release tagged `tag`: it must be v<version>, and the chart, the image it names by default
    (appVersion) and the Python package must all carry that version."""
    want = tag.removeprefix("refs/tags/").removeprefix("v")
    found = {"Chart.yaml version": chart_field("version"), "Chart.yaml appVersion": chart_field("appVersion"),
             "pyproject.toml project.version": project_version()}
    errors = [] if tag.removeprefix("refs/tags/").startswith("v") else [f"tag {tag}: must be v<version>"]
    return errors + [f"{where} is {have}, the tag {tag} says {want}" for where, have in found.items() if have != want]


def set_image_repository(values: Path, repository: str) -> None:
    """Point values.yaml's image.repository at `repository`, leaving every other line as it is."""
    text, count = IMAGE_REPOSITORY.subn(lambda m: m.group(1) + repository, values.read_text(), count=1)
    if count != 1:
        raise SystemExit(f"{values}: no `repository:` line in its top-level `image:` block")
    values.write_text(text)


def package_chart(out: Path, *, helm: Path, image_repository: str | None = None) -> Path:
    """`helm package` the chart (a copy of it, with `image_repository` as its default image when given) into
    `out`; the archive's path, nodemedic-<version>.tgz."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nodemedic-chart-") as work:
        chart = Path(work) / CHART.name
        shutil.copytree(CHART, chart)
        if image_repository:
            set_image_repository(chart / "values.yaml", image_repository)
        done = subprocess.run([str(helm), "package", str(chart), "--destination", str(out)], capture_output=True,
                              text=True, env=manifests.helm_env(), check=False, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"helm package failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    archive = out / f"{CHART.name}-{chart_field('version')}.tgz"
    if not archive.is_file():
        raise SystemExit(f"helm package wrote no {archive.name}:\n{done.stdout}")
    return archive


def package_python(out: Path) -> list[Path]:
    """The sdist and the wheel, built as pip would (an isolated environment with pyproject's build backend)."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nodemedic-python-") as work:
        done = subprocess.run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", work, str(ROOT)],
                              capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"python -m build failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        built = sorted(Path(work).iterdir())
        for path in built:
            shutil.move(path, out / path.name)
    return [out / p.name for p in built]


def package_image(out: Path) -> Path:
    """The image's docker-archive for this code, from the cache: hard-linked when on one file system."""
    if image.is_missing():
        raise SystemExit(f"the image for this code is not built ({image.archive()} missing): run "
                         "`hack/cluster build --only debian --only image` (`make package` does)")
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"nodemedic-image-{chart_field('appVersion')}.tar"
    target.unlink(missing_ok=True)
    try:
        os.link(image.archive(), target)
    except OSError:
        shutil.copy2(image.archive(), target)
    return target


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hack.package", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=DIST, help="where the artefacts go (default: dist/)")
    ap.add_argument("--only", action="append", choices=ARTEFACTS, help="one artefact (repeatable; default all)")
    ap.add_argument("--helm", type=Path, help="helm to package with (default: the pinned one hack/cluster builds)")
    ap.add_argument("--image-repository", help="the packaged chart's default image.repository")
    ap.add_argument("--check-tag", metavar="TAG", help="only check that TAG is v<version> of chart and package")
    args = ap.parse_args(argv)
    if args.check_tag:
        errors = check_tag(args.check_tag)
        for error in errors:
            print(f"{ap.prog}: {error}", file=sys.stderr)
        return 1 if errors else 0
    only = args.only or list(ARTEFACTS)
    made: list[Path] = []
    if "chart" in only:
        try:
            helm = args.helm or manifests.helm()
        except manifests.HelmMissing as e:
            raise SystemExit(str(e)) from None
        made.append(package_chart(args.out, helm=helm, image_repository=args.image_repository))
    if "python" in only:
        made += package_python(args.out)
    if "image" in only:
        made.append(package_image(args.out))
    for path in made:
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  "
              f"{path.stat().st_size / (1 << 20):8.2f} MiB  sha256 {sha256(path)}")
    if "image" in only:
        print(f"the image in the archive is {image.reference()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
