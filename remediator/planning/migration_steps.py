"""What a migration does next (model/migration.py), from its object, the cluster as the caches see it and the outcome
of the move it has under way: one transition per call; control/migrations.py writes it and starts its move.

A migration runs one step at a time. Before it starts, every step is checked against the cluster as it is now (the
plan was made minutes or hours ago): each pod still on its first node, each target still there, Ready, schedulable and
not tainted against the pod, each PDB still allowing the moves of its pods. A step is done when its replacement runs
on the planned node. A step that fails stops the plan, and the completed steps are undone last first, each undo a
move of the step's replacement back to the step's first node, checked and pinned the same way; unless the policy
keeps completed steps (`migrations.onFailure: keep`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from remediator.model.migration import FINISHED, Decision, Migration, Phase, Step, StepState, StepStatus
from remediator.model.records import HOSTNAME_LABEL, NodeRecord, PdbRecord, PodRecord
from remediator.scheduling.selectors import matches_labels
from remediator.scheduling.tolerations import untolerated

KEEP_OUT = ("NoSchedule", "NoExecute")


@dataclass(frozen=True)
class ClusterView:
    pods: Mapping[str, PodRecord]  # "namespace/name" -> pod
    nodes: Mapping[str, NodeRecord]
    pdbs: Sequence[PdbRecord]


@dataclass(frozen=True)
class Move:
    """A step's move (or its undo) to start now: evict `pod`, its replacement pinned to `hostname`."""

    migration: str
    index: int
    undo: bool
    pod: PodRecord
    target: str
    hostname: str


@dataclass(frozen=True)
class MoveOutcome:
    """How a move ended, as control/migrations.py saw it: the replacement pinned and bound to the target, or why not."""

    landed: bool
    replacement: str  # "namespace/name" of the pod made for it ("" when none came)
    why: str


@dataclass(frozen=True)
class Transition:
    phase: Phase
    steps: tuple[StepStatus, ...]
    message: str
    move: Move | None = None


@dataclass(frozen=True)
class Moment:
    """What one call of `advance` knows besides the migration."""

    view: ClusterView
    now: dt.datetime
    in_flight: bool  # its move's eviction or landing is still under way
    outcome: MoveOutcome | None  # how its last move ended, if it has and this remediator saw it
    step_deadline: dt.timedelta  # from a step's start until its replacement runs (eviction.landingDeadline)
    keep_completed: bool = False  # migrations.onFailure: keep


def advance(m: Migration, at: Moment) -> Transition | None:
    """The migration's next transition; None while nothing changes (waiting for a decision, or for its move). A
    proposal waits for a person's decision whatever the engine's approval says now: it was written for one."""
    if m.phase is None:
        return Transition(Phase.REFUSED, (), "not proposed by nodemedic (the remediator never wrote its status): not "
                                             "run, whatever its spec says")
    if m.phase in FINISHED:
        return None
    if m.phase == Phase.PROPOSED:
        return _decided(m, at.view, at.now)
    if m.phase == Phase.RUNNING:
        return _running(m, at)
    return _reverting(m, at)


def _decided(m: Migration, view: ClusterView, now: dt.datetime) -> Transition | None:
    if m.decision == Decision.REJECTED:
        return Transition(Phase.REJECTED, m.step_status, "rejected: nothing moved")
    if m.decision == Decision.NONE:
        if now >= m.expires:
            return Transition(Phase.EXPIRED, m.step_status, f"no decision by {m.expires:%Y-%m-%dT%H:%M:%SZ}: "
                                                            "nothing moved")
        return None
    why = recheck(m, view)
    if why is not None:
        return Transition(Phase.REFUSED, m.step_status, f"the cluster no longer fits the plan, nothing moved: {why}")
    return _start(m, 0, view, now, "started")


