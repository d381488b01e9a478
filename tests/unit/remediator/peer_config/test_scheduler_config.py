"""`scheduler-config`: the KubeSchedulerConfiguration from the policy's scheduler section (the real kube-scheduler
accepting it is tests/e2e/test_zone_balance.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from remediator.cli import main

POLICY = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules: []
strategies:
- name: HighNodeUtilization
  args: {{thresholds: {{cpu: 20}}}}
scheduler:
  profile: {profile}
  defaultConstraints:
  - {{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}}
"""


def generate(tmp_path: Path, capsys: pytest.CaptureFixture[str], profile: str, *flags: str) -> tuple[str, dict]:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(profile=profile))
    assert main(["scheduler-config", "--policy", str(path), *flags]) == 0
    text = capsys.readouterr().out
    return text, yaml.safe_load(text)


def test_the_spread_profile_carries_the_policys_default_constraints_and_outweighs_resource_scores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, doc = generate(tmp_path, capsys, "default-scheduler", "--kubeconfig", "/etc/k/kubeconfig")
    spread, packing = doc["profiles"]
    assert spread["schedulerName"] == "default-scheduler"
    assert spread["plugins"]["score"]["enabled"] == [{"name": "PodTopologySpread", "weight": 5}]
    assert spread["pluginConfig"][0]["args"] == {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]}
    assert packing["schedulerName"] == "nodemedic-packing"
    assert packing["pluginConfig"][1]["args"]["scoringStrategy"]["type"] == "MostAllocated"
    assert doc["clientConnection"] == {"kubeconfig": "/etc/k/kubeconfig"}
    assert doc["leaderElection"]["resourceName"] == "kube-scheduler"
    assert text.count("\n#") + text.count("  #") >= 6, "each choice is explained in a comment"


def test_a_second_scheduler_elects_on_its_own_lease_and_one_profile_packs_when_named_twice(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, doc = generate(tmp_path, capsys, "nodemedic-spread", "--lease-namespace", "nodemedic")
    assert doc["leaderElection"] == {"leaderElect": True, "resourceName": "nodemedic-scheduler",
                                     "resourceNamespace": "nodemedic"}
    assert [p["schedulerName"] for p in doc["profiles"]] == ["nodemedic-spread", "nodemedic-packing"]


def test_a_bad_policy_exits_2_naming_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(profile="Not_A_Name"))
    with pytest.raises(SystemExit) as e:
        main(["scheduler-config", "--policy", str(path)])
    assert e.value.code == 2
    assert "policy.yaml:8: scheduler.profile: must be a DNS subdomain name" in capsys.readouterr().err
