"""RemoveDuplicates's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model import LabelSelector
from remediator.policy.fields import Namespaces, read_label_selector, read_namespaces
from remediator.policy.reader import Reader, Section

# labelSelector is not one of descheduler's RemoveDuplicates args; nodemedic takes it as every other strategy does.
_DUPLICATES_ARGS_KEYS = ("namespaces", "labelSelector", "excludeOwnerKinds")


@dataclass(frozen=True)
class RemoveDuplicatesArgs:
    namespaces: Namespaces = Namespaces()
    label_selector: LabelSelector | None = None
    exclude_owner_kinds: tuple[str, ...] = ()  # pods with an owner of one of these kinds are left alone


def _kind_problem(kind: str) -> str | None:
    """An owner kind is a Kubernetes kind name: ReplicaSet, StatefulSet, Job, ..."""
    if not kind or not kind[0].isalpha() or not kind.isalnum():
        return f"must be an object kind such as ReplicaSet, got {kind!r}"
    return None


def read_args(r: Reader, strategy: Section) -> RemoveDuplicatesArgs:
    m = r.section(strategy, "args", _DUPLICATES_ARGS_KEYS)
    return RemoveDuplicatesArgs(
        namespaces=read_namespaces(r, m),
        label_selector=read_label_selector(r, m),
        exclude_owner_kinds=r.strings(m, "excludeOwnerKinds", _kind_problem) or (),
    )