def recheck(m: Migration, view: ClusterView) -> str | None:
    """Why the plan cannot run on the cluster as it is now, or None."""
    for i, step in enumerate(m.steps):
        why = _unfit(view, step)
        if why is not None:
            return f"step {i + 1}: {why}"
    wanted: dict[tuple[str, str], int] = {}
    for step in m.steps:
        pod = view.pods[step.pod]
        for b in view.pdbs:
            if b.namespace == pod.namespace and b.selector is not None and matches_labels(b.selector, pod.labels):
                wanted[(b.namespace, b.name)] = wanted.get((b.namespace, b.name), 0) + 1
    for b in view.pdbs:
        # One step at a time: each replacement runs before the next step goes, so one disruption at a time suffices.
        if wanted.get((b.namespace, b.name)) and b.disruptions_allowed < 1:
            return f"PodDisruptionBudget {b.namespace}/{b.name} allows no disruption now"
    return None


def _unfit(view: ClusterView, step: Step, *, undo: str = "", hostname: str = "") -> str | None:
    """Why `step`'s move cannot start now, or None; `undo`: the replacement's key, moving back (to `hostname`)."""
    key, uid = (undo, view.pods[undo].uid if undo in view.pods else "") if undo else (step.pod, step.pod_uid)
    source, target = (step.target, step.source) if undo else (step.source, step.target)
    hostname = hostname if undo else step.hostname
    pod = view.pods.get(key)
    if pod is None or pod.uid != uid or not pod.live:
        return f"pod {key} is gone"
    if pod.node_name != source:
        return f"pod {key} runs on {pod.node_name or 'no node'} now, not {source}"
    node = view.nodes.get(target)
    if node is None or node.deleting:
        return f"node {target} is gone"
    if node.unschedulable:
        return f"node {target} is cordoned"
    if not node.ready:
        return f"node {target} is not Ready"
    if node.labels.get(HOSTNAME_LABEL) != hostname:
        return f"node {target}'s {HOSTNAME_LABEL} is no longer {hostname}"
    taints = untolerated(pod.tolerations, node.taints, KEEP_OUT)
    if taints:
        return f"node {target} is tainted {taints[0].key}:{taints[0].effect}"
    if pod.controller is None or pod.controller.uid != step.owner_uid:
        return f"pod {key} is no longer {step.owner}'s"
    return None


def _start(m: Migration, index: int, view: ClusterView, now: dt.datetime, what: str) -> Transition:
    step = m.steps[index]
    steps = _with(m, StepStatus(index, StepState.MOVING, at=now, message=f"moving to {step.target}"))
    return Transition(Phase.RUNNING, steps, f"step {index + 1} of {len(m.steps)} {what}",
                      Move(m.name, index, False, view.pods[step.pod], step.target, step.hostname))


def _running(m: Migration, at: Moment) -> Transition | None:
    view, now, keep_completed, outcome = at.view, at.now, at.keep_completed, at.outcome
    index = next((i for i in range(len(m.steps)) if m.state(i).state != StepState.DONE), None)
    if index is None:
        return Transition(Phase.SUCCEEDED, m.step_status, f"all {len(m.steps)} steps done")
    step, st = m.steps[index], m.state(index)
    if st.state == StepState.PENDING:
        why = _unfit(view, step)
        return _failed(m, index, why, now, keep_completed) if why else _start(m, index, view, now, "started")
    if st.state != StepState.MOVING:
        return _failed(m, index, f"step {index + 1} found {st.state}", now, keep_completed)
    if not st.replacement:
        if at.in_flight:
            return None
        if outcome is None:
            return _failed(m, index, "its outcome was lost (the remediator restarted during the step)", now,
                           keep_completed)
        if not outcome.landed:
            return _failed(m, index, outcome.why, now, keep_completed)
        steps = _with(m, dataclasses.replace(st, replacement=outcome.replacement,
                                             message=f"{outcome.replacement} bound to {step.target}"))
        return Transition(Phase.RUNNING, steps, f"step {index + 1} of {len(m.steps)}: replacement bound")
    ran = _runs(view, st.replacement, step.target)
    if ran is None:
        return _failed(m, index, _ran_why(view, st.replacement, step.target), now, keep_completed) \
            if _past(st, now, at.step_deadline) else None
    steps = _with(m, StepStatus(index, StepState.DONE, st.replacement, now, f"{st.replacement} runs on {step.target}"))
    if index + 1 == len(m.steps):
        return Transition(Phase.SUCCEEDED, steps, f"all {len(m.steps)} steps done")
    return Transition(Phase.RUNNING, steps, f"step {index + 1} of {len(m.steps)} done")


