"""What the checks observed, waiting to be folded into the condition book.

The book waits for the Node's current conditions before it takes anything in (a restart must not stamp a fresh
lastTransitionTime on a condition True all along), so while the API server is away at start-up observations pile
up here, for as long as it stays away. Nothing is lost silently:

- conditions are coalesced, never dropped: per check, its latest failure (which makes all its types Unknown) and
  the latest report of each type after it are exactly what folding every observation in order would leave;
- Events are kept in order up to `max_events`; each one dropped to make room (the oldest) is counted in
  `nodemedic_agent_events_suppressed_total{reason}` like any other Event not sent, and logged: one line at the
  first drop, one with the counts by reason when the book takes the rest.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import Counter as Tally
from collections import deque
from dataclasses import dataclass, field

from prometheus_client import Counter

from agent.model import ConditionReport, EventReport, Observation


@dataclass
class _Pending:
    failure: Observation | None = None  # the check's latest failed observation, if it failed since the last take
    # type -> its latest report after that failure, and when it was observed (a transition is stamped with it)
    conditions: dict[str, tuple[ConditionReport, dt.datetime]] = field(default_factory=dict)


class Inbox:
    def __init__(self, *, suppressed: Counter, log: logging.Logger, max_events: int = 1000) -> None:
        self.suppressed, self.log, self.max_events = suppressed, log, max_events
        self._pending: dict[str, _Pending] = {}
        self._events: deque[tuple[str, dt.datetime, EventReport]] = deque()
        self._dropped: Tally[str] = Tally()
        self._ready = asyncio.Event()

    def put(self, obs: Observation) -> None:
        pending = self._pending.setdefault(obs.check, _Pending())
        if obs.error:
            pending.failure, pending.conditions = obs, {}
        else:
            pending.conditions.update((c.type, (c, obs.at)) for c in obs.conditions)
        for event in obs.events:
            if len(self._events) >= self.max_events:
                self._drop_oldest_event()
            self._events.append((obs.check, obs.at, event))
        self._ready.set()

    def _drop_oldest_event(self) -> None:
        check, _, event = self._events.popleft()
        self.suppressed.labels(event.reason).inc()
        if not self._dropped:
            self.log.warning("events dropped while waiting to be sent (oldest first); conditions are kept",
                             extra={"check": check, "reason": event.reason, "max_events": self.max_events})
        self._dropped[event.reason] += 1

    async def take(self) -> list[Observation]:
        """Everything waiting, in an order that leaves the book as folding each observation would."""
        await self._ready.wait()
        self._ready.clear()
        out: list[Observation] = []
        for check, pending in self._pending.items():
            if pending.failure is not None:
                out.append(pending.failure)
            out += [Observation(check, at, conditions=(report,)) for report, at in pending.conditions.values()]
        out += [Observation(check, at, events=(event,)) for check, at, event in self._events]
        self._pending.clear()
        self._events.clear()
        if self._dropped:
            self.log.warning("events dropped while waiting to be sent",
                             extra={"dropped": dict(self._dropped), "total": sum(self._dropped.values())})
            self._dropped.clear()
        return out
