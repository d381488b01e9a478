"""A node's repair ladder as the `nodemedic.io/repair` annotation records it: the step under way and what was tried.

The annotation is the ladder's only state (it survives a restart or a new leader) and the agent's ask at once
(nodemedic_common/repair_contract.py). Only the remediator writes it; a value it cannot read is treated as no ladder,
after a warning, rather than trusted.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass

from nodemedic_common.repair_contract import (
    ContractError,
    RepairAction,
    format_time,
    json_object,
    parse_time,
)

MAX_HISTORY = 12  # tried steps kept; older ones are dropped (the Events keep every one)
MAX_RESULT = 300  # characters of one result


@dataclass(frozen=True)
class Tried:
    step: int
    action: RepairAction
    service: str
    requested: dt.datetime
    ended: dt.datetime
    result: str

    def describe(self) -> str:
        what = f"{self.action} {self.service}" if self.service else str(self.action)
        return f"{what} at {format_time(self.requested)}: {self.result}"


@dataclass(frozen=True)
class LadderState:
    id: str  # new for every step started: the agent acts once per id
    rule: str
    step: int  # index into the rule's ladder
    action: RepairAction
    service: str
    requested: dt.datetime  # when this step was asked for; its wait counts from here
    started: dt.datetime  # when the ladder's first step was asked for
    history: tuple[Tried, ...] = ()

    def to_annotation(self) -> str:
        return json.dumps({
            "id": self.id, "rule": self.rule, "step": self.step, "action": str(self.action),
            **({"service": self.service} if self.service else {}),
            "requested": format_time(self.requested), "started": format_time(self.started),
            "history": [{"step": t.step, "action": str(t.action), **({"service": t.service} if t.service else {}),
                         "requested": format_time(t.requested), "ended": format_time(t.ended),
                         "result": t.result[:MAX_RESULT]} for t in self.history[-MAX_HISTORY:]],
        }, separators=(",", ":"))


def step_id(requested: dt.datetime, step: int) -> str:
    """Unique per node: a node starts at most one step per second (one planning cycle takes one step)."""
    return f"{int(requested.timestamp())}-{step}"


class StateError(ValueError):
    pass


def parse_state(text: str) -> LadderState:
    """The ladder in an annotation this remediator wrote; StateError naming the field when it is not one."""
    try:
        raw = json_object(text, "the annotation")
    except ContractError as e:
        raise StateError(str(e).removeprefix("the annotation: ")) from None
    history = raw.get("history", [])
    if not isinstance(history, list):
        raise StateError("history: expected a list")
    return LadderState(
        id=_text(raw, "id"), rule=_text(raw, "rule"), step=_index(raw, "step"), action=_action(raw, "action"),
        service=_text(raw, "service", required=False), requested=_time(raw, "requested"), started=_time(raw, "started"),
        history=tuple(_tried(item, i) for i, item in enumerate(history[-MAX_HISTORY:])))


def _tried(item: object, i: int) -> Tried:
    if not isinstance(item, dict):
        raise StateError(f"history[{i}]: expected an object")
    try:
        return Tried(step=_index(item, "step"), action=_action(item, "action"),
                     service=_text(item, "service", required=False), requested=_time(item, "requested"),
                     ended=_time(item, "ended"), result=_text(item, "result", required=False)[:MAX_RESULT])
    except StateError as e:
        raise StateError(f"history[{i}].{e}") from None


def _text(raw: dict[str, object], key: str, *, required: bool = True) -> str:
    value = raw.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value):
        raise StateError(f"{key}: expected a non-empty string" if required else f"{key}: expected a string")
    return value


def _index(raw: dict[str, object], key: str) -> int:
    value = raw.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 100:
        raise StateError(f"{key}: expected a step index 0..99")
    return value


def _action(raw: dict[str, object], key: str) -> RepairAction:
    try:
        return RepairAction(str(raw.get(key)))
    except ValueError:
        raise StateError(f"{key}: expected one of {', '.join(RepairAction)}") from None


def _time(raw: dict[str, object], key: str) -> dt.datetime:
    t = parse_time(raw.get(key))
    if t is None:
        raise StateError(f"{key}: expected an RFC 3339 time")
    return t
