"""The deschedule-kind strategies' args read from a policy file with descheduler's names, their defaults, and
`plan --json` on a snapshot with all five."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.cli import main
from remediator.model.records import LabelSelector, SelectorRequirement
from remediator.policy.fields import Namespaces
from remediator.policy.loader import load_policy
from remediator.strategies import CATALOG
from remediator.strategies.pod_life_time.args import PodLifeTimeArgs
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_failed_pods.args import RemoveFailedPodsArgs
from remediator.strategies.remove_pods_having_too_many_restarts.args import RemovePodsHavingTooManyRestartsArgs
from remediator.strategies.remove_pods_violating_inter_pod_anti_affinity.args import (
    RemovePodsViolatingInterPodAntiAffinityArgs,
)
from remediator.strategies.remove_pods_violating_node_affinity.args import (
    PREFERRED,
    REQUIRED,
    RemovePodsViolatingNodeAffinityArgs,
)

GOOD = Path(__file__).parents[4] / "tests" / "testdata" / "policies" / "good"


def test_every_argument_is_read_with_descheduler_names() -> None:
    got = {s.name: s.args for s in load_policy(GOOD / "deschedule-strategies.yaml", catalog=CATALOG).strategies}
    assert got == {
        "RemovePodsViolatingNodeAffinity": RemovePodsViolatingNodeAffinityArgs(
            scope=PodScope(Namespaces(exclude=("kube-system",))), node_affinity_type=(REQUIRED, PREFERRED)),
        "RemovePodsViolatingInterPodAntiAffinity": RemovePodsViolatingInterPodAntiAffinityArgs(
            scope=PodScope(label_selector=LabelSelector(match_expressions=(SelectorRequirement("app", "Exists"),)))),
        "RemovePodsHavingTooManyRestarts": RemovePodsHavingTooManyRestartsArgs(
            100, including_init_containers=True, states=("CrashLoopBackOff",)),
        "PodLifeTime": PodLifeTimeArgs(
            scope=PodScope(Namespaces(include=("batch",))), max_pod_life_time_seconds=86400,
            states=("Running", "CrashLoopBackOff"), owner_kinds_exclude=("Job",)),
        "RemoveFailedPods": RemoveFailedPodsArgs(
            reasons=("OOMKilled", "NodeAffinity"), exit_codes=(137,), exclude_owner_kinds=("Job",),
            min_pod_lifetime_seconds=600, including_init_containers=True),
    }


def test_descheduler_defaults() -> None:
    assert RemoveFailedPodsArgs().min_pod_lifetime_seconds == 3600
    assert RemoveFailedPodsArgs().reasons == () and RemoveFailedPodsArgs().exit_codes == ()
    assert not RemovePodsHavingTooManyRestartsArgs(1).including_init_containers
    assert PodLifeTimeArgs().max_pod_life_time_seconds is None


def test_plan_json_on_a_snapshot_shows_each_strategy_with_its_reasons(capsys: pytest.CaptureFixture[str]) -> None:
    root = GOOD.parents[1]
    code = main(["plan", "--policy", str(GOOD / "deschedule-demo.yaml"), "--snapshot",
                 str(root / "snapshots" / "deschedule-strategies.json"), "--now", "2026-11-24T12:00:00Z", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    got = [(e["strategy"], e["name"], e["reason"]) for e in doc["evictions"]]
    assert got == [
        ("RemovePodsViolatingNodeAffinity", "db-0",
         "node hdd-1 no longer matches its required node affinity; ssd-2 does"),
        ("RemovePodsViolatingNodeAffinity", "api-0",
         "preferred node affinity weight 0 on hdd-1; ssd-2 fits with weight 10"),
        ("RemovePodsViolatingInterPodAntiAffinity", "cache-0",
         "required anti-affinity violated by shop/cache-1 on the same node hdd-1"),
        ("RemovePodsHavingTooManyRestarts", "web-0", "140 restarts >= podRestartThreshold 100"),
        ("RemovePodsHavingTooManyRestarts", "web-1", "140 restarts >= podRestartThreshold 100"),
        ("PodLifeTime", "nightly-0", "age 216000s > maxPodLifeTimeSeconds 86400"),
        ("RemoveFailedPods", "report-0", "Failed for a pod 7200s old; reason OOMKilled"),
    ]
    assert doc["crashLoopNodes"] == [{"node": "bad-1", "namespace": "shop", "owner": "ReplicaSet/web",
                                      "pods": ["web-0", "web-1"], "healthyElsewhere": 2}]


def test_a_number_of_seconds_past_gos_duration_limit_is_refused_at_load(tmp_path: Path) -> None:
    # Issue 25: maxPodLifeTimeSeconds: 100000000000000 loaded, then every planning cycle raised OverflowError (a
    # timedelta of that many seconds); a file's error names the line and field instead.
    policy = tmp_path / "policy.yaml"
    policy.write_text("""apiVersion: nodemedic.io/v1alpha1
kind: RemediationPolicy
strategies:
- name: PodLifeTime
  args:
    maxPodLifeTimeSeconds: 100000000000000
    conditions:
    - {type: Ready, minTimeSinceLastTransitionSeconds: 9223372037}
""")
    with pytest.raises(ConfigError) as e:
        load_policy(policy, catalog=CATALOG)
    assert e.value.errors == [
        f"{policy}:6: strategies[0].args.maxPodLifeTimeSeconds: must be at least 0 and at most 9223372036, "
        "got 100000000000000",
        f"{policy}:8: strategies[0].args.conditions[0].minTimeSinceLastTransitionSeconds: must be at least 0 and at "
        "most 9223372036, got 9223372037"]
