"""The Dockerfile by inspection (no Docker engine here): what it copies exists, the base is pinned, the lock
holds exactly the runtime dependencies, pinned, and the commands the chart runs are the image's console scripts."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from hack.requirements_lock import IMAGE_LEAVES_OUT, NOT_IN_IMAGE

ROOT = Path(__file__).resolve().parents[3]
DOCKERFILE = (ROOT / "Dockerfile").read_text()


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE)
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_every_copied_path_exists_and_the_context_lets_it_in() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    sources = []
    for word, args in instructions():
        if word == "COPY" and not args.startswith("--from"):
            *srcs, _dest = args.split()
            sources += srcs
    assert sources, "no COPY from the build context"
    for src in sources:
        assert (ROOT / src).exists(), f"COPY {src}: not in the repository"
        assert f"!{src}" in ignored, f"COPY {src}: .dockerignore keeps it out of the build context"


def test_the_base_image_is_a_pinned_python_3_11_slim() -> None:
    (arg,) = [a for w, a in instructions() if w == "ARG" and a.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.11\.\d+-slim-\w+", arg), arg
    assert [a for w, a in instructions() if w == "FROM"] == ["${PYTHON_IMAGE} AS build", "${PYTHON_IMAGE}"]


def test_the_image_runs_as_a_non_root_user_by_default() -> None:
    (user,) = [a for w, a in instructions() if w == "USER"]
    assert user.split(":")[0] not in {"0", "root"}


def test_the_lock_pins_the_runtime_dependencies_and_no_dev_tool() -> None:
    lock = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        if line and not line.startswith("#"):
            name, sep, version = line.split("  #")[0].partition("==")
            assert sep and re.fullmatch(r"[\w.]+", version), f"not pinned: {line}"
            lock[canonicalize_name(name)] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    direct = {canonicalize_name(Requirement(r).name) for r in project["dependencies"]}
    dev = {canonicalize_name(Requirement(r).name) for r in project["optional-dependencies"]["dev"]}
    assert direct <= set(lock), f"missing from requirements.lock: {direct - set(lock)}"
    assert not dev & set(lock), f"dev tools in requirements.lock: {dev & set(lock)}"
    assert "nodemedic" not in lock


def test_the_image_installs_the_lock_without_dependencies_then_the_project_and_runs_both_scripts() -> None:
    runs = " ".join(a for w, a in instructions() if w == "RUN")
    assert f'grep -v "{NOT_IN_IMAGE}" /src/requirements.lock > /src/image.lock' in runs
    assert "pip install --no-deps -r /src/image.lock" in runs
    assert "pip install --no-deps /src" in runs
    assert "pip uninstall --yes --quiet pip setuptools" in runs
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for name in ("nodemedic-agent", "nodemedic-remediator"):
        assert name in scripts
        assert f"/opt/nodemedic/bin/{name} --version" in runs
    env = " ".join(a for w, a in instructions() if w == "ENV")
    assert "PATH=/opt/nodemedic/bin:$PATH" in env


def test_the_image_leaves_out_the_kubernetes_package_and_only_what_it_alone_needs() -> None:
    kept = [line.split("==")[0] for line in (ROOT / "requirements.lock").read_text().splitlines()
            if line and not line.startswith("#") and NOT_IN_IMAGE not in line]
    left_out = [line.split("==")[0] for line in (ROOT / "requirements.lock").read_text().splitlines()
                if NOT_IN_IMAGE in line and not line.startswith("#")]
    assert set(left_out) >= IMAGE_LEAVES_OUT and not IMAGE_LEAVES_OUT & set(kept)
    # What both programs import in a pod stays: the agent's and the remediator's own dependencies.
    assert {"aiohttp", "prometheus-client", "pyyaml", "google-re2", "pyudev", "ntplib", "nvidia-ml-py"} <= set(kept)
