"""Stopping a daemon's tasks: a signal or a task's end stops them all, and nothing they raise is swallowed."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

import pytest

from nodemedic_common.tasks import cancelled, keep, run_until_signal

LOG = logging.getLogger("test.tasks")


async def forever(cleanup: list[str], name: str) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        cleanup.append(name)


async def fails_when_cancelled() -> None:
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        raise RuntimeError("flush on the way out failed") from None


def test_a_signal_stops_every_task_and_exits_0(caplog: pytest.LogCaptureFixture) -> None:
    cleanup: list[str] = []

    async def main() -> int:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
        return await run_until_signal([forever(cleanup, "a"), forever(cleanup, "b")], LOG)

    with caplog.at_level(logging.INFO, logger=LOG.name):
        assert asyncio.run(main()) == 0
    assert sorted(cleanup) == ["a", "b"] and "task failed" not in caplog.text


def test_a_failed_task_stops_the_others_exits_1_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    cleanup: list[str] = []

    async def broken() -> None:
        raise ValueError("watch ended")

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        assert asyncio.run(run_until_signal([broken(), forever(cleanup, "a")], LOG)) == 1
    assert cleanup == ["a"]
    failed = [r for r in caplog.records if r.getMessage() == "task failed"]
    assert len(failed) == 1 and "watch ended" in failed[0].error  # type: ignore[attr-defined]
    assert failed[0].task.endswith("<locals>.broken")  # type: ignore[attr-defined]


def test_what_a_task_raises_while_stopping_is_logged_not_swallowed(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> int:
        asyncio.get_running_loop().call_later(0.05, os.kill, os.getpid(), signal.SIGINT)
        return await run_until_signal([fails_when_cancelled()], LOG)

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        assert asyncio.run(main()) == 0
    [record] = [r for r in caplog.records if r.getMessage() == "task failed while stopping"]
    assert "flush on the way out failed" in record.error  # type: ignore[attr-defined]


def test_cancelled_waits_for_the_task_and_logs_its_error(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> bool:
        task = asyncio.create_task(fails_when_cancelled(), name="flusher")
        await asyncio.sleep(0)
        await cancelled(task, LOG)
        return task.done()

    with caplog.at_level(logging.ERROR, logger=LOG.name):
        assert asyncio.run(main())
    assert "task failed while stopping" in caplog.text and caplog.records[0].task == "flusher"  # type: ignore[attr-defined]


def test_keep_holds_the_task_until_it_ends_and_returns_it() -> None:
    async def main() -> None:
        tasks: set[asyncio.Task[object]] = set()
        release = asyncio.Event()

        async def work() -> str:
            await release.wait()
            return "done"
        task = keep(tasks, work())
        assert tasks == {task}
        release.set()
        assert await task == "done"
        await asyncio.sleep(0)  # the done callbacks run on the next loop turn
        assert tasks == set()
    asyncio.run(main())
