"""LowNodeUtilization and HighNodeUtilization on measured usage (`metricsUtilization`): the usage a metrics source
reported replaces requests in the thresholds and in what a pod frees; a node or pod of unknown usage is never a
reason to evict."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.control.planner import PlannerMemory, make_plan
from remediator.policy.limits import Limits
from remediator.policy.measured_usage import KUBERNETES_METRICS, PROMETHEUS, MetricsUtilization
from remediator.policy.model import Policy, StrategyConfig
from remediator.state.snapshot import MeasuredUsage, Snapshot
from remediator.strategies.high_node_utilization.args import HighNodeUtilizationArgs
from remediator.strategies.low_node_utilization.args import LowNodeUtilizationArgs
from tests.unit.remediator.strategies.cluster import GiB, evicted, node, pod, snapshot

KUBE = MetricsUtilization(KUBERNETES_METRICS)
QUERY = "instance:node_cpu:ratio"
PROM = MetricsUtilization(PROMETHEUS, QUERY)


def lnu(metrics: MetricsUtilization | None, **kw: object) -> StrategyConfig:
    resource = "MetricResource" if metrics == PROM else "cpu"
    return StrategyConfig("LowNodeUtilization", LowNodeUtilizationArgs(
        thresholds=((resource, 20.0),), target_thresholds=((resource, 50.0),), metrics_utilization=metrics, **kw))


def plan(s: Snapshot, *strategies: StrategyConfig) -> list[str]:
    policy = Policy(strategies=strategies, limits=Limits(owner_cooldown=dt.timedelta(0)))
    return evicted(make_plan(s, policy, PlannerMemory()))


def hot_cluster(**measured: object) -> Snapshot:
    """n1 runs four pods requesting 100m (2.5 % of 4000m) that use 700m each; n1 uses 3000m (75 %), n2 and n3 200m."""
    pods = [pod(f"p{i}", "n1") for i in range(4)]
    s = snapshot([node("n1"), node("n2"), node("n3")], pods)
    s.measured = MeasuredUsage(
        nodes={"n1": {"cpu": 3000, "memory": 4 * GiB}, "n2": {"cpu": 200, "memory": GiB},
               "n3": {"cpu": 200, "memory": GiB}},
        pods={p.key: {"cpu": 700, "memory": 256 << 20} for p in pods})
    return dataclasses.replace(s, measured=dataclasses.replace(s.measured, **measured)) if measured else s


def test_by_requests_every_node_is_underutilized_and_nothing_moves() -> None:
    assert plan(hot_cluster(), lnu(None)) == []


def test_by_measured_usage_the_hot_node_is_relieved_to_its_target_and_no_further() -> None:
    # 3000m -> 2300m (57.5 %) -> 1600m (40 %): two pods.
    assert plan(hot_cluster(), lnu(KUBE)) == ["p0", "p1"]


def test_a_node_the_source_did_not_report_is_not_relieved() -> None:
    s = hot_cluster(nodes={"n2": {"cpu": 200, "memory": GiB}, "n3": {"cpu": 200, "memory": GiB}})
    assert plan(s, lnu(KUBE)) == []


def test_a_node_the_source_did_not_report_receives_nothing() -> None:
    s = hot_cluster(nodes={"n1": {"cpu": 3000, "memory": 4 * GiB}})
    assert plan(s, lnu(KUBE)) == []  # n2 and n3 unknown: no destination


def test_a_pod_of_unknown_usage_is_kept_and_said_why() -> None:
    s = hot_cluster()
    pods = dict(s.measured.pods)
    del pods["default/p0"]
    s.measured = dataclasses.replace(s.measured, pods=pods)
    policy = Policy(strategies=(lnu(KUBE),), limits=Limits(owner_cooldown=dt.timedelta(0)))
    result = make_plan(s, policy, PlannerMemory())
    assert evicted(result) == ["p1", "p2"]
    assert [(p.pod.name, p.why) for p in result.protected] == [
        ("p0", "metrics.k8s.io reports no usage for it: evicting it may relieve nothing")]


def test_a_destination_takes_pods_only_while_its_measured_usage_stays_under_target() -> None:
    # n1 uses 3600m (90 %): relieving it to 50 % takes three pods. n2 (5 %) is the only destination (n3, 47.5 %, is
    # not underutilized); by requests it has room for all, by usage it goes 200m -> 900m -> 1600m (40 %), and a
    # third pod would bring it to 2300m (57.5 %), above target.
    s = hot_cluster(nodes={"n1": {"cpu": 3600, "memory": 4 * GiB}, "n2": {"cpu": 200, "memory": GiB},
                           "n3": {"cpu": 1900, "memory": GiB}})
    assert plan(s, lnu(KUBE)) == ["p0", "p1"]


def test_the_reason_says_the_usage_was_measured() -> None:
    policy = Policy(strategies=(lnu(KUBE),), limits=Limits(owner_cooldown=dt.timedelta(0)))
    result = make_plan(hot_cluster(), policy, PlannerMemory())
    assert result.evictions[0].reason.startswith("node n1 above target (cpu 75% > cpu 50%, by metrics.k8s.io usage)")


def test_with_a_prometheus_query_one_pod_per_hot_node_and_cycle() -> None:
    s = hot_cluster(scores={QUERY: {"n1": 0.9, "n2": 0.1, "n3": 0.1}})
    assert plan(s, lnu(PROM)) == ["p0"]


def test_with_a_prometheus_query_a_node_without_a_sample_is_left_alone() -> None:
    assert plan(hot_cluster(scores={QUERY: {"n2": 0.1, "n3": 0.1}}), lnu(PROM)) == []
    assert plan(hot_cluster(), lnu(PROM)) == []  # the query answered nothing


def test_high_node_utilization_empties_a_node_idle_by_usage_though_full_by_requests() -> None:
    # n1's pods request 1500m each (75 % of n1) but use 10m: by requests n1 is full, by usage nearly empty; n2's
    # pod requests 3000m (37.5 %): by requests no node is underutilized.
    pods = [pod("a", "n1", cpu=1500), pod("b", "n1", cpu=1500), pod("c", "n2", cpu=3000)]
    s = snapshot([node("n1", cpu=4000), node("n2", cpu=8000)], pods)
    s.measured = MeasuredUsage(nodes={"n1": {"cpu": 20, "memory": GiB}, "n2": {"cpu": 5000, "memory": GiB}},
                               pods={p.key: {"cpu": 10, "memory": GiB} for p in pods})

    def hnu(metrics: MetricsUtilization | None) -> StrategyConfig:
        return StrategyConfig("HighNodeUtilization", HighNodeUtilizationArgs(
            thresholds=(("cpu", 20.0),), taint_drained_nodes=False, metrics_utilization=metrics))

    assert plan(s, hnu(None)) == []
    assert plan(s, hnu(KUBE)) == ["a", "b"]
    s.measured = dataclasses.replace(s.measured, nodes={"n2": {"cpu": 5000, "memory": GiB}})
    assert plan(s, hnu(KUBE)) == []  # n1 unknown: not emptied

