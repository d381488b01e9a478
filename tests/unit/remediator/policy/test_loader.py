"""The policy file: typed values and defaults from good files, FILE:LINE: field.path errors from bad ones."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.alerts import formats as notify_formats
from remediator.model.records import Effect, LabelSelector, SelectorRequirement, Taint
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.eviction import EvictionSettings
from remediator.policy.fields import Namespaces
from remediator.policy.limits import Limits
from remediator.policy.loader import load_policy, parse_policy, validate_main
from remediator.policy.model import Policy, StrategyConfig
from remediator.policy.notifications import SINK_TYPES, Notifications, SinkConfig
from remediator.policy.rules import TaintRule
from remediator.policy.safety import Safety
from remediator.policy.scheduler import DefaultConstraint, SchedulerSettings
from remediator.strategies import CATALOG
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

ROOT = Path(__file__).resolve().parents[4]
GOOD = ROOT / "tests" / "testdata" / "policies" / "good"
BAD = ROOT / "tests" / "testdata" / "policies" / "bad"
DEFAULT_POLICY = ROOT / "deploy" / "policy" / "default.yaml"
HEADER = "apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n"
DEFAULT_STRATEGY = StrategyConfig("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs())

# --- good files ---------------------------------------------------------------------------------------


def test_a_minimal_policy_takes_every_default_including_the_default_strategy() -> None:
    assert load_policy(GOOD / "minimal.yaml", catalog=CATALOG) == Policy(strategies=(DEFAULT_STRATEGY,))


def test_every_field_of_the_full_policy_lands_in_its_dataclass_field() -> None:
    expected = Policy(
        rules=(
            TaintRule(name="kernel-deadlock", condition_type="KernelDeadlock", condition_status="True",
                      for_=dt.timedelta(seconds=45),
                      taint=Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE),
                      evict=False, recover_after=dt.timedelta(hours=1, minutes=30), allow_no_execute=False),
            TaintRule(name="disk-gone", condition_type="DiskMissing", condition_status="Unknown",
                      for_=dt.timedelta(minutes=2), taint=Taint("example.com/disk", "missing", Effect.NO_EXECUTE),
                      evict=True, recover_after=dt.timedelta(seconds=90), allow_no_execute=True),
        ),
        evictor=EvictorArgs(
            evict_local_storage_pods=True, evict_daemonset_pods=True, evict_system_critical_pods=True,
            evict_failed_bare_pods=True, ignore_pvc_pods=True, priority_threshold=1000, priority_threshold_name="",
            label_selector=LabelSelector(
                match_labels=(("tier", "web"), ("app.kubernetes.io/name", "shop")),
                match_expressions=(SelectorRequirement("team", "In", ("a", "b")),
                                   SelectorRequirement("canary", "DoesNotExist"))),
            namespaces=Namespaces(include=("prod", "staging")), min_replicas=2,
            min_pod_age=dt.timedelta(minutes=10), node_fit=False, honor_safe_to_evict=False,
        ),
        strategies=(StrategyConfig("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs(
            scope=PodScope(Namespaces(exclude=("kube-system",)), LabelSelector(match_labels=(("evictable", "yes"),))),
            include_prefer_no_schedule=True,
            excluded_taints=("example.com/keep", "example.com/disk=present"),
            included_taints=None,
        )), StrategyConfig("LowNodeUtilization", LowNodeUtilizationArgs(
            thresholds=(("cpu", 10.0), ("memory", 15.5), ("nvidia.com/gpu", 25.0), ("pods", 20.0)),
            target_thresholds=(("cpu", 40.0), ("memory", 45.0), ("nvidia.com/gpu", 75.0), ("pods", 50.0)),
            use_deviation_thresholds=True, number_of_nodes=3,
            evictable_namespaces_exclude=("kube-system", "monitoring"),
            eviction_limit_per_node=4,
        )), StrategyConfig("HighNodeUtilization", HighNodeUtilizationArgs(
            thresholds=(("cpu", 20.0), ("memory", 25.0)), number_of_nodes=1,
            evictable_namespaces_exclude=("kube-system",), only_thresholding_resources=True,
            taint_drained_nodes=False, max_consolidating_nodes=2, consolidation_timeout=dt.timedelta(minutes=30),
        ))),
        limits=Limits(max_pods_to_evict_per_node=3, max_pods_to_evict_per_namespace=2, max_pods_to_evict_total=None,
                      owner_cooldown=dt.timedelta(seconds=30)),
        eviction=EvictionSettings(retry_deadline=dt.timedelta(minutes=20), initial_backoff=dt.timedelta(seconds=2),
                                  max_backoff=dt.timedelta(minutes=1), grace_period_seconds=60),
        safety=Safety(max_tainted_nodes=None, max_tainted_nodes_percent=25.5, min_tainted_nodes=2, paused=True,
                      exclude_label="example.com/no-remediation",
                      acknowledge=("evict-daemonset-pods", "evict-system-critical-pods")),
        notifications=Notifications(queue_size=50, sinks=(
            SinkConfig(type="webhook", url="https://hooks.example.com/nodemedic", name="ops",
                       timeout=dt.timedelta(seconds=10), max_attempts=3,
                       initial_backoff=dt.timedelta(milliseconds=250), max_backoff=dt.timedelta(minutes=1),
                       headers=(("Authorization", "Bearer x"), ("X-Team", "infra"))),
            SinkConfig(type="alertmanager", url="http://alertmanager.monitoring:9093", name="alertmanager-1"),
        )),
        scheduler=SchedulerSettings(
            profile="nodemedic-spread", packing_profile="default-scheduler", other_schedulers=("team-scheduler",),
            default_constraints=(DefaultConstraint(1, "topology.kubernetes.io/zone", "DoNotSchedule"),
                                 DefaultConstraint(2, "kubernetes.io/hostname", "ScheduleAnyway")),
            min_surviving_share=0.5, max_exposure_series=200, configured=True),
    )
    assert load_policy(GOOD / "full.yaml", catalog=CATALOG) == expected


def test_rules_that_leave_fields_out_get_derived_names_and_the_documented_defaults() -> None:
    policy = load_policy(GOOD / "defaults.yaml", catalog=CATALOG)
    deadlock, not_ready, readonly, corrupt = policy.rules
    assert deadlock == TaintRule(name="kerneldeadlock-true", condition_type="KernelDeadlock", condition_status="True",
                                 for_=dt.timedelta(0), taint=Taint("nodemedic.io/kernel-deadlock", "",
                                                                   Effect.NO_SCHEDULE),
                                 evict=True, recover_after=dt.timedelta(minutes=5), allow_no_execute=False)
    assert (not_ready.name, not_ready.condition_type, not_ready.condition_status) == ("ready-false", "Ready", "False")
    assert not_ready.evict is False
    assert readonly.taint == corrupt.taint == Taint("nodemedic.io/broken", "true", Effect.NO_SCHEDULE)


def test_an_explicit_empty_strategy_list_means_no_strategies() -> None:
    assert load_policy(GOOD / "defaults.yaml", catalog=CATALOG).strategies == ()


def test_sinks_without_a_name_are_named_after_their_type_and_position() -> None:
    sinks = load_policy(GOOD / "defaults.yaml", catalog=CATALOG).notifications.sinks
    assert [(s.type, s.name) for s in sinks] == [("slack", "slack-0"), ("webhook", "webhook-1")]
    assert sinks[1].timeout == dt.timedelta(seconds=5) and sinks[1].max_attempts == 5


def test_sections_given_as_null_take_their_defaults() -> None:
    policy = parse_policy(HEADER + "rules:\nevictor:\nlimits:\nsafety:\nnotifications:\n", source="p.yaml",
                          catalog=CATALOG)
    assert policy == Policy(strategies=(DEFAULT_STRATEGY,))


@pytest.mark.parametrize("name", sorted(p.name for p in GOOD.glob("*.yaml")))
def test_validate_accepts_each_good_file_with_a_summary_line(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(GOOD / name)
    assert validate_main(path, catalog=CATALOG) == 0
    out, err = capsys.readouterr()
    assert out.startswith(f"OK: {path}: ") and " rules, strategies: " in out
    assert err == ""


# --- the shipped default ------------------------------------------------------------------------------


def test_the_shipped_default_policy_loads_with_the_real_loader() -> None:
    policy = load_policy(DEFAULT_POLICY, catalog=CATALOG)
    assert policy.strategies == (DEFAULT_STRATEGY,)
    assert policy.safety == Safety()


@pytest.mark.parametrize("condition", ["KernelDeadlock", "ReadonlyFilesystem", "FilesystemCorruption",
                                       "ContainerRuntimeUnhealthy", "KubeletUnhealthy"])
def test_the_shipped_default_policy_taints_nodes_with_a_known_problem(condition: str) -> None:
    rules = [r for r in load_policy(DEFAULT_POLICY, catalog=CATALOG).rules if r.condition_type == condition]
    assert len(rules) == 1
    rule = rules[0]
    assert rule.condition_status == "True"
    assert rule.taint.key.startswith("nodemedic.io/") and rule.taint.effect is Effect.NO_SCHEDULE
    assert dt.timedelta(0) < rule.for_ <= dt.timedelta(minutes=5)
    assert dt.timedelta(minutes=5) <= rule.recover_after <= dt.timedelta(hours=1)


def test_the_shipped_default_policy_explains_its_choices_in_comments() -> None:
    comments = [line for line in DEFAULT_POLICY.read_text().splitlines() if line.lstrip().startswith("#")]
    assert len(comments) >= 10


# --- bad files ----------------------------------------------------------------------------------------

# file -> what its first error must contain right after the file name: ":LINE: field.path"
BAD_FILES = {
    "syntax-error.yaml": ":6: <document>: YAML syntax error",
    "zone-exposure-too-many-series.yaml": ":5: scheduler.zoneExposure.maxSeries: must be at least 0 and at most 10000",
    "not-a-mapping.yaml": ":2: <document>: must be a mapping",
    "empty.yaml": ":1: <document>: the file is empty",
    "two-documents.yaml": ":5: <document>: a policy file holds exactly one YAML document",
    "wrong-api-version.yaml": ":2: apiVersion: must be nodemedic.io/v1alpha1",
    "wrong-kind.yaml": ":3: kind: must be RemediationPolicy",
    "unknown-top-level-key.yaml": ":4: rule: unknown key (did you mean rules?)",
    "rule-key-typo.yaml": ":8: rules[0].recoverAftr: unknown key (did you mean recoverAfter?)",
    "duplicate-key.yaml": ":9: rules[0].taint.key: duplicate key (first given on line 7)",
    "rules-not-a-list.yaml": ":5: rules: must be a list",
    "missing-condition-type.yaml": ":6: rules[0].condition.type: required",
    "status-yaml-bool.yaml": ":7: rules[0].condition.status: must be a quoted string",
    "bad-duration.yaml": ":7: rules[0].condition.for: not a duration",
    "negative-duration.yaml": ":7: rules[0].recoverAfter: must not be negative",
    "invalid-taint-key.yaml": ":7: rules[0].taint.key: invalid key",
    "taint-value-bool.yaml": ":6: rules[0].taint.value: must be a string",
    "noexecute-without-opt-in.yaml": ":8: rules[0].taint.effect: must be one of NoSchedule, PreferNoSchedule "
                                     "(NoExecute needs allowNoExecute: true)",
    "unknown-effect.yaml": ":8: rules[0].taint.effect: must be one of",
    "duplicate-rule-names.yaml": ":8: rules[1].name: duplicate rule name 'disk'",
    "duplicate-default-rule-names.yaml": ":7: rules[1].name: duplicate rule name 'kerneldeadlock-true'",
    "conflicting-taint-values.yaml": ":10: rules[1].taint.value: 'corrupt' conflicts with 'readonly' in rules[0]",
    "evictor-storage-classes-without-ignore-pvc.yaml": ":5: evictor.protectedStorageClasses: needs ignorePvcPods: "
                                                       "true",
    "namespaces-include-and-exclude.yaml": ":5: evictor.namespaces: include and exclude are mutually exclusive",
    "priority-threshold-value-and-name.yaml": ":5: evictor.priorityThreshold: value and name are mutually exclusive",
    "selector-bad-operator.yaml": ":8: evictor.labelSelector.matchExpressions[0].operator: must be one of",
    "included-and-excluded-taints.yaml": ":8: strategies[0].args.includedTaints: includedTaints and excludedTaints",
    "unknown-strategy.yaml": ":6: strategies[1].name: unknown strategy 'RemoveEverything'; known: "
                             "BalanceResourceMix, HighNodeUtilization, LowNodeUtilization, MakeRoomForPendingPods, "
                             "PodLifeTime, ",
    "duplicate-strategy.yaml": ":6: strategies[1].name: duplicate strategy",
    "make-room-too-many-evictions.yaml": ":8: strategies[0].args.maxEvictionsPerPod: must be at most 6, got 12",
    "make-room-time-budget.yaml": ":7: strategies[0].args.timeBudget: must be at most 10s",
    "balance-too-many-moves.yaml": ":7: strategies[0].args.maxMovesPerCycle: must be at most 50, got 500",
    "lnu-target-below-threshold.yaml": ":8: strategies[0].args.targetThresholds.memory: 25 is below thresholds.memory",
    "lnu-different-resources.yaml": ":8: strategies[0].args.targetThresholds: must name the same resources",
    "lnu-include-namespaces.yaml": ":9: strategies[0].args.evictableNamespaces.include: only exclude is supported",
    "lnu-metrics-utilization.yaml": ":7: strategies[0].args.thresholds.nvidia.com/gpu: metrics.k8s.io does not "
                                    "measure 'nvidia.com/gpu'",
    "lnu-prometheus-thresholds.yaml": ":7: strategies[0].args.thresholds: with source Prometheus must name exactly "
                                      "one resource, MetricResource",
    "lnu-prometheus-no-query.yaml": ":9: strategies[0].args.metricsUtilization.prometheus.query: required",
    "metrics-provider-bad-url.yaml": ":7: metricsProviders[0].prometheus.url: must be an http:// or https:// URL",
    "hnu-missing-thresholds.yaml": ":6: strategies[0].args.thresholds: required",
    "hnu-threshold-over-100.yaml": ":7: strategies[0].args.thresholds.cpu: must be from 0 to 100, got 120",
    "hnu-unknown-resource.yaml": ":7: strategies[0].args.thresholds.CPU cores: unknown resource",
    "hnu-zero-consolidating-nodes.yaml": ":8: strategies[0].args.maxConsolidatingNodes: must be at least 1",
    "negative-limit.yaml": ":6: limits.maxNoOfPodsToEvictTotal: must be at least 0, got -1",
    "max-backoff-below-initial.yaml": ":6: eviction.maxBackoff: maxBackoff (5s) must not be below",
    "percent-over-100.yaml": ":5: safety.maxTaintedNodesPercent: must be from 0 to 100, got 150",
    "min-above-max-tainted-nodes.yaml": ":6: safety.minTaintedNodes: minTaintedNodes (5) must not exceed",
    "sink-bad-url.yaml": ":7: notifications.sinks[0].url: invalid URL",
    "unknown-sink-type.yaml": ":8: notifications.sinks[1].type: unknown sink type 'pagerduty'",
    "sink-zero-attempts.yaml": ":8: notifications.sinks[0].maxAttempts: must be at least 1",
    "node-affinity-unknown-type.yaml": ":8: strategies[0].args.nodeAffinityType[0]: must be one of "
                                       "requiredDuringSchedulingIgnoredDuringExecution, preferredDuring",
    "node-affinity-missing-type.yaml": ":6: strategies[0].args.nodeAffinityType: required",
    "anti-affinity-bad-label-selector.yaml": ":9: strategies[0].args.labelSelector.matchExpressions[0].operator: "
                                             "must be one of In, NotIn, Exists, DoesNotExist, got 'Within'",
    "restarts-negative-threshold.yaml": ":7: strategies[0].args.podRestartThreshold: must be at least 1, got -1",
    "restarts-unknown-state.yaml": ":8: strategies[0].args.states[0]: must be one of CrashLoopBackOff, Running, "
                                   "got 'CrashLoopBackoff'",
    "restarts-missing-threshold.yaml": ":6: strategies[0].args.podRestartThreshold: required",
    "lifetime-namespaces-include-and-exclude.yaml": ":8: strategies[0].args.namespaces: include and exclude are "
                                                    "mutually exclusive",
    "lifetime-unknown-state.yaml": ":7: strategies[0].args.states[0]: must be one of Completed, ",
    "lifetime-no-criterion.yaml": ":6: strategies[0].args: give at least one of maxPodLifeTimeSeconds, states, "
                                  "conditions, exitCodes",
    "lifetime-empty-condition.yaml": ":10: strategies[0].args.conditions[1]: give at least one of type, status, "
                                     "reason, minTimeSinceLastTransitionSeconds",
    "lifetime-condition-status.yaml": ":9: strategies[0].args.conditions[0].status: must be one of True, False, "
                                      "Unknown (a pod condition's status), got 'true'",
    "lifetime-negative-max.yaml": ":7: strategies[0].args.maxPodLifeTimeSeconds: must be at least 0 and at most "
                                  "9223372036, got -60",
    "failed-pods-bad-exit-code.yaml": ":7: strategies[0].args.exitCodes[1]: must be an integer, got string 'OOM'",
    "failed-pods-negative-lifetime.yaml": ":8: strategies[0].args.minPodLifetimeSeconds: must be at least 0, got -5",
    # Settings that would turn nodemedic against the cluster (docs/bounds.md).
    "hnu-zero-consolidation-timeout.yaml": ":8: strategies[0].args.consolidationTimeout: must be at least 1m0s "
                                           "(a node autoscaler needs time to remove the emptied node",
    "eviction-zero-backoff.yaml": ":5: eviction.initialBackoff: must be at least 100ms (a shorter first retry is a "
                                  "busy loop against the server), got 0s",
    "eviction-landing-deadline-too-short.yaml": ":5: eviction.landingDeadline: must be at least 10s (a replacement "
                                                "needs a few seconds to be created and bound), got 2s",
    "eviction-landing-deadline-too-long.yaml": ":6: eviction.landingDeadline: must be at most 1h0m0s (a replica "
                                               "pinned to a node that cannot take it would be down that long)",
    "eviction-landing-unknown.yaml": ":5: eviction.landing: must be one of planned, anywhere",
    "engine-approval-unknown.yaml": ":7: strategies[0].args.approval: must be one of required, automatic",
    "migrations-expire-too-soon.yaml": ":6: migrations.expireAfter: must be at least 5m0s (a person needs minutes to "
                                       "read a plan)",
    "migrations-on-failure-unknown.yaml": ":6: migrations.onFailure: must be one of revert, keep",
    "sink-busy-retry.yaml": ":8: notifications.sinks[0].initialBackoff: must be at least 100ms",
    "sink-too-many-attempts.yaml": ":8: notifications.sinks[0].maxAttempts: must be at least 1 and at most 100, "
                                   "got 1000",
    "queue-too-large.yaml": ":5: notifications.queueSize: must be at least 1 and at most 100000, got 100000000",
    "remove-duplicates-owner-kind.yaml": ":7: strategies[0].args.excludeOwnerKinds[1]: must be an object kind",
    "topology-spread-unknown-constraint.yaml": ":7: strategies[0].args.constraints[1]: must be DoNotSchedule or "
                                               "ScheduleAnyway, got 'ScheduleAnyWay'",
    "topology-spread-namespaces-include-and-exclude.yaml": ":8: strategies[0].args.namespaces: include and exclude "
                                                           "are mutually exclusive",
    "topology-spread-selector-in-without-values.yaml": ":9: strategies[0].args.labelSelector.matchExpressions[0]."
                                                       "values: In needs at least one value",
    "dark-agent-silence-too-short.yaml": ":5: darkNodes.agentSilence: must be at least 30s (the agent's heartbeat is "
                                         "10s at the least",
    "dark-replace-too-soon.yaml": ":6: darkNodes.replaceAfter: must be at least 1m0s (a kubelet restarting",
    "dark-zero-percent.yaml": ":5: darkNodes.maxDarkPercent: must be above 0: at 0 any dark node would look like a "
                              "partition",
    # Past what the Kubernetes object the value goes into holds: refused there at every use, so refused here.
    "eviction-grace-period-over-int64.yaml": ":5: eviction.gracePeriodSeconds: must be at least 0 and at most "
                                             "9223372036854775807, got 9223372036854775808",
    "priority-class-name-too-long.yaml": ":6: evictor.priorityThreshold.name: invalid PriorityClass name",
}


def test_every_bad_file_has_an_expectation_and_every_expectation_a_file() -> None:
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(BAD_FILES)


@pytest.mark.parametrize(("name", "expected"), sorted(BAD_FILES.items()), ids=sorted(BAD_FILES))
def test_validate_rejects_each_bad_file_naming_file_line_and_field(
        name: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert validate_main(str(BAD / name), catalog=CATALOG) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{name}{expected}" in err, err


# --- errors: all of them, where they are ----------------------------------------------------------------


def test_every_error_in_the_file_is_reported_in_one_pass_in_line_order() -> None:
    text = HEADER + (
        "rules:\n"                                                     # 3
        "- condition: {type: KernelDeadlock, for: soon}\n"             # 4
        "  taint: {key: nodemedic.io/kernel-deadlock}\n"               # 5
        "  evcit: true\n"                                              # 6
        "safety: {maxTaintedNodesPercent: -1}\n"                       # 7
        "limits: {maxNoOfPodsToEvictPerNode: many}\n"                  # 8
    )
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    assert [e.split(": ")[0:2] for e in caught.value.errors] == [
        ["p.yaml:4", "rules[0].condition.for"],
        ["p.yaml:6", "rules[0].evcit"],
        ["p.yaml:7", "safety.maxTaintedNodesPercent"],
        ["p.yaml:8", "limits.maxNoOfPodsToEvictPerNode"],
    ]
    assert str(caught.value) == "\n".join(caught.value.errors)


def test_an_unknown_key_message_lists_the_valid_keys() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(HEADER + "safety: {maxTainted: 2}\n", source="p.yaml", catalog=CATALOG)
    assert caught.value.errors == [
        "p.yaml:3: safety.maxTainted: unknown key (did you mean maxTaintedNodes?); valid keys: maxTaintedNodes, "
        "maxTaintedNodesPercent, minTaintedNodes, paused, excludeLabel, acknowledge"]


@pytest.mark.parametrize(("status", "accepted"), [('"True"', True), ('"Unknown"', True), ("False", False),
                                                  ("yes", False), ('"true"', False)],
                         ids=["quoted True", "quoted Unknown", "bare False", "bare yes", "lowercase string"])
def test_condition_status_must_be_one_of_the_api_strings_not_a_yaml_boolean(status: str, accepted: bool) -> None:
    text = HEADER + f"rules:\n- condition: {{type: X, status: {status}}}\n  taint: {{key: nodemedic.io/x}}\n"
    if accepted:
        assert parse_policy(text, source="p.yaml", catalog=CATALOG).rules[0].condition_status == status.strip('"')
    else:
        with pytest.raises(ConfigError, match=r"p\.yaml:4: rules\[0\]\.condition\.status: must be"):
            parse_policy(text, source="p.yaml", catalog=CATALOG)


def test_no_execute_is_accepted_with_the_explicit_opt_in() -> None:
    text = HEADER + ("rules:\n- condition: {type: X}\n  taint: {key: nodemedic.io/x, effect: NoExecute}\n"
                     "  allowNoExecute: true\n")
    assert parse_policy(text, source="p.yaml", catalog=CATALOG).rules[0].taint.effect is Effect.NO_EXECUTE


@pytest.mark.parametrize("key", ["x", "nodemedic.io/kernel-deadlock", "a.b-c/d_e.F", "A" * 63],
                         ids=["bare name", "prefixed", "mixed characters", "63 characters"])
def test_valid_taint_keys_are_accepted(key: str) -> None:
    text = HEADER + f"rules:\n- condition: {{type: X}}\n  taint: {{key: '{key}'}}\n"
    assert parse_policy(text, source="p.yaml", catalog=CATALOG).rules[0].taint.key == key


@pytest.mark.parametrize("key", ["", "-x", "x-", "Nodemedic.IO/x", "a/b/c", "/x", "a/", "A" * 64, "has space"],
                         ids=["empty", "leading dash", "trailing dash", "uppercase prefix", "two slashes",
                              "empty prefix", "empty name", "64 characters", "space"])
def test_invalid_taint_keys_are_rejected_at_their_line(key: str) -> None:
    text = HEADER + f"rules:\n- condition: {{type: X}}\n  taint:\n    key: '{key}'\n"
    with pytest.raises(ConfigError, match=r"p\.yaml:6: rules\[0\]\.taint\.key: "):
        parse_policy(text, source="p.yaml", catalog=CATALOG)


def test_a_missing_condition_or_taint_is_reported_once_at_the_rule() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(HEADER + "rules:\n- name: lonely\n", source="p.yaml", catalog=CATALOG)
    assert caught.value.errors == ["p.yaml:4: rules[0].condition: required", "p.yaml:4: rules[0].taint: required"]


def test_a_list_where_a_mapping_belongs_is_one_error_not_one_per_missing_key() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(HEADER + "rules:\n- condition: [KernelDeadlock]\n  taint: {key: x}\n", source="p.yaml",
                     catalog=CATALOG)
    assert caught.value.errors == ["p.yaml:4: rules[0].condition: must be a mapping, got a list"]


def test_a_file_name_with_a_line_break_is_named_on_one_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A name must not forge a line of validate's output ("OK", or an error of another file)."""
    path = tmp_path / "p\nOK: other.yaml"
    path.write_text(HEADER + "rules: []\n")
    assert validate_main(str(path), catalog=CATALOG) == 0
    assert capsys.readouterr().out.count("\n") == 1
    path.write_text(HEADER + "rules: 1\n")
    assert validate_main(str(path), catalog=CATALOG) == 2
    assert capsys.readouterr().err == f"{tmp_path}/p\\nOK: other.yaml:3: rules: must be a list, got integer 1\n"


