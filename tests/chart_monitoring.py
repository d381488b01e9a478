"""The chart's PrometheusRule and Grafana dashboard as Prometheus reads them: the rule groups of a rendering as a
rule file, and every panel query of the dashboard. For `promtool` in the unit tests and the real Prometheus of the
e2e tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from hack import manifests  # the pinned helm and the rendered manifests

ROOT = Path(__file__).resolve().parents[1]

DASHBOARD = manifests.CHART / "files" / "dashboard.json"


def rendered(*values: str) -> list[dict[str, Any]]:
    """`helm template` of the chart with the PrometheusRule and the dashboard on, and `values` (KEY=VALUE)."""
    out = manifests.run_helm("template", manifests.RELEASE, str(manifests.CHART), "-n", manifests.NAMESPACE,
                             "--set", "prometheusRule.enabled=true,grafanaDashboard.enabled=true",
                             *(a for v in values for a in ("--set", v)))
    return [d for d in yaml.safe_load_all(out) if d]


def shipped() -> list[dict[str, Any]]:
    """deploy/manifests/monitoring.yaml: the chart's defaults, as rendered by `make manifests`."""
    return [d for d in yaml.safe_load_all((manifests.MANIFESTS / "monitoring.yaml").read_text()) if d]


def rule_groups(docs: list[dict[str, Any]], *, annotations: bool = True) -> list[dict[str, Any]]:
    """The PrometheusRule's groups. `annotations=False` drops the annotations: `promtool test rules` compares an
    alert's annotations too when a case names none, and the cases are about when alerts fire, with which labels."""
    (rule,) = [d for d in docs if d["kind"] == "PrometheusRule"]
    groups: list[dict[str, Any]] = rule["spec"]["groups"]
    if annotations:
        return groups
    return [{**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]} for g in groups]


def write_rules(path: Path, groups: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"groups": groups}, sort_keys=False))
    return path


def alert_names(groups: list[dict[str, Any]]) -> set[str]:
    return {r["alert"] for g in groups for r in g["rules"] if "alert" in r}


def dashboard(docs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The dashboard's JSON: from a rendering's ConfigMap, or the chart's file."""
    if docs is None:
        return dict(json.loads(DASHBOARD.read_text()))
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and "nodemedic.json" in d.get("data", {})]
    return dict(json.loads(cm["data"]["nodemedic.json"]))


def panel_queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title / refId, PromQL) of every target of every panel."""
    return [(f"{p['title']} / {t['refId']}", t["expr"]) for p in board["panels"] for t in p["targets"]]


def as_recording_rules(queries: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The queries as recording rules, so that `promtool check rules` parses each with Prometheus's own parser."""
    return [{"name": "dashboard", "rules": [{"record": f"dashboard:query_{i}", "expr": expr}
                                            for i, (_, expr) in enumerate(queries)]}]
