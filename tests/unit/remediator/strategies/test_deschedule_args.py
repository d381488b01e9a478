"""The deschedule-kind strategies' args read from a policy file with descheduler's names, and their defaults."""

from __future__ import annotations

from pathlib import Path

from remediator.model import LabelSelector, SelectorRequirement
from remediator.policy.fields import Namespaces
from remediator.policy.loader import load_policy
from remediator.strategies.pod_life_time.args import PodLifeTimeArgs
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
from remediator.strategies.scope import PodScope

GOOD = Path(__file__).parents[4] / "tests" / "testdata" / "policies" / "good"


def test_every_argument_is_read_with_descheduler_names() -> None:
    got = {s.name: s.args for s in load_policy(GOOD / "deschedule-strategies.yaml").strategies}
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
