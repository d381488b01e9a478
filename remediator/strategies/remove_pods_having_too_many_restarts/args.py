"""RemovePodsHavingTooManyRestarts's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

STATES = ("CrashLoopBackOff", "Running")  # descheduler's allowed states: a pod phase or a container waiting reason
_KEYS = (*SCOPE_KEYS, "podRestartThreshold", "includingInitContainers", "states")


@dataclass(frozen=True)
class RemovePodsHavingTooManyRestartsArgs:
    pod_restart_threshold: int  # required: descheduler refuses a threshold below 1
    scope: PodScope = PodScope()
    including_init_containers: bool = False
    states: tuple[str, ...] = ()  # empty = any


def _state_problem(value: str) -> str | None:
    return None if value in STATES else f"must be one of {', '.join(STATES)}, got {value!r}"


def read_args(r: Reader, strategy: Section) -> RemovePodsHavingTooManyRestartsArgs:
    m = r.section(strategy, "args", _KEYS, required=True)
    threshold = r.integer(m, "podRestartThreshold", 0, minimum=1)
    if "podRestartThreshold" not in m.values and m.present:
        r.error(m.where(), m.at("podRestartThreshold"), "required: the restart count (at least 1) that evicts a pod")
    return RemovePodsHavingTooManyRestartsArgs(
        pod_restart_threshold=max(threshold, 1),
        scope=read_scope(r, m),
        including_init_containers=r.flag(m, "includingInitContainers", False),
        states=r.strings(m, "states", _state_problem) or (),
    )
