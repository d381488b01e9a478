"""The chart through the pinned helm (built by `hack/cluster build`, like the control plane): `helm lint`, and
deploy/manifests/ are exactly what it renders. Helm missing: these tests FAIL, never skip."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hack"))

import manifests  # noqa: E402 - hack/manifests.py, the renderer `make manifests` runs

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def helm() -> Path:
    try:
        return manifests.helm()
    except manifests.HelmMissing as e:
        pytest.fail(f"{e}; the chart tests need it and never skip", pytrace=False)


def test_helm_lint_passes_with_the_default_values_and_with_monitoring_on(helm: Path) -> None:
    out = manifests.lint()
    assert out.count("1 chart(s) linted, 0 chart(s) failed") == 2, out


def test_deploy_manifests_are_what_the_chart_renders(helm: Path) -> None:
    diffs = manifests.stale(manifests.expected())
    assert not diffs, "deploy/manifests/ is stale: run `make manifests`\n" + "\n".join(diffs)
