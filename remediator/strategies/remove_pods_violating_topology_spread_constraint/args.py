"""RemovePodsViolatingTopologySpreadConstraint's arguments (descheduler's names), defaults and validation."""

from __future__ import annotations

from dataclasses import dataclass

from remediator.model import LabelSelector
from remediator.policy.fields import Namespaces, read_label_selector, read_namespaces
from remediator.policy.reader import Reader, Section

DO_NOT_SCHEDULE, SCHEDULE_ANYWAY = "DoNotSchedule", "ScheduleAnyway"
_SPREAD_ARGS_KEYS = ("namespaces", "labelSelector", "constraints", "topologyBalanceNodeFit")


@dataclass(frozen=True)
class RemovePodsViolatingTopologySpreadConstraintArgs:
    namespaces: Namespaces = Namespaces()
    label_selector: LabelSelector | None = None
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
        namespaces=read_namespaces(r, m),
        label_selector=read_label_selector(r, m),
        constraints=tuple(dict.fromkeys(constraints)) if constraints else d.constraints,
        topology_balance_node_fit=r.flag(m, "topologyBalanceNodeFit", d.topology_balance_node_fit),
    )
