"""PodLifeTime's arguments (descheduler's names), their defaults and their validation."""

from __future__ import annotations

from dataclasses import dataclass

from nodemedic_common.durations import MAX_SECONDS
from remediator.policy.reader import Reader, Section
from remediator.policy.syntax import INT32
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

# descheduler's podLifeTimeAllowedStates: pod phases, pod status reasons, container waiting/terminated reasons.
STATES = ("Running", "Pending", "Succeeded", "Failed", "Unknown", "NodeAffinity", "NodeLost", "Shutdown",
          "UnexpectedAdmissionError", "PodInitializing", "ContainerCreating", "ImagePullBackOff", "CrashLoopBackOff",
          "CreateContainerConfigError", "ErrImagePull", "CreateContainerError", "InvalidImageName", "OOMKilled",
          "Error", "Completed", "DeadlineExceeded", "Evicted", "ContainerCannotRun", "StartError")
_KEYS = (*SCOPE_KEYS, "maxPodLifeTimeSeconds", "states", "conditions", "includingInitContainers",
         "includingEphemeralContainers", "ownerKinds", "exitCodes")
_CONDITION_KEYS = ("type", "status", "reason", "minTimeSinceLastTransitionSeconds")
# A pod condition's status is one of these (core/v1 ConditionStatus); descheduler would take any text and then
# match nothing, as a typo ("true") silently does there.
CONDITION_STATUSES = ("True", "False", "Unknown")


@dataclass(frozen=True)
class ConditionFilter:
    """One `conditions` entry: the given fields must all match one of the pod's conditions (descheduler's
    PodConditionFilter); an empty field is not checked."""

    type: str = ""
    status: str = ""
    reason: str = ""
    min_time_since_last_transition_seconds: int | None = None


@dataclass(frozen=True)
class PodLifeTimeArgs:
    scope: PodScope = PodScope()
    max_pod_life_time_seconds: int | None = None
    states: tuple[str, ...] = ()
    conditions: tuple[ConditionFilter, ...] = ()
    including_init_containers: bool = False
    including_ephemeral_containers: bool = False
    owner_kinds_include: tuple[str, ...] = ()
    owner_kinds_exclude: tuple[str, ...] = ()
    exit_codes: tuple[int, ...] = ()


def _state_problem(value: str) -> str | None:
    return None if value in STATES else f"must be one of {', '.join(sorted(STATES))}, got {value!r}"


def _kind_problem(value: str) -> str | None:
    return None if value else "must not be empty"


def _status_problem(value: str) -> str | None:
    return None if value in CONDITION_STATUSES else \
        f"must be one of {', '.join(CONDITION_STATUSES)} (a pod condition's status), got {value!r}"


def _conditions(r: Reader, m: Section) -> tuple[ConditionFilter, ...]:
    out = []
    for node, path in r.sequence(m, "conditions") or ():
        c = r.mapping(node, path, _CONDITION_KEYS)
        if not c.present:
            continue
        errors_before = len(r.errors)
        given = ConditionFilter(
            type=r.text(c, "type"),
            status=r.text(c, "status", check=lambda v: _status_problem(v) if v else None),
            reason=r.text(c, "reason"),
            min_time_since_last_transition_seconds=r.optional_integer(c, "minTimeSinceLastTransitionSeconds", None,
                                                                         maximum=MAX_SECONDS),
        )
        if given == ConditionFilter() and len(r.errors) == errors_before:  # descheduler's check, too
            r.error(c.where(), path, f"give at least one of {', '.join(_CONDITION_KEYS)}")
        out.append(given)
    return tuple(out)


def read_args(r: Reader, strategy: Section) -> PodLifeTimeArgs:
    m = r.section(strategy, "args", _KEYS, required=True)
    kinds = r.section(m, "ownerKinds", ("include", "exclude"))
    include = r.strings(kinds, "include", _kind_problem) or ()
    exclude = r.strings(kinds, "exclude", _kind_problem) or ()
    if include and exclude:
        r.error(kinds.where(), kinds.path, "include and exclude are mutually exclusive; give one of them")
    args = PodLifeTimeArgs(
        scope=read_scope(r, m),
        max_pod_life_time_seconds=r.optional_integer(m, "maxPodLifeTimeSeconds", None, maximum=MAX_SECONDS),
        states=r.strings(m, "states", _state_problem) or (),
        conditions=_conditions(r, m),
        including_init_containers=r.flag(m, "includingInitContainers", False),
        including_ephemeral_containers=r.flag(m, "includingEphemeralContainers", False),
        owner_kinds_include=include,
        owner_kinds_exclude=exclude,
        exit_codes=r.integers(m, "exitCodes", minimum=INT32[0], maximum=INT32[1]) or (),
    )
    given = {"maxPodLifeTimeSeconds", "states", "conditions", "exitCodes"} & set(m.values)
    if not given and m.present:
        r.error(m.where(), m.path, "give at least one of maxPodLifeTimeSeconds, states, conditions, exitCodes")
    return args