def _runs(view: ClusterView, key: str, node: str) -> PodRecord | None:
    pod = view.pods.get(key)
    return pod if pod is not None and pod.live and pod.node_name == node and pod.phase == "Running" else None


def _ran_why(view: ClusterView, key: str, node: str) -> str:
    pod = view.pods.get(key)
    if pod is None or not pod.live:
        return f"replacement {key} is gone"
    if pod.node_name != node:
        return f"replacement {key} is on {pod.node_name or 'no node'}, not {node}"
    return f"replacement {key} is {pod.phase} on {node}, not Running, past the step's deadline"


def _past(st: StepStatus, now: dt.datetime, deadline: dt.timedelta) -> bool:
    return st.at is None or now >= st.at + deadline


def _failed(m: Migration, index: int, why: str, now: dt.datetime, keep_completed: bool) -> Transition:
    steps = _with(m, StepStatus(index, StepState.FAILED, m.state(index).replacement, now, why))
    done = sum(1 for s in steps if s.state == StepState.DONE)
    if done and not keep_completed:
        return Transition(Phase.REVERTING, steps, f"step {index + 1} failed ({why}): undoing {done} completed "
                                                  f"step{'s' if done > 1 else ''}, last first")
    kept = f"; {done} completed step{'s' if done > 1 else ''} kept (migrations.onFailure: keep)" if done else ""
    return Transition(Phase.FAILED, steps, f"step {index + 1} failed: {why}{kept}")


def _reverting(m: Migration, at: Moment) -> Transition | None:
    view, now, outcome = at.view, at.now, at.outcome
    index = max((s.index for s in m.step_status if s.state in (StepState.DONE, StepState.UNDOING)), default=None)
    if index is None:
        failed = [s.index + 1 for s in m.step_status if s.state == StepState.UNDO_FAILED]
        if failed:
            return Transition(Phase.FAILED, m.step_status, f"reverted, except step{'s' if len(failed) > 1 else ''} "
                                                          f"{', '.join(map(str, failed))}, whose undo failed")
        return Transition(Phase.REVERTED, m.step_status, "every completed step undone")
    step, st = m.steps[index], m.state(index)
    back = view.nodes.get(step.source)
    hostname = back.labels.get(HOSTNAME_LABEL, "") if back is not None else ""
    if st.state == StepState.DONE:
        moved = view.pods.get(st.replacement)
        why = _unfit(view, step, undo=st.replacement, hostname=hostname)
        if why is not None or moved is None:
            return _undo_failed(m, index, st, why or f"pod {st.replacement} is gone", now)
        steps = _with(m, StepStatus(index, StepState.UNDOING, "", now, f"moving {st.replacement} back to "
                                                                        f"{step.source}"))
        return Transition(Phase.REVERTING, steps, f"undoing step {index + 1}",
                          Move(m.name, index, True, moved, step.source, hostname))
    if not st.replacement:
        if at.in_flight:
            return None
        if outcome is None or not outcome.landed:
            return _undo_failed(m, index, st, outcome.why if outcome else "its outcome was lost (the remediator "
                                                                         "restarted during the undo)", now)
        steps = _with(m, dataclasses.replace(st, replacement=outcome.replacement))
        return Transition(Phase.REVERTING, steps, f"undoing step {index + 1}: replacement bound")
    if _runs(view, st.replacement, step.source) is None:
        return _undo_failed(m, index, st, _ran_why(view, st.replacement, step.source), now) \
            if _past(st, now, at.step_deadline) else None
    steps = _with(m, StepStatus(index, StepState.UNDONE, st.replacement, now,
                                f"{st.replacement} runs on {step.source} again"))
    return Transition(Phase.REVERTING, steps, f"step {index + 1} undone")


def _undo_failed(m: Migration, index: int, st: StepStatus, why: str, now: dt.datetime) -> Transition:
    steps = _with(m, StepStatus(index, StepState.UNDO_FAILED, st.replacement, now, why))
    return Transition(Phase.REVERTING, steps, f"undo of step {index + 1} failed: {why}")


def _with(m: Migration, changed: StepStatus) -> tuple[StepStatus, ...]:
    """Every step's status, `changed` in its place."""
    return tuple(changed if i == changed.index else m.state(i) for i in range(len(m.steps)))
