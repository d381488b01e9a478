"""RemovePodsViolatingNodeTaints: descheduler's semantics, with only nodemedic's evicting taints in scope by default."""

from __future__ import annotations

import datetime as dt

import pytest

from remediator.model.records import Condition, Effect, LabelSelector, NodeRecord, PodRecord, Taint, Toleration
from remediator.policy.fields import Namespaces
from remediator.state.snapshot import Snapshot
from remediator.strategies import STRATEGIES, lookup
from remediator.strategies.pod_scope import PodScope
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs
from remediator.strategies.remove_pods_violating_node_taints.plan import KIND, NAME, candidates, plan

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
OURS = Taint("nodemedic.io/kernel-deadlock", "true", Effect.NO_SCHEDULE)
SOFT = Taint("nodemedic.io/slow-disk", "true", Effect.PREFER_NO_SCHEDULE)
EXECUTE = Taint("nodemedic.io/dead", "true", Effect.NO_EXECUTE)
CORDON = Taint("node.kubernetes.io/unschedulable", "", Effect.NO_SCHEDULE)
DEDICATED = Taint("dedicated", "gpu", Effect.NO_SCHEDULE)
TOLERATE_OURS = Toleration(key=OURS.key, operator="Exists")


def node(name: str = "n1", *taints: Taint, ready: bool = True) -> NodeRecord:
    return NodeRecord(name=name, taints=taints, conditions=(Condition("Ready", "True" if ready else "False"),))


def pod(name: str, node_name: str = "n1", namespace: str = "default", *, tolerations: tuple[Toleration, ...] = (),
        phase: str = "Running", terminating: bool = False, labels: dict[str, str] | None = None) -> PodRecord:
    return PodRecord(namespace=namespace, name=name, uid=f"uid-{namespace}-{name}", node_name=node_name, phase=phase,
                     tolerations=tolerations, terminating=terminating, labels=labels or {})


def snap(nodes: list[NodeRecord], pods: list[PodRecord]) -> Snapshot:
    by_node: dict[str, list[PodRecord]] = {}
    for p in pods:
        by_node.setdefault(p.node_name, []).append(p)
    return Snapshot(now=NOW, nodes={n.name: n for n in nodes}, pods_by_node=by_node, pods_by_owner={})


def evicted(snapshot: Snapshot, args: RemovePodsViolatingNodeTaintsArgs | None = None, *,
            evict: dict[str, list[Taint]] | None = None,
            planned: dict[str, list[Taint]] | None = None) -> list[str]:
    out = candidates(snapshot, args or RemovePodsViolatingNodeTaintsArgs(), evict_taints=evict or {},
               planned_taints=planned or {})
    assert all(e.strategy == NAME for e in out)
    return [e.pod.key for e in out]


def test_the_strategy_is_registered_as_a_deschedule_strategy() -> None:
    assert STRATEGIES[NAME].kind == KIND == "deschedule"
    assert lookup(NAME).plan is plan


def test_an_unknown_strategy_name_is_reported_by_name() -> None:
    with pytest.raises(KeyError, match="NoSuchStrategy"):
        lookup("NoSuchStrategy")


def test_pods_not_tolerating_our_taint_are_candidates_with_the_taint_as_reason() -> None:
    s = snap([node("n1", OURS)], [pod("b"), pod("a"), pod("tolerant", tolerations=(TOLERATE_OURS,))])
    out = candidates(s, RemovePodsViolatingNodeTaintsArgs(), evict_taints={"n1": [OURS]}, planned_taints={})
    assert [e.pod.name for e in out] == ["a", "b"]
    assert out[0].reason == "untolerated taint nodemedic.io/kernel-deadlock=true:NoSchedule"


@pytest.mark.parametrize(("taints", "evict"), [
    ((CORDON,), {}),
    ((DEDICATED,), {}),
    ((OURS,), {}),
], ids=["manual-cordon", "humans-taint", "our-taint-from-a-non-evicting-rule"])
def test_by_default_only_taints_from_evicting_rules_trigger_evictions(taints: tuple[Taint, ...],
                                                                      evict: dict[str, list[Taint]]) -> None:
    assert evicted(snap([node("n1", *taints)], [pod("a")]), evict=evict) == []


@pytest.mark.parametrize(("args", "taints", "expected"), [
    (RemovePodsViolatingNodeTaintsArgs(included_taints=("dedicated",)), (DEDICATED, OURS), ["default/a"]),
    (RemovePodsViolatingNodeTaintsArgs(included_taints=("dedicated=gpu",)), (DEDICATED,), ["default/a"]),
    (RemovePodsViolatingNodeTaintsArgs(included_taints=("dedicated=cpu",)), (DEDICATED,), []),
    (RemovePodsViolatingNodeTaintsArgs(included_taints=()), (DEDICATED, CORDON), []),
    (RemovePodsViolatingNodeTaintsArgs(included_taints=(CORDON.key,)), (CORDON,), ["default/a"]),
    (RemovePodsViolatingNodeTaintsArgs(included_taints=(f"{CORDON.key}=",)), (CORDON,), []),
], ids=["included-by-key", "included-by-key-value", "other-value-not-included", "empty-list-includes-nothing",
        "cordon-included-explicitly", "key-value-form-ignored-for-empty-value"])
