"""pod_life_time/kept.py and its use: a node whose oldest pod is younger than the maximum is passed over, and a node
whose pods changed is looked at again."""

from __future__ import annotations

import dataclasses
import datetime as dt

from remediator.policy.fields import Namespaces
from remediator.state.derived import Derived
from remediator.strategies.pod_life_time.args import PodLifeTimeArgs
from remediator.strategies.pod_life_time.kept import oldest_created
from remediator.strategies.pod_life_time.plan import NAME
from remediator.strategies.pod_scope import PodScope
from tests.unit.remediator.strategies.cluster import NOW, cycle, evicted, node, pod, snapshot

DAY = dt.timedelta(days=1)


def test_the_oldest_creation_time_is_of_the_pods_in_scope_that_say() -> None:
    pods = [pod("a", age=DAY), pod("b", age=3 * DAY), pod("c", created=None), pod("d", age=9 * DAY, namespace="x")]
    default = PodScope(Namespaces(include=("default",)))
    assert oldest_created(pods, scope=default) == NOW - 3 * DAY
    assert oldest_created(pods, scope=PodScope()) == NOW - 9 * DAY
    assert oldest_created([pod("c", created=None)], scope=default) is None and oldest_created([], scope=default) is None


def test_a_node_kept_as_young_is_looked_at_again_once_its_pods_change_or_time_passes() -> None:
    derived = Derived()
    args = PodLifeTimeArgs(max_pod_life_time_seconds=int((2 * DAY).total_seconds()))
    young = snapshot([node("n1"), node("n2")], [pod("a", age=DAY), pod("b", age=DAY)])
    assert evicted(cycle(dataclasses.replace(young, derived=derived), NAME, args)) == []
    assert evicted(cycle(dataclasses.replace(young, derived=derived, now=NOW + 2 * DAY), NAME, args)) == ["a", "b"]
    old = snapshot([node("n1"), node("n2")], [pod("a", age=DAY), pod("c", age=3 * DAY)])  # a new pod list for n1
    assert evicted(cycle(dataclasses.replace(old, derived=derived), NAME, args)) == ["c"]


def test_a_node_kept_as_young_for_one_scope_is_looked_at_again_for_another() -> None:
    derived = Derived()
    most = int((2 * DAY).total_seconds())
    cluster = snapshot([node("n1"), node("n2")], [pod("a", age=DAY), pod("b", age=3 * DAY, namespace="x")])
    default = PodLifeTimeArgs(scope=PodScope(Namespaces(include=("default",))), max_pod_life_time_seconds=most)
    assert evicted(cycle(dataclasses.replace(cluster, derived=derived), NAME, default)) == []
    every = PodLifeTimeArgs(max_pod_life_time_seconds=most)
    assert evicted(cycle(dataclasses.replace(cluster, derived=derived), NAME, every)) == ["b"]
