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
    assert "policy.yaml:8: scheduler.profile: invalid schedulerName 'Not_A_Name'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["pol\nevil: injected.yaml", "pol\revil.yaml", "pol\u2028evil: 1.yaml",
                                  "pol\x85evil: 1.yaml", "bad\udcff.yaml"])
def test_the_policy_file_name_stays_inside_the_header_comment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    """A name with a line break (one YAML also reads as one: CR, NEL, U+2028) would end the comment and start keys
    of the name's choosing; one with bytes that are not UTF-8 could not be written to the file kube-scheduler reads."""
    path = tmp_path / name
    path.write_text(POLICY.format(profile="nodemedic-spread"))
    out = tmp_path / "config.yaml"
    assert main(["scheduler-config", "--policy", str(path), "--output", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    assert set(doc) == {"apiVersion", "kind", "leaderElection", "profiles"}
    assert "evil" not in doc
    header = text.split("\napiVersion:")[0].splitlines()
    assert len(header) == 2 and all(line.startswith("# ") for line in header)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("flags", "error"), [
    (["--lease-name", "Nodemedic_Scheduler"], "argument --lease-name: invalid Lease name 'Nodemedic_Scheduler'"),
    (["--lease-name", "a/../../b"], "argument --lease-name: invalid Lease name"),
    (["--lease-namespace", "kube system"], "argument --lease-namespace: invalid namespace 'kube system'"),
])
def test_a_lease_the_api_server_would_refuse_exits_2_before_any_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], error: str) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(POLICY.format(profile="nodemedic-spread"))
    with pytest.raises(SystemExit) as e:
        main(["scheduler-config", "--policy", str(path), *flags])
    assert e.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and error in err
