"""A migration: the moves a fragmentation engine wants, written as one object (`migrations.nodemedic.io`, the chart's
crds/migrations.nodemedic.io.yaml) that a person approves or rejects, and that the remediator then runs one step at a
time, undoing the completed steps in reverse order when one fails.

The spec is the plan as proposed, and the API server keeps it so (the CRD's rules: only spec.decision may change, and
only once). The status is the remediator's alone (the status subresource): a Migration whose status the remediator
never wrote was not proposed by it and is refused, whatever its spec says. Each step is a landed move
(model/landing.py): the pod evicted, its replacement pinned to `target`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from nodemedic_common.repair_contract import format_time, parse_time

MIGRATION_API = "/apis/nodemedic.io/v1alpha1"
MIGRATION_PREFIX = "migration-"
ENGINES = ("MakeRoomForPendingPods", "BalanceResourceMix")
MAX_STEPS = 50  # the CRD's maxItems
MAX_ANSWER = 32 << 20  # bytes of a list of Migrations read: 200 of 50 steps at the CRD's longest fields fit
E = TypeVar("E", bound=StrEnum)


class Decision(StrEnum):
    NONE = ""
    APPROVED = "Approved"
    REJECTED = "Rejected"


class Phase(StrEnum):
    PROPOSED = "Proposed"  # written, waiting for a decision (or, with approval automatic, about to run)
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    REVERTING = "Reverting"  # a step failed: the completed ones are being undone, last first
    REVERTED = "Reverted"
    FAILED = "Failed"  # a step failed and its completed steps were kept (policy), or an undo failed too
    REFUSED = "Refused"  # approved, but the cluster no longer fits it (a node, pod or PDB changed), or not ours
    REJECTED = "Rejected"
    EXPIRED = "Expired"  # no decision before spec.expires


FINISHED = frozenset({Phase.SUCCEEDED, Phase.REVERTED, Phase.FAILED, Phase.REFUSED, Phase.REJECTED, Phase.EXPIRED})


class StepState(StrEnum):
    PENDING = "Pending"
    MOVING = "Moving"
    DONE = "Done"  # its replacement runs on the planned node
    FAILED = "Failed"
    UNDOING = "Undoing"
    UNDONE = "Undone"  # its replacement moved back to the step's first node
    UNDO_FAILED = "UndoFailed"


@dataclass(frozen=True)
class Step:
    pod: str  # "namespace/name" of the pod moved
    pod_uid: str
    owner: str  # its controller, "ReplicaSet/web-5d9c"
    owner_uid: str
    source: str  # the node it runs on when proposed
    target: str  # the node the plan counted on
    hostname: str  # target's kubernetes.io/hostname label: what its replacement is pinned to


@dataclass(frozen=True)
class StepStatus:
    index: int
    state: StepState
    replacement: str = ""  # "namespace/name" of the pod made for the step (undone: the one made for the undo)
    at: dt.datetime | None = None
    message: str = ""


@dataclass(frozen=True)
class Gain:
    measure: str  # "resource-mix deviation (points)", "pending pods seated"
    before: float
    after: float


@dataclass(frozen=True)
class Migration:
    name: str
    namespace: str  # the remediator's own: the Migration's, not the pods'
    engine: str
    proposed: dt.datetime
    expires: dt.datetime
    steps: tuple[Step, ...]
    gain: Gain
    disrupts: tuple[str, ...] = ()  # for people: the workloads moved and their PDBs' room when proposed
    decision: Decision = Decision.NONE
    decided_by: str = ""  # as the plugin recorded it (`kubectl nodemedic approve | reject`)
    phase: Phase | None = None  # None: no status, so not proposed by a remediator
    step_status: tuple[StepStatus, ...] = ()
    message: str = ""
    resource_version: str = ""

    def state(self, index: int) -> StepStatus:
        return next((s for s in self.step_status if s.index == index), StepStatus(index, StepState.PENDING))


def migrations_path(namespace: str) -> str:
    return f"{MIGRATION_API}/namespaces/{namespace}/migrations"


def proposal(m: Migration) -> dict[str, object]:
    """The object the remediator creates (its status follows in a second write: the status subresource)."""
    return {"apiVersion": "nodemedic.io/v1alpha1", "kind": "Migration",
            "metadata": {"name": m.name, "namespace": m.namespace},
            "spec": {"engine": m.engine, "proposed": format_time(m.proposed), "expires": format_time(m.expires),
                     "decision": m.decision.value, "stepCount": len(m.steps),
                     "gain": {"measure": m.gain.measure, "before": round(m.gain.before, 2),
                              "after": round(m.gain.after, 2)},
                     "disrupts": list(m.disrupts),
                     "steps": [{"pod": s.pod, "podUID": s.pod_uid, "owner": s.owner, "ownerUID": s.owner_uid,
                                "from": s.source, "to": s.target, "hostname": s.hostname} for s in m.steps]}}


def status_body(phase: Phase, steps: tuple[StepStatus, ...], message: str, now: dt.datetime) -> dict[str, object]:
    """The whole status, as the remediator writes it (a merge patch of the status subresource)."""
    return {"status": {"phase": phase.value, "message": message[:2000], "updated": format_time(now), "steps": [
        {"index": s.index, "state": s.state.value, "replacement": s.replacement,
         "at": format_time(s.at) if s.at else None, "message": s.message[:1000]} for s in steps]}}


class MigrationError(ValueError):
    """A Migration object that is not one the remediator wrote or can run: its name and the field that says so."""


def read_migration(doc: object) -> Migration:
    """A Migration as the API answered it; MigrationError naming the object and the field when any part is not what
    the CRD admits (an object from an older or a tampered API server, or an answer cut short)."""
    if not isinstance(doc, dict) or not isinstance(meta := doc.get("metadata"), dict):
        raise MigrationError("a Migration without metadata")
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise MigrationError("a Migration without metadata.name or metadata.namespace")
    where = f"Migration {namespace}/{name}"
    spec = _object(doc.get("spec"), where, "spec")
    engine = _text(spec, "engine", where, "spec")
    if engine not in ENGINES:
        raise MigrationError(f"{where}: spec.engine: {engine!r} is not one of {', '.join(ENGINES)}")
    raw_steps = spec.get("steps")
    if not isinstance(raw_steps, list) or not 1 <= len(raw_steps) <= MAX_STEPS:
        raise MigrationError(f"{where}: spec.steps: a list of 1 to {MAX_STEPS} steps expected")
    steps = tuple(_step(s, where, f"spec.steps[{i}]") for i, s in enumerate(raw_steps))
    gain = _object(spec.get("gain"), where, "spec.gain")
    decision = _member(Decision, spec.get("decision") or "", f"{where}: spec.decision", "Approved or Rejected")
    disrupts = spec.get("disrupts") or []
    if not isinstance(disrupts, list) or not all(isinstance(d, str) for d in disrupts):
        raise MigrationError(f"{where}: spec.disrupts: a list of strings expected")
    status = doc.get("status") or {}
    if not isinstance(status, dict):
        raise MigrationError(f"{where}: status: an object expected")
    phase = _phase(status.get("phase"), where)
    return Migration(
        name=name, namespace=namespace, engine=engine, proposed=_time(spec, "proposed", where),
        expires=_time(spec, "expires", where), steps=steps,
        gain=Gain(_text(gain, "measure", where, "spec.gain"), _number(gain, "before", where),
                  _number(gain, "after", where)),
        disrupts=tuple(disrupts), decision=decision, phase=phase,
        decided_by=by if isinstance(by := spec.get("decidedBy"), str) else "",
        step_status=_step_status(status.get("steps"), len(steps), where),
        message=message if isinstance(message := status.get("message"), str) else "",
        resource_version=str(meta.get("resourceVersion") or ""))


def _member(kind: type[E], value: object, where: str, what: str) -> E:
    for member in kind:
        if member.value == value:
            return member
    raise MigrationError(f"{where}: {value!r} is not {what}")


def _object(value: object, where: str, path: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise MigrationError(f"{where}: {path}: an object expected")
    return value


def _text(d: dict[str, object], key: str, where: str, path: str) -> str:
    value = d.get(key)
    if not isinstance(value, str) or not value:
        raise MigrationError(f"{where}: {path}.{key}: a non-empty string expected, got {value!r}")
    return value


def _number(d: dict[str, object], key: str, where: str) -> float:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise MigrationError(f"{where}: spec.gain.{key}: a number expected, got {value!r}")
    return float(value)


def _time(d: dict[str, object], key: str, where: str) -> dt.datetime:
    value = parse_time(d.get(key))
    if value is None:
        raise MigrationError(f"{where}: spec.{key}: an RFC 3339 time expected, got {d.get(key)!r}")
    return value


def _step(value: object, where: str, path: str) -> Step:
    s = _object(value, where, path)
    pod = _text(s, "pod", where, path)
    if pod.count("/") != 1:
        raise MigrationError(f"{where}: {path}.pod: namespace/name expected, got {pod!r}")
    return Step(pod=pod, pod_uid=_text(s, "podUID", where, path), owner=_text(s, "owner", where, path),
                owner_uid=_text(s, "ownerUID", where, path), source=_text(s, "from", where, path),
                target=_text(s, "to", where, path), hostname=_text(s, "hostname", where, path))


def _phase(value: object, where: str) -> Phase | None:
    if value in (None, ""):
        return None
    return _member(Phase, value, f"{where}: status.phase", "a phase the remediator writes")


def _step_status(value: object, steps: int, where: str) -> tuple[StepStatus, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise MigrationError(f"{where}: status.steps: a list expected")
    out = []
    for i, raw in enumerate(value):
        s = _object(raw, where, f"status.steps[{i}]")
        index = s.get("index")
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < steps:
            raise MigrationError(f"{where}: status.steps[{i}].index: a step of spec.steps expected, got {index!r}")
        state = _member(StepState, s.get("state"), f"{where}: status.steps[{i}].state", "a step state")
        replacement, message = s.get("replacement") or "", s.get("message") or ""
        out.append(StepStatus(index=index, state=state, at=parse_time(s.get("at")),
                              replacement=replacement if isinstance(replacement, str) else "",
                              message=message if isinstance(message, str) else ""))
    return tuple(out)
