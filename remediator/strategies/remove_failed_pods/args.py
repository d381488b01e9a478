"""RemoveFailedPods's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT32
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

_KEYS = (*SCOPE_KEYS, "reasons", "exitCodes", "excludeOwnerKinds", "minPodLifetimeSeconds", "includingInitContainers")


@dataclass(frozen=True)
class RemoveFailedPodsArgs:
    scope: PodScope = PodScope()
    reasons: tuple[str, ...] = ()  # empty = any
    exit_codes: tuple[int, ...] = ()  # empty = any
    exclude_owner_kinds: tuple[str, ...] = ()
    min_pod_lifetime_seconds: int = 3600  # descheduler's default
    including_init_containers: bool = False


def _nonempty(value: str) -> str | None:
    return None if value else "must not be empty"


def read_args(r: Reader, strategy: Section) -> RemoveFailedPodsArgs:
    m = r.section(strategy, "args", _KEYS)
    d = RemoveFailedPodsArgs()
    return RemoveFailedPodsArgs(
        scope=read_scope(r, m),
        reasons=r.strings(m, "reasons", _nonempty) or (),
        exit_codes=r.integers(m, "exitCodes", minimum=INT32[0], maximum=INT32[1]) or (),
        exclude_owner_kinds=r.strings(m, "excludeOwnerKinds", _nonempty) or (),
        min_pod_lifetime_seconds=r.integer(m, "minPodLifetimeSeconds", d.min_pod_lifetime_seconds),
        including_init_containers=r.flag(m, "includingInitContainers", d.including_init_containers),
    )
