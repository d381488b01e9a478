"""What one plan decides about repair ladders: steps to start, ladders that end, and why the others wait."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from nodemedic_common.repair_contract import RepairAction
from remediator.repair.state import LadderState


@dataclass(frozen=True)
class RepairStart:
    """Ask for the next step: write `state` to the node (and, for replace, delete its NodeClaim)."""

    node: str
    state: LadderState
    cause: str  # why now: the condition and what the earlier steps did
    claim: str = ""  # replace: the node's Karpenter NodeClaim
    consumes_next: bool = False  # a person's `--next` started it: its annotation goes in the same write

    def describe(self) -> str:
        s = self.state
        what = f"{s.action} {s.service}" if s.service else str(s.action)
        return f"step {s.step + 1} of {s.rule}: {what} ({self.cause})"


@dataclass(frozen=True)
class RepairEnd:
    """The ladder is over: its annotation goes. `repaired` when the condition cleared and the node is Ready."""

    node: str
    state: LadderState
    result: str
    repaired: bool


@dataclass(frozen=True)
class RepairWait:
    """A ladder that takes no step this cycle, and why (a step under way, a rail, a person's hold)."""

    node: str
    rule: str
    step: str  # the step under way or the one waiting to start, described
    why: str
    until: dt.datetime | None = None  # when the wait ends by itself, if it does
    halted: bool = False  # the unhealthy-share rail holds it (alerted)


@dataclass
class RepairPlan:
    starts: list[RepairStart] = field(default_factory=list)
    ends: list[RepairEnd] = field(default_factory=list)
    waiting: list[RepairWait] = field(default_factory=list)
    in_repair: dict[str, LadderState] = field(default_factory=dict)  # node -> its ladder as this plan leaves it
    halted: dict[str, str] = field(default_factory=dict)  # group -> why nothing in it is repaired
    unreadable: dict[str, str] = field(default_factory=dict)  # node -> why its annotation is not a ladder (removed)

    def needs_a_person(self) -> list[str]:
        return sorted(n for n, s in self.in_repair.items() if s.action == RepairAction.PERSON)
