"""`process_group`: waiting for a child within a deadline, signalling a whole process group (quietly when it is
gone), naming signals, and `CappedPipe` reading a pipe to EOF keeping its first or last `cap` bytes."""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from agent.process_group import READ_CHUNK, CappedPipe, exited, signal_group, signal_name


async def _spawn(code: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(sys.executable, "-c", code, start_new_session=True)


def test_exited_is_true_once_the_child_has_exited_and_it_is_reaped() -> None:
    async def scenario() -> tuple[bool, int | None]:
        proc = await _spawn("raise SystemExit(3)")
        return await exited(proc, 10.0), proc.returncode

    assert asyncio.run(scenario()) == (True, 3)


def test_exited_is_false_for_a_child_still_running_at_the_deadline_and_signal_group_ends_it() -> None:
    async def scenario() -> tuple[bool, bool, int | None]:
        proc = await _spawn("import time; time.sleep(60)")
        still_running = await exited(proc, 0.05)
        signal_group(proc.pid, signal.SIGKILL)  # start_new_session: its pid is its group's id
        return still_running, await exited(proc, 10.0), proc.returncode

    assert asyncio.run(scenario()) == (False, True, -signal.SIGKILL)


def test_signal_group_kills_the_grandchildren_too() -> None:
    async def scenario() -> int:
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", "sleep 60 & echo $!; wait", stdout=asyncio.subprocess.PIPE, start_new_session=True)
        assert proc.stdout is not None
        grandchild = int(await asyncio.wait_for(proc.stdout.readline(), 10.0))
        signal_group(proc.pid, signal.SIGKILL)
        assert await exited(proc, 10.0)
        return grandchild

    grandchild = asyncio.run(scenario())
    gone = asyncio.run(_gone_within(grandchild, 10.0))
    assert gone, f"pid {grandchild} outlived its killed process group"


async def _gone_within(pid: int, within: float) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while loop.time() < end:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[1].startswith("Z"):
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        await asyncio.sleep(0.01)
    return False


def test_signal_group_of_a_group_that_is_gone_does_nothing() -> None:
    async def scenario() -> int:
        proc = await _spawn("pass")
        await proc.wait()
        return proc.pid

    pid = asyncio.run(scenario())
    signal_group(pid, signal.SIGTERM)  # no ProcessLookupError


def test_signal_name_names_a_known_signal_and_numbers_an_unknown_one() -> None:
    assert signal_name(9) == "SIGKILL"
    assert signal_name(15) == "SIGTERM"
    assert signal_name(200) == "signal 200"


def _read(data: bytes, cap: int, *, keep_last: bool = False) -> bytes:
    async def scenario() -> bytes:
        read_end, write_end = os.pipe()
        pipe = CappedPipe(asyncio.get_running_loop(), read_end, cap, keep_last=keep_last)

        async def write() -> None:
            view = memoryview(data)
            os.set_blocking(write_end, False)
            while view:
                try:
                    view = view[os.write(write_end, view):]
                except BlockingIOError:
                    await asyncio.sleep(0.001)
            os.close(write_end)

        await asyncio.gather(write(), asyncio.wait_for(asyncio.shield(pipe.eof), 10.0))
        os.close(read_end)
        return bytes(pipe.data)

    return asyncio.run(scenario())


def test_a_capped_pipe_keeps_the_first_cap_bytes() -> None:
    data = bytes(range(256)) * (3 * READ_CHUNK // 256)
    assert _read(data, 1000) == data[:1000]


def test_a_capped_pipe_keeping_the_last_bytes_keeps_the_end_across_many_chunks() -> None:
    data = b"".join(b"line %d\n" % i for i in range(40000))  # several READ_CHUNKs
    assert len(data) > 3 * READ_CHUNK
    assert _read(data, 100, keep_last=True) == data[-100:]


def test_a_capped_pipe_shorter_than_its_cap_keeps_everything_and_an_empty_one_nothing() -> None:
    assert _read(b"short", 1000) == b"short"
    assert _read(b"", 1000) == b""
    assert _read(b"short", 1000, keep_last=True) == b"short"


def test_closing_a_capped_pipe_before_eof_cancels_its_eof_and_closes_the_descriptor() -> None:
    async def scenario() -> tuple[bool, int]:
        read_end, write_end = os.pipe()
        pipe = CappedPipe(asyncio.get_running_loop(), read_end, 10)
        pipe.close()
        os.close(write_end)
        try:
            os.fstat(read_end)
            closed_errno = 0
        except OSError as e:
            closed_errno = e.errno or 0
        return pipe.eof.cancelled(), closed_errno

    cancelled, closed_errno = asyncio.run(scenario())
    assert cancelled is True
    assert closed_errno != 0
