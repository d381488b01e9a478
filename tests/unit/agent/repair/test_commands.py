"""Running one repair command: its exit code and the last line of its stderr, a timeout that kills its whole process
group, and nothing it started left behind."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from agent.repair.commands import CommandResult, last_line, run_command
from tests.waiting import wait_until


def run(argv: list[str], timeout: float = 10.0) -> CommandResult:
    return asyncio.run(run_command(argv, timeout=timeout))


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")  # a zombie of someone else's


def test_exit_0_is_ok() -> None:
    result = run(["sh", "-c", "echo fine >&2"])
    assert result.ok and result.exit_code == 0 and result.stderr == "fine" and not result.timed_out


def test_a_failure_says_the_exit_code_and_the_last_line_of_stderr() -> None:
    result = run(["sh", "-c", "echo first >&2; echo 'Failed to restart crio.service: Unit crio.service not found.' "
                              ">&2; echo ignored; exit 5"])
    assert not result.ok and result.exit_code == 5
    assert result.failure(10) == "exit code 5: Failed to restart crio.service: Unit crio.service not found."


def test_control_characters_are_stripped_and_a_long_line_is_cut() -> None:
    assert last_line(b"one\n\x1b[31mred\x1b[0m\r\n\n") == "[31mred [0m"
    assert len(last_line(b"x" * 10000)) == 300
    assert last_line(b"\xff\xfe broken utf-8") == "\ufffd\ufffd broken utf-8"
    assert last_line(b"") == ""


def test_a_flood_on_stderr_keeps_only_its_tail() -> None:
    result = run([sys.executable, "-c", "import sys; sys.stderr.write('x' * 5_000_000 + '\\nthe end\\n')"])
    assert result.ok and result.stderr == "the end"


def test_a_program_that_is_not_there_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    result = run([str(tmp_path / "missing")])
    assert not result.ok and result.exit_code is None
    assert result.failure(10).startswith(f"cannot run {tmp_path / 'missing'}: No such file")


def test_a_signal_is_named() -> None:
    result = run(["sh", "-c", "kill -KILL $$"])
    assert result.exit_code == -9 and result.failure(10) == "killed by SIGKILL"


def test_at_the_timeout_the_whole_process_group_is_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = run(["sh", "-c", f"sleep 300 & echo $! > {pids}; echo waiting >&2; sleep 300"], timeout=0.5)
    assert result.timed_out and not result.ok and result.duration < 10
    assert result.failure(0.5) == "timed out after 0.5s; its process group was killed"
    child = int(pids.read_text())
    wait_until(lambda: gone(child), timeout=5, what="the backgrounded sleep to be killed with the group")


def test_what_a_command_leaves_running_is_killed_when_it_exits(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    result = run(["sh", "-c", f"sleep 300 & echo $! > {pids}"])
    assert result.ok
    child = int(pids.read_text())
    wait_until(lambda: gone(child), timeout=5, what="the left-behind sleep to be killed")


def test_cancelling_the_call_kills_the_command(tmp_path: Path) -> None:
    pids = tmp_path / "pids"

    async def body() -> None:
        task = asyncio.create_task(run_command(["sh", "-c", f"echo $$ > {pids}; exec sleep 300"], timeout=60))
        while not pids.exists() or not pids.read_text().strip():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(asyncio.wait_for(body(), 10))
    pid = int(pids.read_text())
    wait_until(lambda: gone(pid), timeout=5, what="the command to be killed")
