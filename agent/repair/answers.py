"""The words of the agent's answers: its `NodemedicRepair` condition, and an Event with the same message.

Every answer's message starts with "request <id>: " (the contract). The `Acting` ones are also read back by the
agent itself after a restart, the only memory it keeps of what it was doing: "restarting kubelet" or "rebooting
(boot id <id>)", the boot id from before the reboot command ran.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from agent.model import ConditionReport, EventReport, Observation, Severity, Status
from agent.repair.config import SOURCE
from nodemedic_common.repair_contract import ANSWER_CONDITION, AnswerReason, RepairAction, answer_message

EVENT_REASONS = {RepairAction.RESTART: "NodemedicRepairRestart", RepairAction.REBOOT: "NodemedicRepairReboot"}
REFUSED_EVENT = "NodemedicRepairRefused"
OTHER_EVENT = "NodemedicRepair"  # an answer about an ask whose action is not known (an unreadable Acting answer)
_ACTING = re.compile(r"request (?P<id>[^:]+): (?:restarting (?P<service>[a-z0-9]+)|rebooting \(boot id (?P<boot>"
                     r"[0-9A-Za-z-]+)\))")


@dataclass(frozen=True)
class Answer:
    request_id: str
    action: RepairAction | None  # None: an ask too malformed to say what it wanted
    reason: AnswerReason
    text: str  # what follows "request <id>: "

    @property
    def message(self) -> str:
        return answer_message(self.request_id, self.text)

    @property
    def result(self) -> str:
        """The metric's `result` label: done, failed, refused (acting is no result)."""
        return self.reason.lower()

    def observation(self, at: dt.datetime) -> Observation:
        """The condition and the Event that carry this answer to the Node."""
        status = Status.TRUE if self.reason == AnswerReason.ACTING else Status.FALSE
        bad = self.reason in (AnswerReason.FAILED, AnswerReason.REFUSED)
        event = (REFUSED_EVENT if self.reason == AnswerReason.REFUSED
                 else OTHER_EVENT if self.action is None else EVENT_REASONS[self.action])
        return Observation(SOURCE, at, conditions=(ConditionReport(ANSWER_CONDITION, status, str(self.reason),
                                                                   self.message),),
                           events=(EventReport(event, self.message, Severity.WARNING if bad else Severity.NORMAL),))


def refused(request_id: str, action: RepairAction | None, why: str) -> Answer:
    return Answer(request_id, action, AnswerReason.REFUSED, f"refused: {why}")


def restarting(request_id: str, service: str) -> Answer:
    return Answer(request_id, RepairAction.RESTART, AnswerReason.ACTING, f"restarting {service}")


def restarted(request_id: str, service: str, seconds: float) -> Answer:
    return Answer(request_id, RepairAction.RESTART, AnswerReason.DONE, f"restarted {service} in {seconds:.1f}s")


def restart_failed(request_id: str, service: str, how: str) -> Answer:
    return Answer(request_id, RepairAction.RESTART, AnswerReason.FAILED, f"restarting {service} failed: {how}")


def interrupted_restart(request_id: str, service: str) -> Answer:
    return Answer(request_id, RepairAction.RESTART, AnswerReason.FAILED,
                  f"the agent restarted while restarting {service}; not repeated")


def rebooting(request_id: str, boot_id: str) -> Answer:
    return Answer(request_id, RepairAction.REBOOT, AnswerReason.ACTING, f"rebooting (boot id {boot_id})")


def reboot_failed(request_id: str, how: str) -> Answer:
    return Answer(request_id, RepairAction.REBOOT, AnswerReason.FAILED, f"the reboot command failed: {how}")


def rebooted(request_id: str, before: str, after: str) -> Answer:
    return Answer(request_id, RepairAction.REBOOT, AnswerReason.DONE, f"rebooted: boot id {before} -> {after}")


def not_rebooted(request_id: str) -> Answer:
    return Answer(request_id, RepairAction.REBOOT, AnswerReason.FAILED,
                  "the reboot command ran but the node did not reboot (boot id unchanged)")


def reboot_unproven(request_id: str, why: str) -> Answer:
    return Answer(request_id, RepairAction.REBOOT, AnswerReason.FAILED,
                  f"cannot tell whether the node rebooted: {why}")


def interrupted(request_id: str) -> Answer:
    """An Acting answer whose words are not this agent's (hand-edited, or an older agent's): not repeated."""
    return Answer(request_id, None, AnswerReason.FAILED, "the agent restarted while acting on it; not repeated")


def not_accepted(request_id: str, action: RepairAction, limit: str) -> Answer:
    return Answer(request_id, action, AnswerReason.FAILED,
                  f"the API server did not accept the Acting answer before the ask was {limit} old; nothing was run")


@dataclass(frozen=True)
class WasActing:
    """What an `Acting` answer on the Node says the agent was doing."""

    request_id: str
    action: RepairAction
    service: str = ""  # a restart's
    boot_id: str = ""  # a reboot's, from before its command ran


def read_acting(message: str) -> WasActing | None:
    """The Acting answer in `message`, or None when it is not in this agent's words."""
    found = _ACTING.fullmatch(message)
    if found is None:
        return None
    if found["service"]:
        return WasActing(found["id"], RepairAction.RESTART, service=found["service"])
    return WasActing(found["id"], RepairAction.REBOOT, boot_id=found["boot"])
