"""The cluster-autoscaler --status-taint flags printed for a policy: every taint key nodemedic may own, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from remediator.cli import main
from remediator.peer_config.autoscaler_flags import status_taint_flags
from remediator.policy.loader import parse_policy
from remediator.strategies import CATALOG

RULES = """apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
rules:
- name: deadlock
  condition: {type: KernelDeadlock}
  taint: {key: nodemedic.io/kernel-deadlock}
- name: deadlock-npd
  condition: {type: KernelDeadlock, status: "True"}
  taint: {key: nodemedic.io/kernel-deadlock, effect: NoSchedule}
- name: disk
  condition: {type: DiskHardware}
  taint: {key: example.com/disk, effect: PreferNoSchedule}
"""
HNU = """strategies:
- name: HighNodeUtilization
  args: {thresholds: {cpu: 20}%s}
"""


@pytest.mark.parametrize(("extra", "expected"), [
    ("", ["example.com/disk", "nodemedic.io/kernel-deadlock"]),
    (HNU % "", ["example.com/disk", "nodemedic.io/consolidating", "nodemedic.io/kernel-deadlock"]),
    (HNU % ", taintDrainedNodes: false", ["example.com/disk", "nodemedic.io/kernel-deadlock"]),
], ids=["rules-once-each", "consolidation-taint", "consolidation-without-taint"])
def test_every_owned_taint_key_becomes_one_status_taint_flag(extra: str, expected: list[str]) -> None:
    policy = parse_policy(RULES + extra, source="p.yaml", catalog=CATALOG)
    assert status_taint_flags(policy) == [f"--status-taint={k}" for k in expected]


def test_the_command_prints_the_flags_and_refuses_a_bad_policy(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    good = tmp_path / "p.yaml"
    good.write_text(RULES)
    assert main(["autoscaler-flags", "--policy", str(good)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == ["--status-taint=example.com/disk", "--status-taint=nodemedic.io/kernel-deadlock"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(RULES.replace("NoSchedule", "Sometimes"))
    with pytest.raises(SystemExit) as e:
        main(["autoscaler-flags", "--policy", str(bad)])
    assert e.value.code == 2
    assert "bad.yaml:" in capsys.readouterr().err
