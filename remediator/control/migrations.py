"""Migrations (model/migration.py) as the leader runs them: the engines' proposals written for a person, and each open
migration advanced (planning/migration_steps.py decides; this writes its status, announces it and makes its moves).

Each cycle, before the plan, the remediator's namespace's Migrations are read: the open ones tell the planner which
engines wait (PlannerMemory.open_migrations: one migration per engine at a time). After the plan, a proposal becomes a
Migration, and every open one moves on as far as it can: a move is a landed eviction (control/landings.py: the
replacement pinned to the step's node), and the next transition waits for its outcome. Nothing is written in dry-run
or by a replica that does not lead; no forward step starts outside the maintenance window (an undo does: it repairs).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import secrets
import time
from collections.abc import Callable

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.tasks import keep
from remediator.actions.eviction_requests import Outcome, evict
from remediator.actions.migration_writer import delete, listed, propose, write_status
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.control.landings import LandingOutcome, Landings
from remediator.model.migration import (
    FINISHED,
    MIGRATION_PREFIX,
    Gain,
    Migration,
    Phase,
    Step,
    StepState,
    StepStatus,
    status_body,
)
from remediator.model.plan import PlannedEviction, Proposal
from remediator.model.records import HOSTNAME_LABEL
from remediator.planning.memory import PlannerMemory
from remediator.planning.migration_steps import ClusterView, Moment, Move, MoveOutcome, Transition, advance
from remediator.policy.model import Policy
from remediator.state.caches import ClusterCache
from remediator.strategies import lookup

TRANSITIONS_PER_CYCLE = 8  # a migration moves on this far in one cycle at most (each move waits for its outcome)
# Seconds between two lists of the Migrations (cycles come up to five a second under churn): a person's decision is
# seen within this; what the leader itself writes it keeps as written meanwhile.
READ_EVERY = 5.0
# phase -> (Event reason, alert kind, Event type) of the transition into it
_ANNOUNCED = {Phase.RUNNING: ("NodemedicMigrationRunning", AlertKind.MIGRATION_STEP, "Normal"),
              Phase.SUCCEEDED: ("NodemedicMigrationSucceeded", AlertKind.MIGRATION_ENDED, "Normal"),
              Phase.REVERTING: ("NodemedicMigrationReverting", AlertKind.MIGRATION_FAILED, "Warning"),
              Phase.REVERTED: ("NodemedicMigrationReverted", AlertKind.MIGRATION_ENDED, "Warning"),
              Phase.FAILED: ("NodemedicMigrationFailed", AlertKind.MIGRATION_FAILED, "Warning"),
              Phase.REFUSED: ("NodemedicMigrationRefused", AlertKind.MIGRATION_ENDED, "Warning"),
              Phase.REJECTED: ("NodemedicMigrationRejected", AlertKind.MIGRATION_ENDED, "Normal"),
              Phase.EXPIRED: ("NodemedicMigrationExpired", AlertKind.MIGRATION_ENDED, "Normal")}


class Migrations:
    def __init__(self, *, kube: Kube, cache: ClusterCache, landings: Landings, alerts: Alerts, log: logging.Logger,
                 namespace: str, memory: PlannerMemory, count: Callable[[str, str], None],
                 may_act: Callable[[], bool], monotonic: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.cache, self.landings, self.alerts, self.log = kube, cache, landings, alerts, log
        self.namespace, self.memory, self.count, self.may_act = namespace, memory, count, may_act
        self.monotonic = monotonic
        self.read_at: float | None = None
        self.found: dict[str, Migration] = {}  # name -> as last read, or as this leader last wrote it
        self.unreadable: set[str] = set()  # problems logged once each
        self.moving: set[tuple[str, int, bool]] = set()  # (migration, step, undo) whose move is under way
        self.outcomes: dict[tuple[str, int, bool], MoveOutcome] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def read(self, policy: Policy) -> None:
        """Before the plan: the Migrations as they are, and which engines have one open (at most every READ_EVERY).
        After the first list, only while an engine's approval is required or a migration is open: a policy without
        either costs no request."""
        waiting = {s.name for s in policy.strategies if lookup(s.name).approval(s.args) == "required"}
        if self.read_at is not None and (self.monotonic() - self.read_at < READ_EVERY
                                         or not (self.memory.open_migrations or waiting)):
            return
        self.read_at = self.monotonic()
        try:
            found, problems = await listed(self.kube, self.namespace)
        except ApiError as e:
            if str(e) not in self.unreadable:  # once per distinct error, not every cycle
                self.log.warning("migrations not read; no engine proposes nor runs one until they are",
                                 extra={"error": str(e)})
            self.unreadable = {str(e)}
            self.found = {}
            self.memory.open_migrations = dict.fromkeys(waiting, "(unread)")  # none proposes what it cannot write
            return
        for problem in sorted(set(problems) - self.unreadable):
            self.log.warning("migration not read: left as it is", extra={"error": problem})
        self.unreadable = set(problems)
        self.found = {m.name: m for m in found}
        self.memory.open_migrations = {m.engine: m.name for m in found if m.phase not in FINISHED}

    async def apply(self, plan_proposals: list[Proposal], policy: Policy, now: dt.datetime, *,
                    window_open: bool) -> None:
        """After the plan, while leading and not in dry-run."""
        for p in plan_proposals:
            if p.engine not in self.memory.open_migrations:
                await self._propose(p, policy, now)
        for m in list(self.found.values()):
            if m.phase in FINISHED:
                if now - m.proposed >= policy.migrations.keep_finished:
                    await self._forget(m)
                continue
            await self._advance(m, policy, now, window_open=window_open)

    async def _propose(self, p: Proposal, policy: Policy, now: dt.datetime) -> None:
        steps = []
        for e in p.moves:
            owner, node = e.pod.controller, self.cache.nodes.get(e.destination or "")
            if owner is None or node is None or not node.labels.get(HOSTNAME_LABEL):
                continue  # not a move a landing can pin: the next plan decides again
            steps.append(Step(e.pod.key, e.pod.uid, f"{owner.kind}/{owner.name}", owner.uid, e.pod.node_name,
                              node.name, node.labels[HOSTNAME_LABEL]))
        if not steps:
            return
        m = Migration(name=f"{MIGRATION_PREFIX}{secrets.token_hex(4)}", namespace=self.namespace, engine=p.engine,
                      proposed=now, expires=now + policy.migrations.expire_after, steps=tuple(steps),
                      gain=p.gain or Gain("moves", len(steps), len(steps)),
                      disrupts=tuple(sorted({s.owner for s in steps})))
        try:
            await propose(self.kube, m, now)
        except ApiError as e:
            self.log.warning("migration not proposed", extra={"engine": p.engine, "error": str(e)})
            return
        self.memory.open_migrations[p.engine] = m.name
        self.found[m.name] = dataclasses.replace(m, phase=Phase.PROPOSED, step_status=tuple(
            StepStatus(i, StepState.PENDING) for i in range(len(m.steps))))
        self.count(p.engine, "proposed")
        await self._announce(m, "NodemedicMigrationProposed", AlertKind.MIGRATION_PROPOSED, "Normal",
                             f"{p.engine} proposes {len(steps)} move(s): {m.gain.measure} {m.gain.before:g} -> "
                             f"{m.gain.after:g}; kubectl nodemedic approve {m.name} (or reject) by "
                             f"{m.expires:%Y-%m-%dT%H:%M:%SZ}")

    async def _advance(self, m: Migration, policy: Policy, now: dt.datetime, *, window_open: bool) -> None:
        view = ClusterView(self.cache.pods, self.cache.nodes, list(self.cache.pdbs.values()))
        for _ in range(TRANSITIONS_PER_CYCLE):
            key = _current(m)
            moment = Moment(view=view, now=now, in_flight=key in self.moving, outcome=self.outcomes.get(key),
                            step_deadline=policy.eviction.landing_deadline,
                            keep_completed=policy.migrations.on_failure == "keep")
            t = advance(m, moment)
            if t is None or (t.move is not None and not t.move.undo and not window_open):
                return  # waiting, or a forward step outside the maintenance window
            try:
                await write_status(self.kube, m, status_body(t.phase, t.steps, t.message, now))
            except ApiError as e:  # the next cycle decides again from what the object says
                self.log.warning("migration status not written", extra={"migration": m.name, "error": str(e)})
                return
            self.outcomes.pop(key, None)
            await self._transition(m, t)
            m = self.found[m.name] = dataclasses.replace(m, phase=t.phase, step_status=t.steps, message=t.message)
            if t.move is not None:
                self._start(m, t.move, policy, now)
                return

    async def _transition(self, m: Migration, t: Transition) -> None:
        self.log.info(t.message, extra={"migration": m.name, "engine": m.engine, "phase": str(t.phase)})
        if t.phase != m.phase and t.phase in _ANNOUNCED:
            reason, kind, type_ = _ANNOUNCED[t.phase]
            if t.phase in FINISHED:
                self.count(m.engine, str(t.phase).lower())
                if self.memory.open_migrations.get(m.engine) == m.name:
                    del self.memory.open_migrations[m.engine]  # the engine may propose again this very cycle
            await self._announce(m, reason, kind, type_, f"{m.engine} migration {m.name}: {t.message}")

    def _start(self, m: Migration, move: Move, policy: Policy, now: dt.datetime) -> None:
        key = (m.name, move.index, move.undo)
        self.moving.add(key)
        keep(self.tasks, self._move(m, move, policy, now))

    async def _move(self, m: Migration, move: Move, policy: Policy, now: dt.datetime) -> None:
        """Evict the step's pod with its replacement pinned to the step's node; the outcome waits for the next cycle."""
        key = (m.name, move.index, move.undo)
        what = f"migration {m.name} step {move.index + 1}" + (" undone" if move.undo else "")
        e = PlannedEviction(move.pod, m.engine, what, destination=move.target)
        try:
            self.outcomes[key] = await self._landed_move(e, policy, now)
        finally:
            self.moving.discard(key)
            self.cache.changed.set()

    async def _landed_move(self, e: PlannedEviction, policy: Policy, now: dt.datetime) -> MoveOutcome:
        landing = self.landings.plan(e, dataclasses.replace(policy.eviction, landing="planned"), now)
        if landing is None:
            return MoveOutcome(False, "", f"{e.destination}'s hostname label is not its own, or {e.pod.key} has no "
                                          "controller: the move cannot be pinned")
        if self.landings.waits(e):
            return MoveOutcome(False, "", f"another move of {landing.owner} is landing")
        self.landings.hold(landing)
        self.memory.record_eviction(e.pod, balance=True, now=now, destination=e.destination, pinned=True)
        before, after = self.landings.attempt_hooks(landing)
        result = await evict(self.kube, e, policy.eviction, may_act=self.may_act, log=self.log,
                             before_attempt=before, after_refusal=after)
        if result.outcome != Outcome.EVICTED:
            await self.landings.dropped(landing)
            self.memory.forget_eviction(e.pod.uid)
            return MoveOutcome(False, "", f"eviction {result.outcome}: {result.detail}")
        await self.alerts.pod(e.pod, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                              message=f"evicted from {e.pod.node_name} by {e.strategy}: {e.reason}, to {e.destination}",
                              details={"strategy": e.strategy, "attempts": str(result.attempts)})
        outcome, pod = await self.landings.settle(landing)
        landed = outcome == LandingOutcome.LANDED and pod is not None
        return MoveOutcome(landed, pod.key if pod is not None else "",
                           f"{outcome}: {pod.key if pod else 'no replacement'} "
                           f"{'bound to ' + pod.node_name if pod is not None and pod.node_name else 'not bound'}")

    async def _forget(self, m: Migration) -> None:
        try:
            await delete(self.kube, m)
        except ApiError as e:
            self.log.warning("finished migration not deleted", extra={"migration": m.name, "error": str(e)})
            return
        self.found.pop(m.name, None)

    async def _announce(self, m: Migration, reason: str, kind: AlertKind, type_: str, message: str) -> None:
        self.log.info(message, extra={"event": reason, "migration": m.name})
        await self.alerts.object(namespace=m.namespace, type_=type_, reason=reason, message=message, kind=kind,
                                 involved={"kind": "Migration", "apiVersion": "nodemedic.io/v1alpha1",
                                           "name": m.name, "namespace": m.namespace})


def _current(m: Migration) -> tuple[str, int, bool]:
    """The move the migration waits on, if any: its step Moving (or Undoing)."""
    for s in m.step_status:
        if s.state in (StepState.MOVING, StepState.UNDOING):
            return (m.name, s.index, s.state == StepState.UNDOING)
    return (m.name, -1, False)
