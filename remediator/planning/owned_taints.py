"""The owned-taints annotation: which of a node's taints nodemedic put there, for which rules, since when.

Ownership lives only in the node's OWNED_TAINTS_ANNOTATION, so it survives restarts and a human's taint with the
same key/effect is never removed nor adopted. The taint writer renders it; the planner, the controller and the
strategies that own a taint read it.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass

from nodemedic_common import bounded_json
from remediator.model.records import Effect, Taint, usable_time
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, STRATEGY_PREFIX
from remediator.state.snapshot import Snapshot


@dataclass(frozen=True)
class OwnedTaint:
    taint: Taint
    rules: tuple[str, ...]
    cause: str
    since: dt.datetime


def parse_owned(annotation: str | None) -> tuple[list[OwnedTaint], str | None]:
    """The taints the annotation claims; anything unreadable means we own nothing (never remove the unproven)."""
    if not annotation:
        return [], None
    try:
        doc = bounded_json.loads(annotation)
        if not isinstance(doc, list):
            raise ValueError("not a JSON list")
        out = []
        for item in doc:
            rules = item["rules"]
            if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
                raise ValueError("rules must be a list of strings")
            since = dt.datetime.fromisoformat(str(item["since"]).replace("Z", "+00:00"))
            if not usable_time(since):  # its age is computed every cycle (consolidation): keep the sum in range
                raise ValueError(f"since {item['since']!r} has no time zone or is out of range")
            out.append(OwnedTaint(taint=Taint(key=_text(item["key"]), value=_text(item.get("value", "")),
                                              effect=Effect(item["effect"])),
                                  rules=tuple(rules), cause=_text(item.get("cause", "")), since=since))
    except (ValueError, TypeError, KeyError, AttributeError) as e:
        return [], f"{OWNED_TAINTS_ANNOTATION}: unreadable ({type(e).__name__}: {e}); owning nothing"
    return out, None


def _text(v: object) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a string, got {v!r}")
    return v


def render_owned(owned: Sequence[OwnedTaint]) -> str:
    items = sorted(owned, key=lambda o: o.taint.identity())
    return json.dumps([{"key": o.taint.key, "value": o.taint.value, "effect": str(o.taint.effect),
                        "rules": list(o.rules), "cause": o.cause,
                        "since": o.since.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")} for o in items],
                      sort_keys=True, separators=(",", ":"))


def strategy_owner(strategy: str) -> str:
    """The "rule" a strategy's own taint is recorded with in the annotation."""
    return STRATEGY_PREFIX + strategy


def by_strategy(rules: Sequence[str]) -> bool:
    """Are these the rules of a strategy's taint (recorded with "strategy:<name>" as its rule), not a rule's?"""
    return bool(rules) and all(r.startswith(STRATEGY_PREFIX) for r in rules)


def strategy_owned(o: OwnedTaint) -> bool:
    """A taint a strategy put there (not a rule)."""
    return by_strategy(o.rules)


def carrying(snapshot: Snapshot, taint: Taint, owner: str) -> dict[str, float]:
    """Nodes carrying `taint` that nodemedic put there for `owner` -> seconds since it was added."""
    out: dict[str, float] = {}
    for name, node in snapshot.nodes.items():
        present = {t.identity() for t in node.taints}
        for o in parse_owned(node.annotations.get(OWNED_TAINTS_ANNOTATION))[0]:
            if o.taint.identity() == taint.identity() and o.taint.identity() in present and owner in o.rules:
                out[name] = (snapshot.now - o.since).total_seconds()
    return out
