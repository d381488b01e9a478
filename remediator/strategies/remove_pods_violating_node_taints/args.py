"""RemovePodsViolatingNodeTaints's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import label_value_problem, owned_taint_problem, qualified_name_problem
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

_TAINTS_ARGS_KEYS = (*SCOPE_KEYS, "includePreferNoSchedule", "excludedTaints", "includedTaints")


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaintsArgs:
    scope: PodScope = PodScope()
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()  # "key" or "key=value"
    # None = the taints the rules own with evict: true (so a manual cordon never triggers mass eviction).
    included_taints: tuple[str, ...] | None = None


def _taint_filter_problem(entry: str) -> str | None:
    """excludedTaints/includedTaints entries: "key" or "key=value"."""
    key, _, value = entry.partition("=")
    return qualified_name_problem(key) or label_value_problem(value)


def _included_taint_problem(entry: str) -> str | None:
    # Excluding another component's taint only narrows what is evicted; including one drains every node that
    # component marks (every cordoned node for node.kubernetes.io/unschedulable, every node an autoscaler is
    # deleting), racing the owner's own drain or eviction.
    problem = _taint_filter_problem(entry)
    owned = None if problem else owned_taint_problem(entry.partition("=")[0])
    return problem or (owned and f"{owned}; including it would evict from every node its owner taints")


def read_args(r: Reader, strategy: Section) -> RemovePodsViolatingNodeTaintsArgs:
    m = r.section(strategy, "args", _TAINTS_ARGS_KEYS)
    d = RemovePodsViolatingNodeTaintsArgs()
    excluded = r.strings(m, "excludedTaints", _taint_filter_problem)
    included = r.strings(m, "includedTaints", _included_taint_problem)
    if excluded is not None and included is not None:
        r.error(m.values["includedTaints"], m.at("includedTaints"),
                "includedTaints and excludedTaints are mutually exclusive; give one of them")
    return RemovePodsViolatingNodeTaintsArgs(
        scope=read_scope(r, m),
        include_prefer_no_schedule=r.flag(m, "includePreferNoSchedule", d.include_prefer_no_schedule),
        excluded_taints=excluded if excluded is not None else d.excluded_taints,
        included_taints=included if included is not None else d.included_taints,
    )
