"""RemovePodsViolatingTopologySpreadConstraint's arguments (descheduler's names), defaults and validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.policy.reader import Reader, Section
from remediator.strategies.pod_scope import SCOPE_KEYS, PodScope, read_scope

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
_SPREAD_ARGS_KEYS = (*SCOPE_KEYS, "constraints", "topologyBalanceNodeFit")


@dataclass(frozen=True)
class RemovePodsViolatingTopologySpreadConstraintArgs:
    scope: PodScope = PodScope()
    constraints: tuple[str, ...] = (DO_NOT_SCHEDULE,)  # the whenUnsatisfiable values balanced
    # descheduler: false evicts without asking whether another node takes the pod. nodemedic always asks
    # (docs/balance-strategies.md, tsc-place); the flag is read so descheduler policies carry over.
    topology_balance_node_fit: bool = True


def _constraint_problem(value: str) -> str | None:
    if value not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
        return f"must be {DO_NOT_SCHEDULE} or {SCHEDULE_ANYWAY}, got {value!r}"
    return None


def read_args(r: Reader, strategy: Section) -> RemovePodsViolatingTopologySpreadConstraintArgs:
    m = r.section(strategy, "args", _SPREAD_ARGS_KEYS)
    d = RemovePodsViolatingTopologySpreadConstraintArgs()
    constraints = r.strings(m, "constraints", _constraint_problem)
    return RemovePodsViolatingTopologySpreadConstraintArgs(
        scope=read_scope(r, m),
        constraints=tuple(dict.fromkeys(constraints)) if constraints else d.constraints,
        topology_balance_node_fit=r.flag(m, "topologyBalanceNodeFit", d.topology_balance_node_fit),
    )
