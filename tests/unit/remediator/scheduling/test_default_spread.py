"""kube-scheduler's default topology spread constraints, against the cases its documentation gives
(kubernetes.io "Pod Topology Spread Constraints": "Example: one TopologySpreadConstraint", "Cluster-level default
constraints", "Internal default constraints")."""

from __future__ import annotations

import pytest

from remediator.model.records import DefaultConstraint, LabelSelector, OwnerRef, PodRecord, SpreadConstraint
from remediator.policy.loader import parse_policy
from remediator.policy.scheduler import SPREAD, SYSTEM, SchedulerSettings
from remediator.scheduling.default_spread import default_spread, filter_skew, workload_selector
from remediator.scheduling.topologyspread import SpreadIndex
from remediator.strategies import CATALOG
from tests.unit.remediator.scheduling.test_nodefit import cluster, node

HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
RS = OwnerRef("ReplicaSet", "foo-7d9f", "uid-rs", controller=True)
HARD_ZONE = SchedulerSettings(default_constraints=(DefaultConstraint(1, ZONE, "DoNotSchedule"),), configured=True)


def foo(name: str, on: str = "", *, owners: tuple[OwnerRef, ...] = (RS,), **kw: object) -> PodRecord:
    return PodRecord(namespace="ns", name=name, uid=f"uid-{name}", node_name=on, phase="Running",
                     labels={"foo": "bar", "pod-template-hash": "7d9f"}, owners=owners, **kw)  # type: ignore[arg-type]


def test_the_documented_four_node_example_sends_the_incoming_pod_to_zone_b() -> None:
    """Three foo=bar pods on node1, node2 (zoneA) and node3 (zoneB): with maxSkew 1 on zones, DoNotSchedule, the
    incoming pod may only go to zoneB (to zoneA the skew would be 3 - 1 = 2)."""
    nodes = [node(n, labels={HOST: n, ZONE: z}) for n, z in
             (("node1", "zoneA"), ("node2", "zoneA"), ("node3", "zoneB"), ("node4", "zoneB"))]
    incoming = foo("incoming")
    index = SpreadIndex(cluster(*nodes, pods=(foo("a", "node1"), foo("b", "node2"), foo("c", "node3"))),
                        HARD_ZONE.constraints_for)
    verdicts = {n.name: index.violation(incoming, n) for n in nodes}
    assert verdicts == {"node1": "topology spread", "node2": "topology spread", "node3": None, "node4": None}


@pytest.mark.parametrize(("in_domain", "fewest", "itself", "skew"), [
    (2, 1, True, 2),  # zoneA in the documented example: 2 + 1 - 1
    (1, 1, True, 1),  # zoneB: 1 + 1 - 1
    (0, 0, False, 0),  # a pod its own selector does not match does not count itself
], ids=["zoneA", "zoneB", "not-matching-itself"])
def test_the_filter_skew_is_the_domain_count_plus_the_pod_minus_the_global_minimum(
        in_domain: int, fewest: int, itself: bool, skew: int) -> None:
    assert filter_skew(in_domain, fewest, matches_itself=itself) == skew


def test_defaults_apply_only_to_pods_that_declare_no_constraint() -> None:
    declared = SpreadConstraint(2, HOST, LabelSelector(match_labels=(("foo", "bar"),)))
    assert default_spread(foo("own", soft_spread=(declared,)), HARD_ZONE.constraints_for) == ((), ())
    hard, soft = default_spread(foo("plain"), HARD_ZONE.constraints_for)
    assert [(c.max_skew, c.topology_key) for c in hard] == [(1, ZONE)] and soft == ()


@pytest.mark.parametrize("owners", [
    (), (OwnerRef("DaemonSet", "ds", "uid-ds", controller=True),), (OwnerRef("Job", "j", "uid-j", controller=True),),
    (OwnerRef("ReplicaSet", "rs", "uid-rs", controller=False),),
], ids=["bare-pod", "daemonset", "job", "not-the-controller"])
def test_a_pod_no_service_replicaset_or_statefulset_selects_gets_no_defaults(owners: tuple[OwnerRef, ...]) -> None:
    assert default_spread(foo("p", owners=owners), SchedulerSettings().constraints_for) == ((), ())


def test_an_unconfigured_scheduler_applies_the_internal_defaults() -> None:
    """kube-scheduler without defaultConstraints: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway."""
    settings = SchedulerSettings(profile="nodemedic-spread", configured=True)
    assert settings.constraints_for("default-scheduler") == SYSTEM
    assert {(c.topology_key, c.max_skew, c.when_unsatisfiable) for c in SYSTEM} == {
        (HOST, 3, "ScheduleAnyway"), (ZONE, 5, "ScheduleAnyway")}
    assert settings.constraints_for("nodemedic-spread") == SPREAD
    assert settings.constraints_for("somebody-elses") == ()
    assert SchedulerSettings().constraints_for("default-scheduler") == SYSTEM, "a policy without the section"


def test_the_selector_is_the_workloads_labels_without_the_per_pod_ones() -> None:
    """Without a StatefulSet's per-pod and per-revision labels, and without the zone and region the API server copies
    from the node when it binds the pod (PodTopologyLabels admission)."""
    ss = OwnerRef("StatefulSet", "db", "uid-db", controller=True)
    pod = PodRecord(namespace="ns", name="db-0", uid="u", labels={
        "app": "db", "statefulset.kubernetes.io/pod-name": "db-0", "apps.kubernetes.io/pod-index": "0",
        "controller-revision-hash": "db-5c", "topology.kubernetes.io/zone": "z1",
        "topology.kubernetes.io/region": "r"}, owners=(ss,))
    assert workload_selector(pod) == LabelSelector(match_labels=(("app", "db"),))
    assert workload_selector(foo("f")) == LabelSelector(match_labels=(("foo", "bar"), ("pod-template-hash", "7d9f")))


def test_a_descheduler_policy_reads_declared_constraints_only_as_descheduler_does() -> None:
    policy = parse_policy("apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\nprofiles: []\n", source="d.yaml",
                          catalog=CATALOG)
    assert policy.scheduler.constraints_for("default-scheduler") == ()
    assert default_spread(foo("plain"), policy.scheduler.constraints_for) == ((), ())
