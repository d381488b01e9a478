"""A descheduler DeschedulerPolicy read as it is (v1alpha2, and v1alpha1 through descheduler's own migration), its
errors at the user's lines, and `convert`: the converted policy is the very policy the original was read as."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from nodemedic_common.config_errors import ConfigError
from remediator.cli import main
from remediator.policy.fields import Namespaces
from remediator.policy.loader import convert_policy, parse_policy, validate_main
from remediator.strategies import CATALOG
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs

BAD = Path(__file__).resolve().parents[3] / "testdata" / "policies" / "bad" / "descheduler"

TWO_PROFILES = """apiVersion: "descheduler/v1alpha2"
kind: "DeschedulerPolicy"
maxNoOfPodsToEvictPerNode: 5
maxNoOfPodsToEvictTotal: 20
gracePeriodSeconds: 30
evictionFailureEventNotification: true
profiles:
- name: balance
  pluginConfig:
  - name: "DefaultEvictor"
    args: {evictLocalStoragePods: true, nodeFit: true, priorityThreshold: {value: 1000}, minPodAge: 5m}
  - name: "LowNodeUtilization"
    args:
      thresholds: {cpu: 20, memory: 20}
      targetThresholds: {cpu: 50, memory: 50}
      evictableNamespaces: {exclude: [kube-system]}
  plugins:
    balance: {enabled: ["LowNodeUtilization"]}
    filter: {enabled: ["DefaultEvictor"]}
    preEvictionFilter: {enabled: ["DefaultEvictor"]}
- name: taints
  pluginConfig:
  - name: "DefaultEvictor"
    args: {evictLocalStoragePods: true, nodeFit: true, priorityThreshold: {value: 1000}, minPodAge: 5m}
  - name: "RemovePodsViolatingNodeTaints"
    args: {excludedTaints: ["dedicated=gpu"]}
  plugins:
    deschedule: {enabled: ["RemovePodsViolatingNodeTaints"]}
"""

V1ALPHA1 = """apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
evictLocalStoragePods: true
maxNoOfPodsToEvictPerNode: 5
strategies:
  "HighNodeUtilization":
    enabled: false
  "LowNodeUtilization":
    enabled: true
    params:
      nodeResourceUtilizationThresholds:
        thresholds: {"cpu": 20, "memory": 20}
        targetThresholds: {"cpu": 50, "memory": 50}
        numberOfNodes: 2
      namespaces: {exclude: [kube-system]}
      thresholdPriority: 1000
  "RemovePodsViolatingNodeTaints":
    enabled: true
    params:
      nodeFit: true
      excludedTaints: ["dedicated=gpu"]
