"""The repair state machine: the remediator's ask in, the agent's answer out, and every ask acted on at most once.

Data flows as it does for a check: the asks come from the Node watch (`Asks`: only the annotation's text), the
answers go to the condition book and the reporter writes them (`Answers`, the pipeline step); nothing here talks
to the API server. The order that makes "at most once" hold across a restart of the agent (or the reboot):

1. At start, the answer the Node already carries (seeded into the book from the Node) names the last ask answered;
   that ask is never taken again. If it says `Acting`, the agent stopped while acting: a reboot is judged by the
   boot id (changed: Done, the same: Failed), a restart is not repeated (Failed).
2. An ask (`parse_request`) with a new id is refused, with nothing run, when it is malformed, older than
   `maxRequestAge`, or names what no command is configured for.
3. Otherwise `Acting` is written, and the command runs only once the API server has accepted that write (waiting
   at most until the ask would be too old): whatever happens next, the Node says what the agent set out to do.
4. A restart's exit code is its answer (Done / Failed). A reboot command that succeeds takes the agent down with
   the node; the answer comes from step 1 of the next agent. Until then this one takes no further ask.

The asks are taken one at a time, the latest one each time: an ask replaced while another is being carried out
is never seen, as the remediator replaces an ask only when it has given up on it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter

from agent.host import HostRoot
from agent.model import ConditionReport, Observation, Status
from agent.repair import answers
from agent.repair.answers import Answer
from agent.repair.boot_id import read_boot_id
from agent.repair.commands import CommandResult, run_command
from agent.repair.config import RepairConfig
from nodemedic_common.durations import format_duration, whole_seconds
from nodemedic_common.repair_contract import (
    ANSWER_CONDITION,
    AnswerReason,
    ContractError,
    RepairAction,
    RepairRequest,
    answered_id,
    format_time,
    parse_request,
)


class Asks(Protocol):
    """The `nodemedic.io/repair` annotation of this Node (agent/reporting/node_watch.py)."""

    async def wait_change(self, after: int) -> tuple[int, str | None]:
        """Once the annotation's generation is past `after`: the generation and the text (None: no annotation)."""
        ...


class Answers(Protocol):
    """The way to the Node (agent/pipeline.py)."""

    async def seeded(self, condition_type: str) -> ConditionReport | None:
        """The condition as the Node carried it when the agent started; None when it carried none."""
        ...

    async def answer(self, obs: Observation) -> None:
        """Fold `obs` into the book and return once the API server has accepted a status write that carries it."""
        ...


