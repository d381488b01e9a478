"""`nodemedic-remediator plan --snapshot FILE`: a file of the wrong shape is an error naming the file (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from remediator.cli import main

ROOT = Path(__file__).resolve().parents[3]
POLICY = ROOT / "tests/testdata/policies/good/minimal.yaml"


@pytest.mark.parametrize(("content", "message"), [
    ("[]", "expected a JSON object with `items` (kubectl's `kind: List`), not a list"),
    ('{"items": {"kind": "Node"}}', "`items` must be a list, not dict"),
    ("{not json", "Expecting property name"),
], ids=["a-list", "items-not-a-list", "not-json"])
def test_a_snapshot_of_the_wrong_shape_is_refused_with_the_file_name(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str) -> None:
    # Found by tests/unit/fuzz: `[]` ended in an AttributeError traceback.
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text(content)
    assert main(["plan", "--policy", str(POLICY), "--snapshot", str(snapshot)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{snapshot}: ") and message in err, err


def test_a_snapshot_with_odd_items_plans_what_it_can(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text('{"kind": "List", "items": [null, 3, "x", {"kind": "Node", "metadata": {"name": "n1"}}]}')
    assert main(["plan", "--policy", str(POLICY), "--snapshot", str(snapshot), "--json"]) == 0
    assert '"evictions": []' in capsys.readouterr().out


METRICS_POLICY = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
metricsProviders: [{source: KubernetesMetrics}]
strategies:
- name: LowNodeUtilization
  args:
    thresholds: {cpu: 20, memory: 20}
    targetThresholds: {cpu: 50, memory: 50}
    metricsUtilization: {source: KubernetesMetrics}
"""


@pytest.mark.parametrize(("content", "code", "said"), [
    ("[]", 2, "expected a JSON object"),
    ('{"items": [null, 3, {"kind": "NodeMetrics", "metadata": "x"}, {"kind": "PodMetrics", "metadata": [1]}]}', 0,
     '"evictions": []'),
], ids=["a-list", "odd-metrics-items"])
def test_a_snapshot_read_for_measured_usage_is_shape_checked_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, code: int, said: str) -> None:
    # The measured usage of a --snapshot is read from its items: `[]` raised AttributeError there, before the
    # snapshot's own shape check, and so did a metrics item that is not an object or has odd metadata.
    policy, snapshot = tmp_path / "policy.yaml", tmp_path / "cluster.json"
    policy.write_text(METRICS_POLICY)
    snapshot.write_text(content)
    assert main(["plan", "--policy", str(policy), "--snapshot", str(snapshot), "--json"]) == code
    out, err = capsys.readouterr()
    assert said in (out if code == 0 else err), (out, err)
