"""The chart's alerts and dashboard through the pinned Prometheus's own tools: `promtool check rules` parses every
alert expression, annotation template and dashboard query; `promtool test rules` runs the cases of
tests/testdata/prometheus/ (each alert fires when it should, stays quiet when it should not, and waits its `for`).
promtool missing: these tests FAIL, never skip (`hack/cluster build --only prometheus`)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.kcp import build, paths  # the pinned promtool
from tests import chart_monitoring as cm

TESTDATA = cm.ROOT / "tests" / "testdata" / "prometheus"
CRONJOB = ("remediator.mode=cronjob",)


@pytest.fixture(scope="module")
def promtool() -> Path:
    if build.is_missing("prometheus"):
        pytest.fail(f"promtool is not built ({paths.binary('promtool')} missing): run `make build` (or "
                    "`hack/cluster build --only prometheus`); these tests need it and never skip", pytrace=False)
    return paths.binary("promtool")


def run(promtool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(promtool), *args], capture_output=True, text=True, timeout=120, check=False)


def cases(name: str, rules: Path, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The test file `name` pointed at `rules` (written beside it: promtool resolves rule_files from there)."""
    doc = yaml.safe_load((TESTDATA / name).read_text())
    doc["rule_files"] = [rules.name]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, doc


@pytest.mark.parametrize(("values", "test_file"), [((), "alerts.test.yaml"), (CRONJOB, "alerts-cronjob.test.yaml")],
                         ids=["deployment", "cronjob"])
def test_promtool_runs_a_firing_and_a_quiet_case_for_every_alert(
        promtool: Path, values: tuple[str, ...], test_file: str, tmp_path: Path) -> None:
    docs = cm.rendered(*values) if values else cm.shipped()
    groups = cm.rule_groups(docs, annotations=False)
    rules = cm.write_rules(tmp_path / "rules.yaml", groups)
    path, doc = cases(test_file, rules, tmp_path)
    tested = [a for t in doc["tests"] for a in t["alert_rule_test"]]
    firing = {a["alertname"] for a in tested if a["exp_alerts"]}
    quiet = {a["alertname"] for a in tested if not a["exp_alerts"]}
    # Every alert of this rendering that no other rendering's file covers (the CronJob file covers only its own).
    expected = cm.alert_names(groups) if not values else cm.alert_names(groups) - cm.alert_names(
        cm.rule_groups(cm.shipped()))
    assert expected <= firing, f"alerts without a case where they fire: {sorted(expected - firing)}"
    assert expected <= quiet, f"alerts without a case where they stay quiet: {sorted(expected - quiet)}"
    done = run(promtool, "test", "rules", str(path))
    print(f"\npromtool test rules ({test_file}, {len(doc['tests'])} groups, {len(tested)} evaluations of "
          f"{len(firing)} alerts):\n{done.stdout}{done.stderr}")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("values", [(), CRONJOB], ids=["deployment", "cronjob"])
def test_every_alert_expression_and_annotation_template_parses(
        promtool: Path, values: tuple[str, ...], tmp_path: Path) -> None:
    docs = cm.rendered(*values) if values else cm.shipped()
    rules = cm.write_rules(tmp_path / "rules.yaml", cm.rule_groups(docs))
    done = run(promtool, "check", "rules", str(rules))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(cm.alert_names(cm.rule_groups(docs)))} rules found" in done.stdout, done.stdout


def test_a_broken_expression_is_refused_by_the_parser(promtool: Path, tmp_path: Path) -> None:
    """The check above can fail: an unbalanced parenthesis (what the old test counted) and a misplaced `by`."""
    for expr in ("max(nodemedic_circuit_breaker_open == 1", "max(nodemedic_leader) by by (node)"):
        rules = cm.write_rules(tmp_path / "broken.yaml", [{"name": "g", "rules": [{"alert": "A", "expr": expr}]}])
        done = run(promtool, "check", "rules", str(rules))
        assert done.returncode != 0 and "parse error" in done.stdout + done.stderr, expr


def test_every_dashboard_query_parses_and_the_shipped_configmap_carries_the_charts_file(
        promtool: Path, tmp_path: Path) -> None:
    board = cm.dashboard()
    assert cm.dashboard(cm.shipped()) == board
    (configmap,) = [d for d in cm.shipped() if d["kind"] == "ConfigMap"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"  # what Grafana's sidecar selects by default
    queries = cm.panel_queries(board)
    rules = cm.write_rules(tmp_path / "dashboard.yaml", cm.as_recording_rules(queries))
    done = run(promtool, "check", "rules", str(rules))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(queries)} rules found" in done.stdout, done.stdout


def test_the_dashboard_has_the_panels_the_issue_asks_for() -> None:
    board = cm.dashboard()
    metrics = " ".join(expr for _, expr in cm.panel_queries(board))
    for metric in ("nodemedic_tainted_nodes", "nodemedic_circuit_breaker_open", "nodemedic_evictions_total",
                   "nodemedic_plan_cycle_seconds_bucket", "nodemedic_api_requests_total",
                   "nodemedic_agent_api_requests_total", "nodemedic_notifications_total",
                   "nodemedic_agent_condition_status"):
        assert metric in metrics, metric
    assert "by (strategy, outcome)" in metrics and "count by (type)" in metrics
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