def test_included_taints_select_among_all_the_nodes_taints(args: RemovePodsViolatingNodeTaintsArgs,
                                                            taints: tuple[Taint, ...], expected: list[str]) -> None:
    assert evicted(snap([node("n1", *taints)], [pod("a", tolerations=(TOLERATE_OURS,))]), args) == expected


def test_included_taints_also_see_the_taints_planned_this_cycle() -> None:
    args = RemovePodsViolatingNodeTaintsArgs(included_taints=(OURS.key,))
    assert evicted(snap([node("n1")], [pod("a")]), args, planned={"n1": [OURS]}) == ["default/a"]


@pytest.mark.parametrize(("excluded", "expected"), [
    ((OURS.key,), []),
    ((f"{OURS.key}=true",), []),
    ((f"{OURS.key}=false",), ["default/a"]),
    (("other",), ["default/a"]),
], ids=["by-key", "by-key-value", "other-value-still-in-scope", "unrelated-key"])
def test_excluded_taints_take_a_taint_out_of_scope(excluded: tuple[str, ...], expected: list[str]) -> None:
    args = RemovePodsViolatingNodeTaintsArgs(excluded_taints=excluded)
    assert evicted(snap([node("n1", OURS)], [pod("a")]), args, evict={"n1": [OURS]}) == expected


@pytest.mark.parametrize(("include_prefer", "expected"), [(False, []), (True, ["default/a"])],
                         ids=["ignored-by-default", "with-includePreferNoSchedule"])
def test_prefer_no_schedule_counts_only_with_the_include_flag(include_prefer: bool, expected: list[str]) -> None:
    args = RemovePodsViolatingNodeTaintsArgs(include_prefer_no_schedule=include_prefer)
    assert evicted(snap([node("n1", SOFT)], [pod("a")]), args, evict={"n1": [SOFT]}) == expected


@pytest.mark.parametrize("args", [
    RemovePodsViolatingNodeTaintsArgs(),
    RemovePodsViolatingNodeTaintsArgs(included_taints=(EXECUTE.key,), include_prefer_no_schedule=True),
], ids=["default", "explicitly-included"])
def test_no_execute_taints_are_never_in_scope(args: RemovePodsViolatingNodeTaintsArgs) -> None:
    assert evicted(snap([node("n1", EXECUTE)], [pod("a")]), args, evict={"n1": [EXECUTE]}) == []


def test_a_not_ready_node_is_skipped() -> None:
    assert evicted(snap([node("n1", OURS, ready=False)], [pod("a")]), evict={"n1": [OURS]}) == []


@pytest.mark.parametrize("p", [
    pod("done", phase="Succeeded"), pod("failed", phase="Failed"), pod("going", terminating=True),
], ids=["succeeded", "failed", "terminating"])
def test_terminal_and_terminating_pods_are_not_candidates(p: PodRecord) -> None:
    assert evicted(snap([node("n1", OURS)], [p]), evict={"n1": [OURS]}) == []


@pytest.mark.parametrize(("args", "expected"), [
    (RemovePodsViolatingNodeTaintsArgs(scope=PodScope(Namespaces(include=("team",)))), ["team/b"]),
    (RemovePodsViolatingNodeTaintsArgs(scope=PodScope(Namespaces(exclude=("team",)))), ["default/a"]),
    (RemovePodsViolatingNodeTaintsArgs(scope=PodScope(label_selector=LabelSelector(match_labels=(("app", "web"),)))),
     ["team/b"]),
    (RemovePodsViolatingNodeTaintsArgs(scope=PodScope(label_selector=LabelSelector())), ["default/a", "team/b"]),
], ids=["namespaces-include", "namespaces-exclude", "label-selector", "empty-selector-matches-all"])
def test_namespaces_and_label_selector_limit_the_candidates(args: RemovePodsViolatingNodeTaintsArgs,
                                                            expected: list[str]) -> None:
    pods = [pod("a"), pod("b", namespace="team", labels={"app": "web"})]
    assert evicted(snap([node("n1", OURS)], pods), args, evict={"n1": [OURS]}) == expected


def test_candidates_come_in_node_namespace_name_order() -> None:
    pods = [pod("z", "n2"), pod("b", "n1", "ns2"), pod("a", "n1", "ns2"), pod("c", "n1", "ns1")]
    s = snap([node("n2", OURS), node("n1", OURS)], pods)
    assert evicted(s, evict={"n1": [OURS], "n2": [OURS]}) == ["ns1/c", "ns2/a", "ns2/b", "default/z"]
