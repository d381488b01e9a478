"""Pods stuck terminating on this node: `PodsStuckTerminating`.

The API server sets a pod's deletionTimestamp to the deletion time plus its grace period; the kubelet then stops
the containers and removes the pod. A pod whose deletionTimestamp is more than `margin` in the past was not
cleaned up: the kubelet or the container runtime is wedged on it (a container that will not die, a volume that
will not unmount), and the node usually cannot be trusted with new pods either.

The check gets plain data, pod name -> deletionTimestamp, from a source the agent attaches when it talks to the
API server (agent/reporting/pod_watch.py: one watch scoped to this node); it knows nothing of Kubernetes. Until a
source is attached (`nodemedic-agent check` has none) or has synced, it reports nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agent.bounds import POSITIVE, bounded
from agent.host import HostRoot
from agent.model import CheckTiming, ConditionReport, Observation, Status
from nodemedic_common.durations import format_duration

CONDITION = "PodsStuckTerminating"
Terminating = Callable[[], Mapping[str, dt.datetime] | None]  # None: not known yet
SHOWN = 5


@dataclass(frozen=True)
class Config:
    timing: CheckTiming = field(default_factory=CheckTiming)
    margin: dt.timedelta = bounded(dt.timedelta(minutes=5), POSITIVE)


class StuckPods:
    name = "stuckPods"
    condition_types: tuple[str, ...] = (CONDITION,)

    def __init__(self, config: Config, host: HostRoot) -> None:  # `host`: the registry's signature; unused
        self.timing = config.timing
        self._margin = config.margin
        self._terminating: Terminating | None = None

    def attach(self, terminating: Terminating) -> None:
        self._terminating = terminating

    async def observe(self, now: dt.datetime) -> Observation:
        pods = self._terminating() if self._terminating is not None else None
        if pods is None:
            return Observation(self.name, now)
        stuck = sorted((at, name) for name, at in pods.items() if now - at > self._margin)
        if not stuck:
            return Observation(self.name, now, conditions=(ConditionReport(
                CONDITION, Status.FALSE, "NoPodStuckTerminating",
                f"no pod past its deletion time by more than {format_duration(self._margin)}"),))
        names = ", ".join(f"{name} (since {at.isoformat()})" for at, name in stuck[:SHOWN])
        more = f" and {len(stuck) - SHOWN} more" if len(stuck) > SHOWN else ""
        return Observation(self.name, now, conditions=(ConditionReport(
            CONDITION, Status.TRUE, "PodsStuckTerminating",
            f"{len(stuck)} pods past their deletion time by more than {format_duration(self._margin)}: "
            f"{names}{more}"),))