"""


def test_a_v1alpha2_policy_runs_deschedule_plugins_of_every_profile_before_balance_ones_with_its_settings() -> None:
    policy = parse_policy(TWO_PROFILES, source="d.yaml", catalog=CATALOG)
    assert [s.name for s in policy.strategies] == ["RemovePodsViolatingNodeTaints", "LowNodeUtilization"]
    assert policy.strategies[0].args == RemovePodsViolatingNodeTaintsArgs(excluded_taints=("dedicated=gpu",))
    lnu = policy.strategies[1].args
    assert isinstance(lnu, LowNodeUtilizationArgs)
    assert (lnu.thresholds, lnu.target_thresholds, lnu.evictable_namespaces_exclude) == (
        (("cpu", 20.0), ("memory", 20.0)), (("cpu", 50.0), ("memory", 50.0)), ("kube-system",))
    e = policy.evictor
    assert (e.evict_local_storage_pods, e.node_fit, e.priority_threshold, e.min_pod_age) == (
        True, True, 1000, dt.timedelta(minutes=5))
    assert (policy.limits.max_pods_to_evict_per_node, policy.limits.max_pods_to_evict_total) == (5, 20)
    assert policy.eviction.grace_period_seconds == 30
    assert policy.rules == ()


def test_a_v1alpha1_policy_reads_as_descheduler_migrated_it() -> None:
    policy = parse_policy(V1ALPHA1, source="d.yaml", catalog=CATALOG)
    assert [s.name for s in policy.strategies] == ["RemovePodsViolatingNodeTaints", "LowNodeUtilization"]
    lnu = policy.strategies[1].args
    assert isinstance(lnu, LowNodeUtilizationArgs)
    assert (lnu.number_of_nodes, lnu.evictable_namespaces_exclude) == (2, ("kube-system",))
    assert (policy.evictor.evict_local_storage_pods, policy.evictor.node_fit, policy.evictor.priority_threshold) == (
        True, True, 1000)
    assert policy.limits.max_pods_to_evict_per_node == 5


def test_v1alpha1_namespaces_become_high_node_utilization_s_evictable_namespaces_in_file_order() -> None:
    text = V1ALPHA1.replace('''  "HighNodeUtilization":
    enabled: false''', '''  "HighNodeUtilization":
    enabled: true
    params:
      namespaces: {exclude: [batch]}
      nodeResourceUtilizationThresholds: {thresholds: {cpu: 10}}''')
    strategies = parse_policy(text, source="d.yaml", catalog=CATALOG).strategies
    assert [s.name for s in strategies] == ["RemovePodsViolatingNodeTaints", "HighNodeUtilization",
                                            "LowNodeUtilization"]
    hnu = strategies[1].args
    assert isinstance(hnu, HighNodeUtilizationArgs)
    assert (hnu.thresholds, hnu.evictable_namespaces_exclude) == ((("cpu", 10.0),), ("batch",))


@pytest.mark.parametrize("text", [TWO_PROFILES, V1ALPHA1], ids=["v1alpha2", "v1alpha1"])
def test_convert_writes_the_very_policy_the_original_is_read_as(text: str) -> None:
    converted = convert_policy(text, source="d.yaml", catalog=CATALOG)
    assert converted.startswith("apiVersion: nodemedic.io/v1alpha1\nkind: RemediationPolicy\n")
    assert parse_policy(converted, source="converted.yaml", catalog=CATALOG) == parse_policy(text, source="d.yaml",
                                                                                             catalog=CATALOG)


def test_the_convert_command_writes_a_file_that_validates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    original = tmp_path / "descheduler.yaml"
    original.write_text(V1ALPHA1)
    assert main(["convert", "--policy", str(original), "-o", str(tmp_path / "nodemedic.yaml")]) == 0
    assert validate_main(str(tmp_path / "nodemedic.yaml"), catalog=CATALOG) == 0
    assert "2 strategies" not in capsys.readouterr().err
    assert main(["convert", "--policy", str(BAD / "node-selector.yaml")]) == 2
    assert "node-selector.yaml:4: nodeSelector: unbalanced '('" in capsys.readouterr().err


def test_a_plugin_without_pluginconfig_gets_its_defaults_and_an_unconfigured_evictor_nodemedics() -> None:
    policy = parse_policy('apiVersion: "descheduler/v1alpha2"\nkind: "DeschedulerPolicy"\nprofiles:\n- name: p\n'
                          '  plugins: {deschedule: {enabled: ["RemovePodsViolatingNodeTaints"]}}\n', source="d.yaml",
                          catalog=CATALOG)
    assert [(s.name, s.args) for s in policy.strategies] == [
        ("RemovePodsViolatingNodeTaints", RemovePodsViolatingNodeTaintsArgs())]
    assert policy.evictor.node_fit  # nodemedic's default (docs: descheduler's is false)
    assert policy.evictor.namespaces == Namespaces()


def test_a_disabled_plugin_is_not_run_and_an_empty_policy_evicts_nothing() -> None:
    text = ('apiVersion: "descheduler/v1alpha2"\nkind: "DeschedulerPolicy"\nprofiles:\n- name: p\n'
            '  plugins: {deschedule: {enabled: ["RemovePodsViolatingNodeTaints"], disabled: ["*"]}}\n')
    assert parse_policy(text, source="d.yaml", catalog=CATALOG).strategies == ()
    assert parse_policy('apiVersion: "descheduler/v1alpha2"\nkind: "DeschedulerPolicy"\n',
                        source="d.yaml", catalog=CATALOG).strategies == ()


# file -> what its first error must contain right after the file name: ":LINE: field.path: message"
POD_PROTECTIONS = """apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
- name: default
  pluginConfig:
  - name: DefaultEvictor
    args:
      podProtections:
        defaultDisabled: [PodsWithLocalStorage, DaemonSetPods, SystemCriticalPods, FailedBarePods]
        extraEnabled: [PodsWithPVC]
  plugins: {deschedule: {enabled: [RemovePodsViolatingNodeTaints]}}