def test_an_unreadable_file_is_a_policy_error_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as caught:
        load_policy(missing, catalog=CATALOG)
    assert caught.value.errors[0].startswith(f"{missing}: cannot read the policy file")


def test_a_file_that_is_not_utf8_is_a_policy_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(HEADER.encode() + b"# caf\xe9\n")
    with pytest.raises(ConfigError, match="cannot read the policy file"):
        load_policy(path, catalog=CATALOG)


def test_a_non_printable_character_is_a_syntax_error_with_its_line() -> None:
    with pytest.raises(ConfigError, match=r"p\.yaml:3: <document>: YAML syntax error: unacceptable character"):
        parse_policy(HEADER + "rules: \x07\n", source="p.yaml", catalog=CATALOG)


# --- registries stay in step ----------------------------------------------------------------------------


def test_the_sink_types_accepted_are_the_ones_the_notifier_can_format() -> None:
    assert set(SINK_TYPES) == set(notify_formats.FORMATS)


# --- hostile files: bounded before parsing, refused with file and line, never a traceback ------------------


def _refused(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_policy(text, source="p.yaml", catalog=CATALOG)
    return caught.value.errors


def test_a_policy_nested_past_the_bound_is_refused_at_its_line_not_a_recursion_error() -> None:
    assert _refused(HEADER + "rules: " + "[" * 5000 + "]" * 5000 + "\n") == [
        "p.yaml:3: <document>: nested deeper than 64 levels, the bound on a config file"]


def test_a_descheduler_policy_comparing_two_billion_laughs_profiles_is_refused_before_any_comparison() -> None:
    def chain(p: str) -> str:
        lines = [f"        - &{p}0 [l, l, l, l, l, l, l, l, l]"]
        lines += [f"        - &{p}{i} [{', '.join([f'*{p}{i - 1}'] * 9)}]" for i in range(1, 11)]
        return "\n".join(lines)
    profile = ("- name: {name}\n  pluginConfig:\n  - name: DefaultEvictor\n    args:\n      minPodAge:\n{chain}\n"
               "  plugins:\n    deschedule: {{enabled: [{plugin}]}}\n")
    text = ("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles:\n"
            + profile.format(name="one", chain=chain("b"), plugin="RemovePodsViolatingNodeTaints")
            + profile.format(name="two", chain=chain("c"), plugin="RemovePodsHavingTooManyRestarts"))
    (error,) = _refused(text)
    assert error.startswith("p.yaml:") and "expands to more than 100000 values" in error


def test_more_rules_than_the_bound_are_refused_at_the_rules_key() -> None:
    rules = "".join(f"- {{condition: {{type: C{i}}}, taint: {{key: nodemedic.io/c{i}}}}}\n" for i in range(1001))
    assert _refused(HEADER + "rules:\n" + rules) == [
        "p.yaml:4: rules: at most 1000 rules, got 1001: each is matched against every node every cycle, and each "
        "owns a taint"]


def test_a_non_scalar_key_is_refused_at_its_line() -> None:
    assert _refused(HEADER + "? [a, b]\n: 1\n") == ["p.yaml:3: <document>: must be a string key, got a list"]


def test_a_policy_file_over_the_size_bound_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(HEADER.encode() + b"#" * (4 << 20))
    with pytest.raises(ConfigError) as caught:
        load_policy(path, catalog=CATALOG)
    assert caught.value.errors == [f"{path}:1: <document>: cannot read the policy file: the file is larger than "
                                   "4 MiB, the bound on a config file"]


def test_binary_policy_bytes_are_refused_at_their_line(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(HEADER.encode() + b"rules: \x00\xff\xfe")
    with pytest.raises(ConfigError) as caught:
        load_policy(path, catalog=CATALOG)
    assert caught.value.errors == [f"{path}:3: <document>: cannot read the policy file: not UTF-8 text: byte 0xff at "
                                   "offset 66 (invalid start byte)"]
