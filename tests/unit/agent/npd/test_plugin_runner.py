"""The plugin runner against real misbehaving plugins: verdicts, time bounds, and no process left behind."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from agent.model import Status
from agent.npd.plugin_runner import TERM_GRACE, WORST_CASE_OVERHEAD, PluginResult, run_plugin
from tests.waiting import wait_until

PLUGINS = Path(__file__).resolve().parents[3] / "testdata" / "agent" / "plugins"
SLACK = 3.0  # generous allowance for a loaded CI machine on top of what the runner promises


def run(name: str, *args: str, timeout: float = 5.0, max_output: int = 80) -> tuple[PluginResult, float]:
    started = time.monotonic()
    result = asyncio.run(run_plugin(PLUGINS / name, args, timeout=timeout, max_output=max_output))
    return result, time.monotonic() - started


def live_members(pgid: int) -> list[int]:
    """Pids still alive in process group `pgid` (zombies don't count: they are dead and waiting for init)."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # exited while we looked
            continue
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            pids.append(int(stat.parent.name))
    return pids


def assert_group_gone(pgid_file: Path) -> None:
    pgid = int(pgid_file.read_text())
    assert pgid != os.getpgid(0), "the plugin must run in its own process group, not the test's"
    # SIGKILL is already delivered when run_plugin returns; the kernel only needs a moment to finish the exits.
    wait_until(lambda: not live_members(pgid), timeout=2.0, what=f"process group {pgid} to be empty")


@pytest.mark.parametrize(
    ("plugin", "status", "message", "exit_code"),
    [
        ("ok.sh", Status.FALSE, "ntp is synchronised", 0),
        ("non-ok.sh", Status.TRUE, "ntp is not synchronised", 1),
        ("exit-2.sh", Status.UNKNOWN, "cannot reach chronyd", 2),
        ("exit-137-silent.sh", Status.UNKNOWN, "exited with status 137", 137),
        ("killed-by-signal.sh", Status.UNKNOWN, "was killed by SIGSEGV", -11),
    ],
    ids=["exit-0-is-ok", "exit-1-is-a-problem", "exit-2-is-unknown", "exit-137-is-unknown", "a-signal-is-unknown"],
)
def test_the_exit_code_decides_the_status_and_stdout_is_the_message(plugin, status, message, exit_code):
    result, _ = run(plugin)

    assert (result.status, result.exit_code, result.timed_out) == (status, exit_code, False)
    assert message in result.message


@pytest.mark.parametrize(
    ("plugin", "max_output", "message"),
    [
        ("long-output.sh", 80, "x" * 80),
        ("long-output.sh", 500, "x" * 200),
        ("utf8-output.sh", 5, "éé"),
    ],
    ids=["trimmed-then-cut-to-80", "shorter-than-the-cap-kept-whole", "never-cut-inside-a-character"],
)
def test_the_message_is_trimmed_then_cut_to_max_output_bytes(plugin, max_output, message):
    result, _ = run(plugin, max_output=max_output)

    assert result.message == message


@pytest.mark.parametrize(
    ("plugin", "reason"),
    [
        ("not-executable.sh", "Permission denied"),
        ("no-interpreter", "Exec format error"),
        ("does-not-exist.sh", "No such file or directory"),
    ],
    ids=["not-executable", "no-interpreter", "missing-file"],
)
def test_a_plugin_that_cannot_start_is_unknown_with_a_clear_message(plugin, reason):
    result, _ = run(plugin)

    assert (result.status, result.exit_code, result.timed_out) == (Status.UNKNOWN, None, False)
    assert result.message == f"cannot run plugin {PLUGINS / plugin}: {reason}"


def test_a_plugin_that_floods_both_pipes_finishes_and_keeps_only_the_cap():
    result, elapsed = run("floods-then-exits.sh", timeout=30, max_output=80)

    assert (result.status, result.exit_code, result.timed_out) == (Status.TRUE, 1, False)
    assert result.message == "a" * 80
    assert len(result.stderr) == 4096
    assert elapsed < 30


@pytest.mark.parametrize(
    ("plugin", "timeout", "output"),
    [
        ("hangs.sh", 0.5, "started"),
        ("ignores-term.sh", 0.5, ""),
        ("floods-forever.sh", 0.5, "flooding"),
        ("forks-child-then-hangs.sh", 0.5, ""),
    ],
    ids=["hangs-forever", "ignores-sigterm", "floods-stdout-forever", "forks-a-child-then-hangs"],
)
def test_a_plugin_past_its_timeout_is_unknown_and_its_whole_group_is_killed(plugin, timeout, output, tmp_path):
    pgid_file = tmp_path / "pgid"

    result, elapsed = run(plugin, str(pgid_file), timeout=timeout)

    assert (result.status, result.timed_out) == (Status.UNKNOWN, True)
    assert result.message.startswith(f"timeout when running plugin {PLUGINS / plugin} after 0.5s")
    assert output in result.message
    assert elapsed < timeout + WORST_CASE_OVERHEAD + SLACK
    assert_group_gone(pgid_file)


def test_a_plugin_that_ignores_sigterm_is_killed_after_the_grace():
    result, elapsed = run("ignores-term.sh", os.devnull, timeout=0.3)

    assert result.exit_code == -9  # SIGKILL, not SIGTERM
    assert elapsed >= 0.3 + TERM_GRACE


@pytest.mark.parametrize(
    ("plugin", "status", "message"),
    [
        ("forks-child-then-exits.sh", Status.FALSE, "all good"),
        ("forks-detached-child-then-exits.sh", Status.TRUE, "disk is failing"),
    ],
    ids=["child-holds-stdout", "child-detached-from-stdout"],
)
def test_a_plugin_that_exits_leaving_a_background_child_reports_promptly_and_the_child_dies(
        plugin, status, message, tmp_path):
    pgid_file = tmp_path / "pgid"

    result, elapsed = run(plugin, str(pgid_file), timeout=10)

    assert (result.status, result.message, result.timed_out) == (status, message, False)
    assert elapsed < 10, "must not wait for the child's end of the pipe"
    assert_group_gone(pgid_file)


def test_a_cancelled_run_kills_the_plugin_group(tmp_path):
    pgid_file = tmp_path / "pgid"

    async def cancel_soon() -> None:
        task = asyncio.create_task(run_plugin(PLUGINS / "forks-child-then-hangs.sh", [str(pgid_file)],
                                              timeout=60, max_output=80))
        await asyncio.to_thread(wait_until, pgid_file.exists, timeout=5.0, what="the plugin to start")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(cancel_soon())

    assert time.monotonic() - started < 5 + SLACK
    wait_until(pgid_file.read_text, timeout=2.0, what="the pgid to be written")
    assert_group_gone(pgid_file)


def test_the_plugin_gets_its_args_and_env():
    async def main() -> PluginResult:
        return await run_plugin("/bin/sh", ["-c", 'echo "$1 $GREETING"; exit 1', "sh", "hello"], timeout=5,
                                max_output=80, env={"GREETING": "world", "PATH": os.defpath})

    result = asyncio.run(main())

    assert (result.status, result.message) == (Status.TRUE, "hello world")


def test_a_child_that_left_the_group_holding_stdout_does_not_hold_up_the_verdict(tmp_path):
    pid_file = tmp_path / "escaped"
    try:
        result, elapsed = run("escapes-group-holding-stdout.sh", str(pid_file), timeout=10)

        assert (result.status, result.message) == (Status.FALSE, "all good")
        assert elapsed < 1 + WORST_CASE_OVERHEAD + SLACK, "the pipe it holds must not be waited on to the end"
    finally:  # out of the group's reach by construction, so the test cleans up the one process it let escape
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