Runner = Callable[..., Awaitable[CommandResult]]  # (argv, *, timeout) -> how it ended: commands.run_command


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class RepairWorker:
    def __init__(self, config: RepairConfig, *, asks: Asks, answers: Answers, host: HostRoot,
                 registry: CollectorRegistry, log: logging.Logger, clock: Callable[[], dt.datetime] = _now,
                 run: Runner = run_command) -> None:
        self.config, self.asks, self.answers, self.host, self.log, self.clock = config, asks, answers, host, log, clock
        self.run_command = run
        self.answered: str | None = None  # the id of the last ask answered: never taken again
        self.repairs = Counter("nodemedic_agent_repairs_total",
                               "Repair asks answered, by action (restart, reboot, unknown) and result (done, failed, "
                               "refused)", ["action", "result"], registry=registry)

    async def run(self) -> None:
        seeded = await self.answers.seeded(ANSWER_CONDITION)
        if seeded is not None:
            self.answered = answered_id(seeded.message)
            if seeded.status == Status.TRUE and seeded.reason == AnswerReason.ACTING:
                await self._after_restart(seeded.message)
        generation = 0
        while True:
            generation, text = await self.asks.wait_change(generation)
            if text is None:
                continue
            try:
                await self.consider(text)
            except Exception:  # a bug here must not take the agent down; the ask is not taken again
                self.log.exception("repair: answering an ask failed", extra={"request": self.answered})

    async def consider(self, text: str) -> None:
        """Answer the ask in the annotation's `text`, unless it is not the agent's or was answered already."""
        try:
            request = parse_request(text)
        except ContractError as e:
            await self._malformed(text, str(e))
            return
        if request is None or request.id == self.answered:
            return
        self.answered = request.id  # from here on, whatever happens, this ask is not taken again
        why = self._refusal(request)
        if why:
            await self._finish(answers.refused(request.id, request.action, why))
        elif request.action == RepairAction.RESTART:
            await self._restart(request)
        else:
            await self._reboot(request)

    def _refusal(self, request: RepairRequest) -> str:
        limit = self.config.max_request_age
        age = self.clock() - request.requested
        if age > limit:
            return (f"the ask is {format_duration(whole_seconds(age))} old, older than repair.maxRequestAge "
                    f"({format_duration(limit)}); nothing was run")
        if -age > limit:
            return (f"the ask was made at {format_time(request.requested)}, {format_duration(whole_seconds(-age))} "
                    f"ahead of this node's clock (more than repair.maxRequestAge, {format_duration(limit)}); "
                    "nothing was run")
        if request.action == RepairAction.RESTART and self.config.restart_command(request.service) is None:
            return (f"no command is configured to restart {request.service} "
                    f"(repair.commands.restart.{request.service}); nothing was run")
        if request.action == RepairAction.REBOOT and self.config.reboot_command() is None:
            return "no reboot command is configured (repair.commands.reboot); nothing was run"
        return ""

    async def _restart(self, request: RepairRequest) -> None:
        argv = self.config.restart_command(request.service)
        assert argv is not None  # _refusal
        if not await self._acting(request, answers.restarting(request.id, request.service)):
            return
        timeout = self.config.command_timeout.total_seconds()
        result = await self.run_command(argv, timeout=timeout)
        await self._finish(answers.restarted(request.id, request.service, result.duration) if result.ok
                           else answers.restart_failed(request.id, request.service, result.failure(timeout)))

    async def _reboot(self, request: RepairRequest) -> None:
        argv = self.config.reboot_command()
        assert argv is not None  # _refusal
        try:
            before = read_boot_id(self.host, self.config.boot_id_path)
        except ValueError as e:
            await self._finish(answers.refused(request.id, request.action, f"cannot read the boot id ({e}), so a "
                                               "reboot could not be proven; nothing was run"))
            return
        if not await self._acting(request, answers.rebooting(request.id, before)):
            return
        timeout = self.config.command_timeout.total_seconds()
        result = await self.run_command(argv, timeout=timeout)
        if not result.ok:
            await self._finish(answers.reboot_failed(request.id, result.failure(timeout)))
            return
        self.log.warning("repair: the reboot command succeeded; waiting for the node to go down, taking no other ask",
                         extra={"request": request.id, "boot_id": before})
        await asyncio.get_running_loop().create_future()  # never set: the agent goes down with the node

    async def _acting(self, request: RepairRequest, acting: Answer) -> bool:
        """Write `acting`; True once the API server accepted it, False (and Failed) if it did not before the ask
        would be too old to act on."""
        self._log(acting)
        limit = self.config.max_request_age
        remaining = (limit - (self.clock() - request.requested)).total_seconds()
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                await self.answers.answer(acting.observation(self.clock()))
        except TimeoutError:
            await self._finish(answers.not_accepted(request.id, request.action, format_duration(limit)))
            return False
        return True

    async def _after_restart(self, message: str) -> None:
        """The agent stopped while acting on the ask its `message` names: judge it, never repeat it."""
        was = answers.read_acting(message)
        if was is None:
            if self.answered is None:
                self.log.warning("repair: the Node's answer says Acting but names no ask; left as it is",
                                 extra={"answer": message})
                return
            await self._finish(answers.interrupted(self.answered))
        elif was.action == RepairAction.RESTART:
            await self._finish(answers.interrupted_restart(was.request_id, was.service))
        else:
            try:
                after = read_boot_id(self.host, self.config.boot_id_path)
            except ValueError as e:
                await self._finish(answers.reboot_unproven(was.request_id, str(e)))
                return
            await self._finish(answers.rebooted(was.request_id, was.boot_id, after) if after != was.boot_id
                               else answers.not_rebooted(was.request_id))

    async def _malformed(self, text: str, error: str) -> None:
        request_id, action = _readable(text)
        if request_id is None:
            # No id to answer: the remediator could not tell which ask an answer is about. Told here only.
            self.repairs.labels("unknown", "refused").inc()
            self.log.warning("repair: an ask without a readable id ignored", extra={"error": error})
            return
        if request_id == self.answered:
            return
        self.answered = request_id
        await self._finish(answers.refused(request_id, action, f"the ask is malformed ({error}); nothing was run"))

    async def _finish(self, answer: Answer) -> None:
        self._log(answer)
        self.repairs.labels(answer.action or "unknown", answer.result).inc()
        await self.answers.answer(answer.observation(self.clock()))

    def _log(self, answer: Answer) -> None:
        level = logging.WARNING if answer.reason in (AnswerReason.FAILED, AnswerReason.REFUSED) else logging.INFO
        self.log.log(level, "repair: answered", extra={"request": answer.request_id, "action": answer.action,
                                                        "reason": str(answer.reason), "answer": answer.message})


def _readable(text: str) -> tuple[str | None, RepairAction | None]:
    """The id (when it is a valid one) and the action of a malformed ask, as far as they can be read."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        return None, None
    if not isinstance(raw, dict):
        return None, None
    id_ = raw.get("id")
    request_id = id_ if isinstance(id_, str) and answered_id(f"request {id_}:") == id_ else None
    action = raw.get("action")
    known = action if isinstance(action, str) and action in set(RepairAction) else None
    return request_id, RepairAction(known) if known else None
