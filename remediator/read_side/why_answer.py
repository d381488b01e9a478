"""/why/NODE: the facts the last plan decided on for one node (why.py), each with when it changes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.read_side.fields import Fields
from remediator.read_side.why import Fact


def _stamp(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class FactLine:
    topic: str  # node, condition, rule, taint, rail, plan, repair, pdb, autoscaler, timer, dark
    sentence: str
    changes_at: str | None = None  # RFC 3339; None: it does not change on its own
    changes_in: str | None = None  # from the answer's time, as a duration ("4m30s")

    @staticmethod
    def of(fact: Fact, now: dt.datetime) -> FactLine:
        if fact.changes_at is None:
            return FactLine(fact.topic, fact.sentence)
        return FactLine(fact.topic, fact.sentence, _stamp(fact.changes_at),
                        format_duration(whole_seconds(fact.changes_at - now)))

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"topic": self.topic, "sentence": self.sentence}
        if self.changes_at is not None:
            out["changesAt"] = self.changes_at
            out["changesIn"] = self.changes_in
        return out

    @staticmethod
    def read(f: Fields) -> FactLine:
        return FactLine(f.text("topic"), f.text("sentence"), f.optional_text("changesAt"),
                        f.optional_text("changesIn"))


@dataclass(frozen=True)
class WhyAnswer:
    node: str
    at: str | None  # the time of the plan the facts are from; None before the first planning cycle
    facts: tuple[FactLine, ...]

    @staticmethod
    def of(node: str, now: dt.datetime, facts: list[Fact]) -> WhyAnswer:
        return WhyAnswer(node, now.isoformat().replace("+00:00", "Z"), tuple(FactLine.of(f, now) for f in facts))

    @staticmethod
    def before_planning(node: str) -> WhyAnswer:
        return WhyAnswer(node, None, (FactLine("plan", "no planning cycle yet"),))

    def to_json(self) -> dict[str, object]:
        return {"node": self.node, **({} if self.at is None else {"at": self.at}),
                "facts": [f.to_json() for f in self.facts]}

    @staticmethod
    def read(doc: object, path: str) -> WhyAnswer:
        f = Fields.of(doc, path)
        return WhyAnswer(f.text("node"), f.optional_text("at"), f.rows("facts", FactLine.read))
