"""RemovePodsViolatingNodeAffinity's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from remediator.policy.reader import Reader, Section
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
NODE_AFFINITY_TYPES = (REQUIRED, PREFERRED)
_KEYS = (*SCOPE_KEYS, "nodeAffinityType")


@dataclass(frozen=True)
class RemovePodsViolatingNodeAffinityArgs:
    scope: PodScope = PodScope()
    node_affinity_type: tuple[str, ...] = (REQUIRED,)  # descheduler has no default: validation requires one


def _type_problem(value: str) -> str | None:
    return None if value in NODE_AFFINITY_TYPES else f"must be one of {', '.join(NODE_AFFINITY_TYPES)}, got {value!r}"


def read_args(r: Reader, strategy: Section) -> RemovePodsViolatingNodeAffinityArgs:
    m = r.section(strategy, "args", _KEYS)
    types = r.strings(m, "nodeAffinityType", _type_problem)
    given = m.values.get("nodeAffinityType")
    if types is None or (isinstance(given, yaml.SequenceNode) and not given.value):
        r.error(m.line_node("nodeAffinityType"), m.at("nodeAffinityType"),
                f"required: list {REQUIRED} and/or {PREFERRED} (descheduler has no default)")
    unique = tuple(dict.fromkeys(types or ()))
    return RemovePodsViolatingNodeAffinityArgs(scope=read_scope(r, m), node_affinity_type=unique or (REQUIRED,))
