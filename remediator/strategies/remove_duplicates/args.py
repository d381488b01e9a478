"""RemoveDuplicates's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

# labelSelector is not one of descheduler's RemoveDuplicates args; nodemedic takes it as every other strategy does.
_DUPLICATES_ARGS_KEYS = (*SCOPE_KEYS, "excludeOwnerKinds")


@dataclass(frozen=True)
class RemoveDuplicatesArgs:
    scope: PodScope = PodScope()
    exclude_owner_kinds: tuple[str, ...] = ()  # pods with an owner of one of these kinds are left alone


def _kind_problem(kind: str) -> str | None:
    """An owner kind is a Kubernetes kind name: ReplicaSet, StatefulSet, Job, ..."""
    if not kind or not kind[0].isalpha() or not kind.isalnum():
        return f"must be an object kind such as ReplicaSet, got {kind!r}"
    return None


def read_args(r: Reader, strategy: Section) -> RemoveDuplicatesArgs:
    m = r.section(strategy, "args", _DUPLICATES_ARGS_KEYS)
    return RemoveDuplicatesArgs(
        scope=read_scope(r, m),
        exclude_owner_kinds=r.strings(m, "excludeOwnerKinds", _kind_problem) or (),
    )
