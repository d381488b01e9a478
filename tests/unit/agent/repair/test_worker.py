"""The repair worker, wired as in the agent: an ask is acted on at most once, only after the API server accepted its
`Acting` answer, is refused (nothing run) when stale, malformed or not configured, and after a restart of the agent
(or the reboot) is judged, never repeated. Nothing sleeps a fixed time; each wait has a deadline."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from agent.repair.commands import CommandResult
from agent.repair.config import HOST_PREFIX
from tests.unit.agent.repair.fake_node import (
    CONFIG,
    NOW,
    Agent,
    FakeApi,
    FakeRunner,
    ask,
    eventually,
    host_root,
    set_boot_id,
)

Journal = list[tuple[str, ...]]


def run(body: Callable[[], Awaitable[None]], timeout: float = 30.0) -> None:
    async def main() -> None:
        await asyncio.wait_for(body(), timeout)
    asyncio.run(main())


def script(path: Path, text: str) -> Path:
    path.write_text("#!/bin/sh\n" + text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_restart_runs_the_default_command_line_in_the_hosts_namespaces_after_acting_and_answers_done(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fakes of nsenter and systemctl on PATH: nsenter records its arguments and runs what follows `--`.
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    script(bin_dir / "nsenter", f'echo "nsenter $*" >> {calls}\nwhile [ "$1" != -- ]; do shift; done\nshift\n'
                                'exec "$@"\n')
    script(bin_dir / "systemctl", f'echo "systemctl $*" >> {calls}\n')
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    journal: Journal = []
    api = FakeApi(journal)
    agent = Agent(api, host_root(tmp_path), config=dataclasses.replace(CONFIG, host_command_prefix=HOST_PREFIX))

    async def body() -> None:
        agent.start()
        agent.asks.set(ask("r-1"))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Done", what="Done on the Node")
        await agent.stop()

    run(body)
    assert calls.read_text().splitlines() == ["nsenter --target 1 --mount --uts --ipc --net --pid -- systemctl "
                                              "restart kubelet", "systemctl restart kubelet"]
    assert [e[:2] for e in journal] == [("written", "Acting"), ("written", "Done")]
    assert journal[0][2] == "request r-1: restarting kubelet"
    assert journal[1][2].startswith("request r-1: restarted kubelet in ")
    assert api.answer()["status"] == "False"  # type: ignore[index]
    assert [(r, t) for r, t, _ in api.events] == [("NodemedicRepairRestart", "Normal")] * 2
    assert agent.repairs("restart", "done") == 1


def test_the_command_runs_only_once_the_api_server_accepted_acting(tmp_path: Path) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        await eventually(lambda: agent.reporter.written_version >= 0, what="the first status write")
        api.failing = True
        agent.asks.set(ask("r-1", service="containerd"))
        await eventually(lambda: api.failed >= 2, what="two refused writes of Acting")
        assert agent.answer() == ("True", "Acting", "request r-1: restarting containerd")
        assert runner.ran == [], "nothing runs while the Node does not say Acting"
        api.failing = False
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Done", what="Done on the Node")
        await agent.stop()

    run(body)
    assert journal == [("written", "Acting", "request r-1: restarting containerd"),
                       ("ran", "systemctl", "restart", "containerd"),
                       ("written", "Done", "request r-1: restarted containerd in 1.2s")]


def test_acting_not_accepted_before_the_ask_is_too_old_runs_nothing_and_answers_failed(tmp_path: Path) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal)
    config = dataclasses.replace(CONFIG, max_request_age=dt.timedelta(minutes=1))
    agent = Agent(api, host_root(tmp_path), run=runner, config=config)

    async def body() -> None:
        agent.start()
        await eventually(lambda: agent.reporter.written_version >= 0, what="the first status write")
        api.failing = True
        agent.asks.set(ask("r-1", requested=NOW - dt.timedelta(seconds=59.8)))  # 0.2 s left to act on it
        await eventually(lambda: agent.answer() and agent.answer()[1] == "Failed", what="Failed in the book")  # type: ignore[index]
        api.failing = False
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Failed", what="Failed on the Node")
        await agent.stop()

    run(body)
    assert runner.ran == []
    assert journal == [("written", "Failed", "request r-1: the API server did not accept the Acting answer before "
                                             "the ask was 1m0s old; nothing was run")]
    assert agent.repairs("restart", "failed") == 1


@pytest.mark.parametrize(
    ("config", "text", "boot_id", "message", "action"),
    [
        (CONFIG, ask("r-1", requested=NOW - dt.timedelta(minutes=11)), "boot-a",
         "request r-1: refused: the ask is 11m0s old, older than repair.maxRequestAge (10m0s); nothing was run",
         "restart"),
        (CONFIG, ask("r-1", requested=NOW + dt.timedelta(minutes=12)), "boot-a",
         "request r-1: refused: the ask was made at 2026-03-01T12:12:00Z, 12m0s ahead of this node's clock (more "
         "than repair.maxRequestAge, 10m0s); nothing was run", "restart"),
        (CONFIG, ask("r-1", service="docker"), "boot-a",
         "request r-1: refused: the ask is malformed (nodemedic.io/repair: service: expected one of kubelet, "
         "containerd, crio); nothing was run", "restart"),
        (CONFIG, '{"id": "r-1", "action": "reboot", "requested": "yesterday"}', "boot-a",
         "request r-1: refused: the ask is malformed (nodemedic.io/repair: requested: expected an RFC 3339 time such "
         "as 2026-01-02T03:04:05Z); nothing was run", "reboot"),
        (CONFIG, '{"id": "r-1", "action": "upgrade"}', "boot-a",
         "request r-1: refused: the ask is malformed (nodemedic.io/repair: action: expected one of restart, reboot, "
         "replace, person); nothing was run", "unknown"),
        (dataclasses.replace(CONFIG, restart={"kubelet": ("x",), "containerd": None, "crio": None}),
         ask("r-1", service="crio"), "boot-a",
         "request r-1: refused: no command is configured to restart crio (repair.commands.restart.crio); nothing was "
         "run", "restart"),
        (dataclasses.replace(CONFIG, reboot=None), ask("r-1", "reboot"), "boot-a",
         "request r-1: refused: no reboot command is configured (repair.commands.reboot); nothing was run", "reboot"),
        (CONFIG, ask("r-1", "reboot"), "not a boot id",
         "request r-1: refused: cannot read the boot id (/proc/sys/kernel/random/boot_id: not a boot id: 'not a boot "
         "id'), so a reboot could not be proven; nothing was run", "reboot"),
    ],
    ids=["stale", "from-the-future", "unknown-service", "bad-time", "unknown-action", "no-command-for-service",
         "no-reboot-command", "unreadable-boot-id"],
)
def test_an_ask_that_cannot_be_carried_out_is_refused_and_nothing_runs(
        tmp_path: Path, config: object, text: str, boot_id: str, message: str, action: str) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path, boot_id), run=runner, config=config)  # type: ignore[arg-type]

    async def body() -> None:
        agent.start()
        agent.asks.set(text)
        await eventually(lambda: api.answer() is not None and api.events, what="the answer on the Node and its Event")
        await agent.stop()

    run(body)
    assert runner.ran == []
    assert journal == [("written", "Refused", message)]
    assert api.answer()["status"] == "False"  # type: ignore[index]
    assert api.events == [("NodemedicRepairRefused", "Warning", message)]
    assert agent.repairs(action, "refused") == 1


def test_an_ask_without_a_readable_id_is_logged_and_counted_and_the_node_keeps_its_answer(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    done = {"type": "NodemedicRepair", "status": "False", "reason": "Done", "message": "request r-0: restarted kubelet "
            "in 1.0s", "lastTransitionTime": "2026-03-01T11:00:00Z"}
    journal: Journal = []
    api = FakeApi(journal, [done])
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        with caplog.at_level(logging.WARNING, logger="test.repair"):
            for text in ('{"id": "Not An Id!", "action": "reboot"}', "[" * 5000, "not json", "null"):
                await agent.considered(agent.asks.set(text))
        await agent.stop()

    run(body)
    assert runner.ran == [] and journal == [] and api.events == []
    assert agent.answer() == ("False", "Done", "request r-0: restarted kubelet in 1.0s")
    assert agent.repairs("unknown", "refused") == 4
    assert [r.getMessage() for r in caplog.records] == ["repair: an ask without a readable id ignored"] * 4


def test_an_ask_already_answered_is_not_taken_again_nor_one_for_someone_else(tmp_path: Path) -> None:
    done = {"type": "NodemedicRepair", "status": "False", "reason": "Done", "message": "request r-1: restarted kubelet "
            "in 1.0s", "lastTransitionTime": "2026-03-01T11:00:00Z"}
    journal: Journal = []
    api = FakeApi(journal, [done])
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        await agent.considered(agent.asks.set(ask("r-1")))  # the ask the Node's answer names
        await agent.considered(agent.asks.set(ask("r-2", "replace")))  # the node autoscaler's step
        await agent.considered(agent.asks.set(ask("r-3", "person")))
        await agent.considered(agent.asks.set(None))  # the ladder ended
        await agent.considered(agent.asks.set(ask("r-1")))
        await agent.stop()

    run(body)
    assert runner.ran == [] and api.events == []
    assert agent.answer() == ("False", "Done", "request r-1: restarted kubelet in 1.0s")
    assert agent.registry.get_sample_value("nodemedic_agent_repairs_total", {"action": "restart",
                                                                            "result": "done"}) is None


def test_an_ask_is_taken_once_even_when_it_comes_back(tmp_path: Path) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        await agent.considered(agent.asks.set(ask("r-1")))
        await agent.considered(agent.asks.set(ask("r-1")))  # rewritten (a relist, another key of the ladder)
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Done", what="Done on the Node")
        await agent.stop()

    run(body)
    assert runner.ran == [("systemctl", "restart", "kubelet")]


def test_a_failed_restart_says_the_exit_code_and_the_last_line_of_stderr(tmp_path: Path) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal, CommandResult(5, False, 0.1, "Failed to restart kubelet.service: Access denied"))
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        agent.asks.set(ask("r-1"))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Failed", what="Failed on the Node")
        await agent.stop()

    run(body)
    assert api.answer()["message"] == ("request r-1: restarting kubelet failed: exit code 5: Failed to restart "  # type: ignore[index]
                                       "kubelet.service: Access denied")
    assert api.events[-1][:2] == ("NodemedicRepairRestart", "Warning")
    assert agent.repairs("restart", "failed") == 1


def test_a_restart_that_hangs_is_killed_at_the_timeout_and_answered_failed(tmp_path: Path) -> None:
    hang = script(tmp_path / "restart.sh", "sleep 300\n")
    config = dataclasses.replace(CONFIG, restart={"kubelet": (str(hang),)}, command_timeout=dt.timedelta(seconds=0.5))
    api = FakeApi([])
    agent = Agent(api, host_root(tmp_path), config=config)

    async def body() -> None:
        agent.start()
        agent.asks.set(ask("r-1"))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Failed", what="Failed on the Node")
        await agent.stop()

    run(body)
    assert api.answer()["message"] == ("request r-1: restarting kubelet failed: timed out after 0.5s; its process "  # type: ignore[index]
                                       "group was killed")


def test_a_reboot_is_proven_by_the_boot_id_after_the_agent_comes_back_and_never_repeated(tmp_path: Path) -> None:
    """The whole cycle: Acting with the boot id, the command, the agent gone with the node; the next agent reads the
    new boot id and answers Done, though the annotation still holds the same ask."""
    root = host_root(tmp_path, "boot-a")
    journal: Journal = []
    api = FakeApi(journal)

    async def reboot(argv: object, *, timeout: float) -> CommandResult:
        journal.append(("ran", "reboot"))
        return CommandResult(0, False, 0.1, "")

    first = Agent(api, root, run=reboot)

    async def body() -> None:
        first.start()
        first.asks.set(ask("r-9", "reboot"))
        await eventually(lambda: ("ran", "reboot") in journal, what="the reboot command")
        await first.stop()  # the node goes down
        set_boot_id(root, "boot-b")
        second = Agent(api, root, run=FakeRunner(journal))
        second.start()
        await second.considered(second.asks.set(ask("r-9", "reboot")))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Done", what="Done on the Node")
        assert second.repairs("reboot", "done") == 1
        await second.stop()

    run(body)
    assert journal == [("written", "Acting", "request r-9: rebooting (boot id boot-a)"), ("ran", "reboot"),
                       ("written", "Done", "request r-9: rebooted: boot id boot-a -> boot-b")]
    assert [r for r, _, _ in api.events] == ["NodemedicRepairReboot"] * 2


@pytest.mark.parametrize(
    ("acting", "boot_id", "reason", "message"),
    [
        ("request r-9: rebooting (boot id boot-a)", "boot-a", "Failed",
         "request r-9: the reboot command ran but the node did not reboot (boot id unchanged)"),
        ("request r-9: rebooting (boot id boot-a)", "boot-b", "Done",
         "request r-9: rebooted: boot id boot-a -> boot-b"),
        ("request r-9: rebooting (boot id boot-a)", "", "Failed",
         "request r-9: cannot tell whether the node rebooted: /proc/sys/kernel/random/boot_id: not a boot id: ''"),
        ("request r-9: restarting kubelet", "boot-a", "Failed",
         "request r-9: the agent restarted while restarting kubelet; not repeated"),
        ("request r-9: something an older agent wrote", "boot-a", "Failed",
         "request r-9: the agent restarted while acting on it; not repeated"),
    ],
    ids=["reboot-boot-id-unchanged", "reboot-boot-id-changed", "reboot-boot-id-unreadable", "restart-interrupted",
         "unknown-words"],
)
def test_an_acting_answer_found_at_start_is_judged_and_its_ask_not_repeated(
        tmp_path: Path, acting: str, boot_id: str, reason: str, message: str) -> None:
    seeded = {"type": "NodemedicRepair", "status": "True", "reason": "Acting", "message": acting,
              "lastTransitionTime": "2026-03-01T11:59:00Z"}
    journal: Journal = []
    api = FakeApi(journal, [seeded])
    runner = FakeRunner(journal)
    agent = Agent(api, host_root(tmp_path, boot_id), run=runner)

    async def body() -> None:
        agent.start()
        await agent.considered(agent.asks.set(ask("r-9", "reboot" if "reboot" in acting else "restart")))
        await eventually(lambda: api.answer() and api.answer()["reason"] == reason, what=f"{reason} on the Node")
        await agent.stop()

    run(body)
    assert runner.ran == []
    assert journal == [("written", reason, message)]
    assert api.answer()["status"] == "False"  # type: ignore[index]


def test_a_reboot_command_that_fails_is_answered_failed(tmp_path: Path) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    runner = FakeRunner(journal, CommandResult(1, False, 0.1, "Failed to reboot: Interactive authentication required."))
    agent = Agent(api, host_root(tmp_path), run=runner)

    async def body() -> None:
        agent.start()
        agent.asks.set(ask("r-2", "reboot"))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Failed", what="Failed on the Node")
        await agent.stop()

    run(body)
    assert runner.ran == [("systemctl", "reboot")]
    assert [e[1] for e in journal if e[0] == "written"] == ["Acting", "Failed"]
    assert api.answer()["message"] == ("request r-2: the reboot command failed: exit code 1: Failed to reboot: "  # type: ignore[index]
                                       "Interactive authentication required.")
    assert agent.repairs("reboot", "failed") == 1


def test_a_bug_while_answering_is_logged_and_the_worker_takes_the_next_ask(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    journal: Journal = []
    api = FakeApi(journal)
    calls: list[str] = []

    async def broken(argv: tuple[str, ...], *, timeout: float) -> CommandResult:
        calls.append(argv[-1])
        if argv[-1] == "kubelet":
            raise RuntimeError("a bug")
        return CommandResult(0, False, 0.5, "")

    agent = Agent(api, host_root(tmp_path), run=broken)

    async def body() -> None:
        agent.start()
        with caplog.at_level(logging.ERROR, logger="test.repair"):
            await agent.considered(agent.asks.set(ask("r-1")))
        agent.asks.set(ask("r-2", service="containerd"))
        await eventually(lambda: api.answer() and api.answer()["reason"] == "Done", what="Done for r-2")
        await agent.stop()

    run(body)
    assert calls == ["kubelet", "containerd"]
    assert "repair: answering an ask failed" in [r.getMessage() for r in caplog.records]
    assert api.answer()["message"] == "request r-2: restarted containerd in 0.5s"  # type: ignore[index]
