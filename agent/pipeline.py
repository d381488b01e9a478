"""The agent's one step from what the checks saw to what the Node shows.

Data flows one way: a check reads the host; the supervisor puts each observation in the inbox; this step folds it
into the condition book (the conditions' state), wakes the reporter when the book changed and hands it each
Event (an Xid told by both the kernel log and NVML once: `reporting/xid_pairs.py`); the reporter alone writes to
the API server. The condition metrics are kept on the way. The repair worker's answers take the same step, not
through the inbox but at once (`answer`), and it waits for the API server to accept them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from agent.model import ConditionReport, EventReport, Observation, Status
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook
from agent.reporting.inbox import Inbox
from agent.reporting.reporter import Reporter
from agent.reporting.xid_pairs import XidPairs
from nodemedic_common.tasks import cancelled, keep


@dataclass(kw_only=True)
class Pipeline:
    inbox: Inbox
    book: ConditionBook
    reporter: Reporter
    metrics: ConditionMetrics
    log: logging.Logger
    # Events on their way to the API server: each is sent in a task of its own, so a slow POST never holds up the
    # conditions; the ones still running at shutdown are cancelled by `close`.
    sending: set[asyncio.Task[None]] = field(default_factory=set, init=False)
    xids: XidPairs = field(default_factory=XidPairs)

    async def run(self) -> None:
        """Fold the observations in as they arrive, once the Node's current conditions are known: before that, a
        restart would stamp a fresh lastTransitionTime on a condition that has been True all along."""
        await self.reporter.seeded.wait()
        self.metrics.show(self.book)  # the conditions adopted from the Node, before any observation changes them
        while True:
            for obs in await self.inbox.take():
                self.fold(obs)

    def fold(self, obs: Observation) -> None:
        """One observation into the book, the reporter and the metrics."""
        was_true = still_true(self.book, obs)
        if self.book.apply(obs):
            self.reporter.notify_changed()
            self.metrics.show(self.book)
        self.metrics.count(obs, was_true)
        for event in obs.events:
            if self.xids.first_telling(event, source=obs.check, at=obs.at):
                self._send(event, source=obs.check)

    async def seeded(self, condition_type: str) -> ConditionReport | None:
        """The condition of `condition_type` as the Node carried it when the agent started (None: it did not), once
        the reporter has read the Node. Called at start-up, before anything of that type is folded in."""
        await self.reporter.seeded.wait()
        c = self.book.current.get(condition_type)
        return None if c is None else ConditionReport(c.type, c.status, c.reason, c.message)

    async def answer(self, obs: Observation) -> None:
        """Fold `obs` in now, then return once the API server has accepted a status write that carries it (waiting
        as long as the writes fail: the caller bounds the wait)."""
        await self.reporter.seeded.wait()
        self.fold(obs)
        await self.reporter.accepted(self.book.version)

    def _send(self, event: EventReport, *, source: str) -> None:
        keep(self.sending, self.reporter.event(event, source=source))

    async def close(self) -> None:
        """Cancel the Events still being sent; called at shutdown, once `run` has stopped."""
        for task in list(self.sending):
            await cancelled(task, self.log)


def still_true(book: ConditionBook, obs: Observation) -> set[str]:
    """The types `obs` reports True that the book already holds True: not a new problem to count."""
    return {r.type for r in obs.conditions if r.status == Status.TRUE
            and (c := book.current.get(r.type)) is not None and c.status == Status.TRUE}