"""


def test_pod_protections_are_read_as_the_evictor_flags_they_replaced() -> None:
    """descheduler's chart default disables PodsWithLocalStorage and enables PodsWithPVC this way."""
    evictor = parse_policy(POD_PROTECTIONS, source="d.yaml", catalog=CATALOG).evictor
    assert (evictor.evict_local_storage_pods, evictor.evict_daemonset_pods, evictor.evict_system_critical_pods,
            evictor.evict_failed_bare_pods, evictor.ignore_pvc_pods) == (True, True, True, True, True)
    assert parse_policy(convert_policy(POD_PROTECTIONS, source="d.yaml", catalog=CATALOG), source="c.yaml",
                        catalog=CATALOG).evictor == evictor


def test_pvc_storage_classes_narrow_which_pods_with_a_pvc_are_protected() -> None:
    """descheduler's README: protect only pods whose PVCs have storage-class-0 or storage-class-1."""
    text = POD_PROTECTIONS.replace("        extraEnabled: [PodsWithPVC]\n", """        extraEnabled: [PodsWithPVC]
        config:
          PodsWithPVC:
            protectedStorageClasses: [{name: storage-class-0}, {name: storage-class-1}]
""")
    evictor = parse_policy(text, source="d.yaml", catalog=CATALOG).evictor
    assert evictor.ignore_pvc_pods and evictor.protected_storage_classes == ("storage-class-0", "storage-class-1")
    assert parse_policy(convert_policy(text, source="d.yaml", catalog=CATALOG), source="c.yaml",
                        catalog=CATALOG).evictor == evictor


BAD_FILES = {
    "node-selector.yaml": ":4: nodeSelector: unbalanced '(' (a label selector such as",
    "metrics-collector.yaml": ":5: metricsCollector.enabled: not together with metricsProviders' source "
                              "KubernetesMetrics",
    "metrics-no-provider.yaml": ":11: strategies[0].args.metricsUtilization: source KubernetesMetrics needs "
                                "metricsProviders to list {source: KubernetesMetrics}",
    "prometheus-top-level.yaml": ":4: prometheus: cannot be honoured: not a DeschedulerPolicy field of descheduler "
                                 "v0.36.0",
    "unknown-plugin.yaml": ":6: profiles[0].pluginConfig[0].name: unknown plugin 'RemoveEverything'",
    "wrong-extension-point.yaml": ":10: profiles[0].plugins.deschedule.enabled[0]: LowNodeUtilization is a balance "
                                  "plugin, not a deschedule one",
    "custom-filter.yaml": ":9: profiles[0].plugins.filter.enabled[1]: cannot be honoured: nodemedic's only filter "
                          "plugin is DefaultEvictor",
    "evictors-differ.yaml": ":12: profiles[1].pluginConfig[0]: DefaultEvictor arguments differ from those of "
                            "profiles[0]",
    "threshold-over-100.yaml": ":9: strategies[0].args.targetThresholds.cpu: must be from 0 to 100, got 120",
    "failure-events-off.yaml": ":3: evictionFailureEventNotification: cannot be false",
    "enabled-twice.yaml": ":7: profiles[1].plugins.deschedule.enabled[0]: RemovePodsViolatingNodeTaints is enabled "
                          "twice",
    "pvc-storage-classes-without-pvc-protection.yaml": ":11: profiles[0].pluginConfig[0].args.podProtections."
                                                       "config.PodsWithPVC: applies only with PodsWithPVC in "
                                                       "extraEnabled",
    "pod-protections.yaml": ":11: profiles[0].pluginConfig[0].args.podProtections.extraEnabled[1]: cannot be "
                            "honoured: not supported: nodemedic may evict a pod no PodDisruptionBudget covers",
    "wrong-kind.yaml": ":2: kind: must be DeschedulerPolicy for apiVersion descheduler/v1alpha2, got 'Policy'",
    "v1alpha1-unknown-param.yaml": ":11: strategies.LowNodeUtilization.params.podLifeTime: not a parameter of "
                                   "LowNodeUtilization",
    "v1alpha1-node-fit-differs.yaml": ":10: strategies.HighNodeUtilization.params.nodeFit: differs from "
                                      "RemovePodsViolatingNodeTaints",
    "v1alpha1-unknown-strategy.yaml": ":4: strategies.RemovePodsViolatingNodeTaint: unknown strategy",
    "pod-life-time-negative-transition.yaml": ":14: strategies[0].args.conditions[0]."
                                              "minTimeSinceLastTransitionSeconds: must be at least 0 and at most "
                                              "9223372036, got -14400",
    "v1alpha1-lnu-threshold.yaml": ":9: strategies[0].args.targetThresholds.cpu: 50 is below thresholds.cpu (60)",
}


