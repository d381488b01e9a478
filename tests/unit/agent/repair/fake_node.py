"""The repair worker wired as the agent wires it (the real pipeline step, condition book and reporter), against a
fake API server that keeps the Node's conditions across "restarts" of the agent, and a fake annotation."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from agent.host import HostRoot
from agent.pipeline import Pipeline
from agent.repair.commands import CommandResult
from agent.repair.config import RepairConfig
from agent.repair.worker import RepairWorker, Runner
from agent.reporting.condition_metrics import ConditionMetrics
from agent.reporting.conditions import ConditionBook
from agent.reporting.inbox import Inbox
from agent.reporting.reporter import Reporter, StateFile
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import ANSWER_CONDITION, format_time

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
LOG = logging.getLogger("test.repair")
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# No prefix, so that a test's commands run as they are.
CONFIG = RepairConfig(host_command_prefix=())


def ask(id_: str, action: str = "restart", service: str | None = "kubelet", *,
        requested: dt.datetime = NOW - dt.timedelta(seconds=30)) -> str:
    """The remediator's annotation (with the keys the agent does not read, as the remediator writes them)."""
    body: dict[str, Any] = {"id": id_, "rule": "kubelet-unhealthy", "step": 0, "action": action,
                            "requested": format_time(requested), "history": []}
    if service is not None and action == "restart":
        body["service"] = service
    return json.dumps(body)


async def eventually(probe: Callable[[], object], *, what: str, timeout: float = 10.0) -> None:
    """Until `probe()` is truthy, failing with `what` at the deadline (the loop runs meanwhile)."""
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.005)


class FakeApi:
    """The Node's conditions as the API server keeps them. A status PATCH is merged in, or fails while `failing`;
    `journal` records each change of the repair answer it accepted ("written", reason, message) in order, shared
    with the runner."""

    def __init__(self, journal: list[tuple[str, ...]], conditions: list[dict[str, str]] | None = None) -> None:
        self.journal = journal
        self.conditions = list(conditions or [])
        self.failing = False
        self.failed = 0
        self.events: list[tuple[str, str, str]] = []  # (reason, type, message)

    def answer(self) -> dict[str, str] | None:
        return next((c for c in self.conditions if c["type"] == ANSWER_CONDITION), None)

    async def request(self, method: str, path: str, body: Any = None, **_: Any) -> Any:
        if method == "GET":
            return {"status": {"conditions": [dict(c) for c in self.conditions]}}
        if method == "PATCH" and path.endswith("/status"):
            if self.failing:
                self.failed += 1
                raise ApiError(503, method, path, "the API server is away")
            for c in body["status"]["conditions"]:
                was = self.answer() if c["type"] == ANSWER_CONDITION else None
                self.conditions = [old for old in self.conditions if old["type"] != c["type"]]
                if c.get("$patch") == "delete":
                    continue
                self.conditions.append(c)
                if c["type"] == ANSWER_CONDITION and (was is None or (was["reason"], was["message"]) != (
                        c["reason"], c["message"])):  # a change, not the same answer written again
                    self.journal.append(("written", c["reason"], c["message"]))
            return {}
        if method == "POST":
            self.events.append((body["reason"], body["type"], body["message"]))
        return {}


class FakeAsks:
    """The annotation, as the Node watch hands it over; `considered` is the last generation the worker took."""

    def __init__(self) -> None:
        self.generation = 0
        self.text: str | None = None
        self.considered = -1
        self._changed = asyncio.Event()

    def set(self, text: str | None) -> int:
        self.text = text
        self.generation += 1
        self._changed.set()
        self._changed = asyncio.Event()
        return self.generation

    async def wait_change(self, after: int) -> tuple[int, str | None]:
        self.considered = after  # the worker is done with `after` and waits for the next
        while self.generation <= after:
            await self._changed.wait()
        return self.generation, self.text


class FakeRunner:
    """Records each command line in the journal and answers with `result`."""

    def __init__(self, journal: list[tuple[str, ...]], result: CommandResult | None = None) -> None:
        self.journal = journal
        self.result = result or CommandResult(0, False, 1.25, "")
        self.ran: list[tuple[str, ...]] = []

    async def __call__(self, argv: Sequence[str], *, timeout: float) -> CommandResult:
        self.ran.append(tuple(argv))
        self.journal.append(("ran", *argv))
        return self.result


class Agent:
    """One run of the agent's repair side on `host`, against `api`; `start()` and `stop()` it like the process."""

    def __init__(self, api: FakeApi, host: Path, *, config: RepairConfig = CONFIG, run: Runner | None = None,
                 now: dt.datetime = NOW) -> None:
        self.api, self.now = api, now
        self.registry = CollectorRegistry()
        self.book = ConditionBook({"repair": (ANSWER_CONDITION,)})
        self.reporter = Reporter(api, "n1", self.book, state=StateFile(host.parent / "state.json"),  # type: ignore[arg-type]
                                 registry=self.registry, log=LOG, debounce=0.0, min_write_gap=0.0)
        inbox = Inbox(suppressed=self.reporter.suppressed, log=LOG)
        self.pipeline = Pipeline(inbox=inbox, book=self.book, reporter=self.reporter,
                                 metrics=ConditionMetrics(self.registry, unmetered={"repair": (ANSWER_CONDITION,)}),
                                 log=LOG)
        self.asks = FakeAsks()
        extra = {"run": run} if run is not None else {}
        self.worker = RepairWorker(config, asks=self.asks, answers=self.pipeline, host=HostRoot(host),
                                   registry=self.registry, log=LOG, clock=lambda: self.now, **extra)
        self.tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self.tasks = [asyncio.create_task(c) for c in (self.reporter.run(), self.pipeline.run(), self.worker.run())]

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.pipeline.close()

    async def considered(self, generation: int) -> None:
        """Until the worker is done with the annotation of `generation` (answered it, or left it)."""
        await eventually(lambda: self.asks.considered >= generation, what=f"the worker to take ask #{generation}")

    def answer(self) -> tuple[str, str, str] | None:
        c = self.book.current.get(ANSWER_CONDITION)
        return None if c is None else (str(c.status), c.reason, c.message)

    def repairs(self, action: str, result: str) -> float:
        return self.registry.get_sample_value("nodemedic_agent_repairs_total",
                                              {"action": action, "result": result}) or 0.0


def host_root(tmp_path: Path, boot_id: str = "boot-a") -> Path:
    root = tmp_path / "host"
    (root / "proc/sys/kernel/random").mkdir(parents=True)
    set_boot_id(root, boot_id)
    return root


def set_boot_id(root: Path, boot_id: str) -> None:
    (root / BOOT_ID.lstrip("/")).write_text(boot_id + "\n")
