"""`nodemedic-remediator plan --snapshot FILE`: a file of the wrong shape is an error naming the file (exit 2)."""

from __future__ import annotations

import json
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


@pytest.mark.parametrize(("now", "said"), [
    ("9999-12-31T23:59:59Z", "--now: '9999-12-31T23:59:59Z' is outside 1970-01-01..2262-04-11"),
    ("0001-01-01T00:00:00Z", "--now: '0001-01-01T00:00:00Z' is outside 1970-01-01..2262-04-11"),
    ("2026-03-01T12:00:00", "--now: '2026-03-01T12:00:00' has no UTC offset"),
    ("noon", "--now: not an RFC 3339 time: 'noon'"),
], ids=["year-9999", "year-1", "no-offset", "garbage"])
def test_plan_refuses_a_now_it_cannot_plan_at_with_exit_2_and_no_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], now: str, said: str) -> None:
    # Issue 25: --now 0001-01-01T00:00:00Z ended in an OverflowError traceback (exit 1).
    snapshot = tmp_path / "cluster.json"
    snapshot.write_text('{"kind": "List", "items": []}')
    assert main(["plan", "--policy", str(POLICY), "--snapshot", str(snapshot), "--now", now]) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and "Traceback" not in err, err


def _node(name: str, stamp: str) -> dict[str, object]:
    return {"kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                      {"type": "KernelDeadlock", "status": "True", "lastTransitionTime": stamp}]}}


def test_a_snapshot_with_unusable_times_plans_the_rest_and_names_each_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 25: a year-9999 stamp raised OverflowError, and times without an offset mixed with aware ones TypeError.
    policy, snapshot = tmp_path / "policy.yaml", tmp_path / "cluster.json"
    policy.write_text("""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: kernel-deadlock
  condition: {type: KernelDeadlock, status: "True", for: 30s}
  taint: {key: nodemedic.io/kernel-deadlock, value: "true", effect: NoSchedule}
safety: {maxTaintedNodes: 10, maxTaintedNodesPercent: 100}
""")
    snapshot.write_text(json.dumps({"kind": "List", "items": [
        _node("future", "9999-12-31T23:59:59Z"), _node("naive", "2026-03-01T11:00:00"),
        _node("sick", "2026-03-01T11:00:00Z")]}))
    assert main(["plan", "--policy", str(policy), "--snapshot", str(snapshot), "--json",
                 "--now", "2026-03-01T12:00:00Z"]) == 0
    out, err = capsys.readouterr()
    assert [c["node"] for c in json.loads(out)["taints"]["add"]] == ["sick"]
    assert err.splitlines() == [
        f"{snapshot}: items[0] (Node future): status.conditions[1].lastTransitionTime: '9999-12-31T23:59:59Z' is "
        "outside 1970-01-01..2262-04-11: treated as unknown",
        f"{snapshot}: items[1] (Node naive): status.conditions[1].lastTransitionTime: '2026-03-01T11:00:00' has no "
        "UTC offset: treated as unknown"]


FULL_POOL = ROOT / "tests/testdata/snapshots/full-karpenter-pool.json"  # the sick node's pod fits no other node
SHIPPED = ROOT / "deploy/policy/default.yaml"  # autoscaler.addsNodes: auto


@pytest.mark.parametrize(("flag", "outcome"), [
    ([], "protected: no node autoscaler detected (autoscaler.addsNodes: auto)"),
    (["--autoscaler", "none"], "protected: no node autoscaler detected (autoscaler.addsNodes: auto)"),
    (["--autoscaler", "karpenter"], "evicted: to a new node like sick from Karpenter (detected)"),
    (["--autoscaler", "cluster-autoscaler"], "evicted: to a new node like sick from cluster-autoscaler (detected)"),
], ids=["no-flag", "none", "karpenter", "cluster-autoscaler"])
def test_a_snapshot_shows_no_autoscaler_so_the_flag_says_which_one_auto_counts_on(
        capsys: pytest.CaptureFixture[str], flag: list[str], outcome: str) -> None:
    assert main(["plan", "--policy", str(SHIPPED), "--snapshot", str(FULL_POOL), "--json",
                 "--now", "2026-03-01T12:00:00Z", *flag]) == 0
    plan = json.loads(capsys.readouterr().out)
    said = [f"evicted: {e['reason'].rsplit('now: ', 1)[1]}" for e in plan["evictions"]] + [
        f"protected: {p['why'].rsplit('; ', 1)[1]}" for p in plan["protected"]]
    assert said == [outcome]


def test_an_unknown_autoscaler_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["plan", "--policy", str(SHIPPED), "--snapshot", str(FULL_POOL), "--autoscaler", "keda"])
    assert exited.value.code == 2
    assert "--autoscaler: invalid choice: 'keda' (choose from 'karpenter', 'cluster-autoscaler', 'none')" in \
        capsys.readouterr().err


