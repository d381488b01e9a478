"""The answers' words: every message names its ask, the condition's status and the Event follow the reason, and
an Acting answer reads back as what the agent was doing."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.model import Severity, Status
from agent.repair import answers
from agent.repair.answers import WasActing, read_acting
from nodemedic_common.repair_contract import ANSWER_CONDITION, RepairAction, answered_id

AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("answer", "status", "event", "severity", "message"),
    [
        (answers.restarting("r-1", "kubelet"), Status.TRUE, "NodemedicRepairRestart", Severity.NORMAL,
         "request r-1: restarting kubelet"),
        (answers.restarted("r-1", "kubelet", 1.234), Status.FALSE, "NodemedicRepairRestart", Severity.NORMAL,
         "request r-1: restarted kubelet in 1.2s"),
        (answers.restart_failed("r-1", "crio", "exit code 5: Unit crio.service not found."), Status.FALSE,
         "NodemedicRepairRestart", Severity.WARNING,
         "request r-1: restarting crio failed: exit code 5: Unit crio.service not found."),
        (answers.rebooting("r-2", "aaa"), Status.TRUE, "NodemedicRepairReboot", Severity.NORMAL,
         "request r-2: rebooting (boot id aaa)"),
        (answers.rebooted("r-2", "aaa", "bbb"), Status.FALSE, "NodemedicRepairReboot", Severity.NORMAL,
         "request r-2: rebooted: boot id aaa -> bbb"),
        (answers.not_rebooted("r-2"), Status.FALSE, "NodemedicRepairReboot", Severity.WARNING,
         "request r-2: the reboot command ran but the node did not reboot (boot id unchanged)"),
        (answers.refused("r-3", RepairAction.RESTART, "too old"), Status.FALSE, "NodemedicRepairRefused",
         Severity.WARNING, "request r-3: refused: too old"),
        (answers.interrupted("r-4"), Status.FALSE, "NodemedicRepair", Severity.WARNING,
         "request r-4: the agent restarted while acting on it; not repeated"),
    ],
    ids=["restarting", "restarted", "restart-failed", "rebooting", "rebooted", "not-rebooted", "refused",
         "interrupted"],
)
def test_each_answer_is_a_condition_and_an_event_with_one_message(answer: answers.Answer, status: Status, event: str,
                                                                  severity: Severity, message: str) -> None:
    obs = answer.observation(AT)
    (condition,), (ev,) = obs.conditions, obs.events
    assert (obs.check, condition.type, condition.status, condition.reason) == ("repair", ANSWER_CONDITION, status,
                                                                               str(answer.reason))
    assert condition.message == ev.message == message and answered_id(message) == answer.request_id
    assert (ev.reason, ev.severity) == (event, severity)


def test_an_acting_answer_reads_back_as_what_the_agent_was_doing() -> None:
    assert read_acting(answers.restarting("r-1", "containerd").message) == WasActing(
        "r-1", RepairAction.RESTART, service="containerd")
    assert read_acting(answers.rebooting("r-2", "5f0e6a3c-2c47").message) == WasActing(
        "r-2", RepairAction.REBOOT, boot_id="5f0e6a3c-2c47")
    assert read_acting("request r-1: doing something") is None
    assert read_acting("restarting kubelet") is None
