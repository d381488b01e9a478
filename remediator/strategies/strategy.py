"""What the registry knows of a strategy: its name, its kind, how to read its `args`, and its plan function.

"deschedule" strategies run before "balance" ones, as descheduler runs its Deschedule extension point before
Balance. A deschedule strategy yields candidates: `plan(snapshot, args, *, evict_taints, planned_taints, evicting,
fits) -> Iterable[PlannedEviction | CrashLoopNode]`, taking the keywords it needs and `**_` for the others. The
planner puts each candidate through the cycle's gate as it is yielded, so a strategy whose next candidate depends
on the ones before (inter-pod anti-affinity) asks `evicting(pod_key)` whether the gate took them, and one whose
rule is about a better node (node affinity) asks `fits(pod, accept)` for one (reserving nothing); a `CrashLoopNode`
is a finding about a node that goes into the plan as it is. A balance strategy decides pod by pod what to try next from
what the gate let through: `plan(snapshot, args, cycle) -> None`, moving pods with `cycle.move`. Neither calls the
API; both only add to the cycle's Plan.

`terminal_pods`: the strategy also hands the gate Succeeded/Failed pods (descheduler lists every pod for
RemoveFailedPods, PodLifeTime and RemovePodsHavingTooManyRestarts); for every other strategy the gate refuses them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from remediator.policy.reader import Reader, Section

KINDS = ("deschedule", "balance")  # run order


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: str  # one of KINDS
    read_args: Callable[[Reader, Section], object]  # the strategy's `args` mapping -> its args dataclass
    plan: Callable[..., Any]
    terminal_pods: bool = False