def test_a_snapshot_with_a_failed_restart_plans_the_drain_then_the_reboot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped policy's kubelet-unhealthy ladder: the agent answered Failed to the restart, so the reboot is next;
    it waits for the node's pod to be evicted, and starts once none is left."""
    snapshot = ROOT / "tests/testdata/snapshots/repair-ladder.json"
    shipped = ROOT / "deploy/policy/default.yaml"
    assert main(["plan", "--policy", str(shipped), "--snapshot", str(snapshot)]) == 0
    out = capsys.readouterr().out
    assert "evict      namespace=shop  name=web-7d9f-abcde  node=node-a" in out
    assert ("repair-wait node=node-a  rule=kubelet-unhealthy  step=reboot  draining first (every PDB held): 1 pod(s) "
            "left: shop/web-7d9f-abcde") in out
    doc = json.loads(snapshot.read_text())
    doc["items"] = [i for i in doc["items"] if i["kind"] == "Node"]
    (drained := tmp_path / "drained.json").write_text(json.dumps(doc))
    assert main(["plan", "--policy", str(shipped), "--snapshot", str(drained), "--json"]) == 0
    (start,) = json.loads(capsys.readouterr().out)["repair"]["start"]
    assert {k: start[k] for k in ("node", "rule", "step", "action")} == {
        "node": "node-a", "rule": "kubelet-unhealthy", "step": 2, "action": "reboot"}
    assert start["cause"].startswith("restart kubelet: the agent answered Failed: restarting kubelet failed: exit 5")


def test_a_snapshot_with_dark_nodes_shows_what_is_fenced_replaced_and_left_and_why(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The shipped policy at 10:13: node-a dark 12 minutes with a NodeClaim (replaceAfter 10m: deleted), node-b's
    kubelet silent while its agent writes (never fenced), node-c dark and confirmed off by a person (fenced, its
    StatefulSet pod freed), node-d dark without evidence (its pods stay, a person is asked)."""
    snapshot = ROOT / "tests/testdata/snapshots/dark-nodes.json"
    shipped = ROOT / "deploy/policy/default.yaml"
    assert main(["plan", "--policy", str(shipped), "--snapshot", str(snapshot), "--now", "2026-11-27T10:13:00Z"]) == 0
    out = capsys.readouterr().out
    assert ("fence      node=node-c  evidence=person  frees=shop/db-0  confirmed off at 2026-11-27T10:09:30Z by "
            "alice@example.com") in out
    assert "replace    node=node-a  nodeclaim=general-x7k2p  frees=shop/web-7d9f-abcde  dark for 11m59s" in out
    assert "node=node-b  seen=kubelet-silent  its kubelet is silent since 2026-11-27T10:05:01Z but its agent wrote" \
        in out
    assert "node=node-d  seen=dark" in out and "kubectl nodemedic fence node-d --confirm" in out
    assert "node=node-b  evidence" not in out and "node=node-d  evidence" not in out
    assert main(["plan", "--policy", str(shipped), "--snapshot", str(snapshot), "--now", "2026-11-27T10:13:00Z",
                 "--json"]) == 0
    dark = json.loads(capsys.readouterr().out)["darkNodes"]
    assert [(f["node"], f["evidence"]) for f in dark["fence"]] == [("node-c", "person")]
    assert [n["node"] for n in dark["nodes"] if n.get("needsEvidence")] == ["node-d"]
