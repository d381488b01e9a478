"""The chart through the pinned helm (built by `hack/cluster build`, like the control plane): `helm lint`, and
deploy/manifests/ are exactly what it renders. Helm missing: these tests FAIL, never skip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hack import manifests  # the renderer `make manifests` runs

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


def rendered(*values: str) -> list[dict[str, Any]]:
    args = [arg for value in values for arg in ("--set", value)]
    out = manifests.run_helm("template", "nodemedic", str(manifests.CHART), *args)
    return [d for d in yaml.safe_load_all(out) if d]


def test_the_notification_secret_is_mounted_in_the_cronjob_too_and_not_at_all_when_unset(helm: Path) -> None:
    spec = next(d for d in rendered() if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"]}
    assert volumes["notification-secrets"]["secret"]["secretName"] == "nodemedic-notifications"

    cronjob = rendered("remediator.mode=cronjob")
    job = next(d for d in cronjob if d["kind"] == "CronJob")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert {v["name"]: v for v in job["volumes"]}["notification-secrets"] == volumes["notification-secrets"]
    assert {m["name"]: m for m in job["containers"][0]["volumeMounts"]}["notification-secrets"] == mounts[
        "notification-secrets"]

    unmounted = rendered("remediator.notificationsSecret=")
    spec = next(d for d in unmounted if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert [v["name"] for v in spec["volumes"]] == ["policy"]
    assert [m["name"] for m in spec["containers"][0]["volumeMounts"]] == ["policy"]


def test_the_prometheus_token_secret_is_readable_by_name_only_and_not_at_all_when_unset(helm: Path) -> None:
    def token_rbac(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [d for d in docs if d["kind"] in ("Role", "RoleBinding") and d["metadata"]["name"].endswith("-token")]

    assert token_rbac(rendered()) == []
    docs = token_rbac(rendered("remediator.prometheusTokenSecret.namespace=monitoring",
                               "remediator.prometheusTokenSecret.name=prom-token"))
    role = next(d for d in docs if d["kind"] == "Role")
    binding = next(d for d in docs if d["kind"] == "RoleBinding")
    assert role["metadata"]["namespace"] == binding["metadata"]["namespace"] == "monitoring"
    assert role["rules"] == [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["prom-token"],
                              "verbs": ["get"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == "nodemedic-remediator"
    with pytest.raises(RuntimeError, match=r"prometheusTokenSecret\.namespace is required"):
        rendered("remediator.prometheusTokenSecret.name=prom-token")
