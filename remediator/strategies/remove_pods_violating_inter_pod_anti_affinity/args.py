"""RemovePodsViolatingInterPodAntiAffinity's arguments (descheduler's: only the common ones) and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope


@dataclass(frozen=True)
class RemovePodsViolatingInterPodAntiAffinityArgs:
    scope: PodScope = PodScope()


def read_args(r: Reader, strategy: Section) -> RemovePodsViolatingInterPodAntiAffinityArgs:
    return RemovePodsViolatingInterPodAntiAffinityArgs(scope=read_scope(r, r.section(strategy, "args", SCOPE_KEYS)))