def test_every_bad_file_has_an_expectation_and_every_expectation_a_file() -> None:
    assert sorted(p.name for p in BAD.glob("*.yaml")) == sorted(BAD_FILES)


@pytest.mark.parametrize(("name", "expected"), sorted(BAD_FILES.items()), ids=sorted(BAD_FILES))
def test_validate_rejects_each_bad_descheduler_policy_naming_file_line_and_field(
        name: str, expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert validate_main(str(BAD / name), catalog=CATALOG) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"{name}{expected}" in err.splitlines()[0], err


OLDEST_POD_LIFE_TIME = """apiVersion: "descheduler/v1alpha1"
kind: "DeschedulerPolicy"
strategies:
  "PodLifeTime":
    enabled: true
    params:
      {params}
"""


def test_the_oldest_pod_life_time_form_plans_as_the_nested_one_with_a_deprecation_warning(
        capsys: pytest.CaptureFixture[str]) -> None:
    old = parse_policy(OLDEST_POD_LIFE_TIME.format(params="maxPodLifeTimeSeconds: 86400"), source="old.yaml",
                       catalog=CATALOG)
    assert capsys.readouterr().err == (
        "old.yaml:7: strategies.PodLifeTime.params.maxPodLifeTimeSeconds: warning: deprecated form: descheduler "
        "reads it as params.podLifeTime.maxPodLifeTimeSeconds; move it there\n")
    nested = parse_policy(OLDEST_POD_LIFE_TIME.format(params="podLifeTime: {maxPodLifeTimeSeconds: 86400}"),
                          source="new.yaml", catalog=CATALOG)
    assert capsys.readouterr().err == ""
    assert old == nested


def test_the_pod_life_time_given_both_ways_is_refused() -> None:
    both = "maxPodLifeTimeSeconds: 60\n      podLifeTime: {maxPodLifeTimeSeconds: 60}"
    text = OLDEST_POD_LIFE_TIME.format(params=both)
    with pytest.raises(ConfigError, match=r"d\.yaml:7: strategies\.PodLifeTime\.params\.maxPodLifeTimeSeconds: given "
                                          r"twice"):
        parse_policy(text, source="d.yaml", catalog=CATALOG)


def test_the_oldest_form_is_a_parameter_of_pod_life_time_only() -> None:
    text = OLDEST_POD_LIFE_TIME.replace('"PodLifeTime"', '"RemoveFailedPods"')
    text = text.format(params="maxPodLifeTimeSeconds: 60")
    with pytest.raises(ConfigError, match="not a parameter of RemoveFailedPods"):
        parse_policy(text, source="d.yaml", catalog=CATALOG)
