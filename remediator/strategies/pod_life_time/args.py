"""PodLifeTime's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.strategies.scope import SCOPE_KEYS, PodScope, read_scope

# descheduler's podLifeTimeAllowedStates: pod phases, pod status reasons, container waiting/terminated reasons.
STATES = ("Running", "Pending", "Succeeded", "Failed", "Unknown", "NodeAffinity", "NodeLost", "Shutdown",
          "UnexpectedAdmissionError", "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff",
          "CreateContainerConfigError", "ErrImagePull", "CreateContainerError", "InvalidImageName", "OOMKilled",
          "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun", "StartError")
_UNSUPPORTED = ("conditions", "includingEphemeralContainers")  # DS-LIFE-1
_KEYS = (*SCOPE_KEYS, "maxPodLifeTimeSeconds", "states", "includingInitContainers", "ownerKinds", "exitCodes",
         *_UNSUPPORTED)
INT32 = 2**31 - 1


@dataclass(frozen=True)
class PodLifeTimeArgs:
    scope: PodScope = PodScope()
    max_pod_life_time_seconds: int | None = None
    states: tuple[str, ...] = ()
    including_init_containers: bool = False
    owner_kinds_include: tuple[str, ...] = ()
    owner_kinds_exclude: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = ()


def _state_problem(value: str) -> str | None:
    return None if value in STATES else f"must be one of {', '.join(sorted(STATES))}, got {value!r}"


def _kind_problem(value: str) -> str | None:
    return None if value else "must not be empty"


def read_args(r: Reader, strategy: Section) -> PodLifeTimeArgs:
    m = r.section(strategy, "args", _KEYS, required=True)
    for key in _UNSUPPORTED:
        if key in m.values:
            r.error(m.key_nodes[key], m.at(key), "not supported by nodemedic (docs/deschedule-strategies.md DS-LIFE-1)")
    kinds = r.section(m, "ownerKinds", ("include", "exclude"))
    include = r.strings(kinds, "include", _kind_problem) or ()
    exclude = r.strings(kinds, "exclude", _kind_problem) or ()
    if include and exclude:
        r.error(kinds.where(), kinds.path, "include and exclude are mutually exclusive; give one of them")
    args = PodLifeTimeArgs(
        scope=read_scope(r, m),
        max_pod_life_time_seconds=r.optional_integer(m, "maxPodLifeTimeSeconds", None),
        states=r.strings(m, "states", _state_problem) or (),
        including_init_containers=r.flag(m, "includingInitContainers", False),
        owner_kinds_include=include,
        owner_kinds_exclude=exclude,
        exit_codes=r.integers(m, "exitCodes", minimum=-INT32 - 1, maximum=INT32) or (),
    )
    given = {"maxPodLifeTimeSeconds", "states", "exitCodes"} & set(m.values)
    if not given and m.present:
        r.error(m.where(), m.path, "give at least one of maxPodLifeTimeSeconds, states, exitCodes")
    return args
