"""The only writer on the agent side: conditions to nodes/<name>/status and Events about the Node.

Conditions: one strategic-merge PATCH of `nodes/<name>/status` carrying only the conditions the agent owns
(merged by `type`, so kubelet/kwok conditions are untouched), plus `$patch: delete` entries for types it
wrote before but no longer owns. Sent when the book changes (debounced; a burst of three, then at most once a
second) and on a heartbeat; while the API server is away it backs off exponentially and keeps only the latest
state (the book).
`accepted(version)` waits until a write of the book at that version went through (the repair worker's `Acting`).

Events: aggregated — the same reason and message within `aggregate_window` patches the existing Event's
count instead of creating a new one — and rate-limited by a token bucket; every Event that is not sent is
counted in `nodemedic_agent_events_suppressed_total`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import logging
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, Gauge

from agent.model import ConditionReport, EventReport
from agent.reporting.conditions import ConditionBook
from agent.reporting.node_capacity import NodeCapacity
from nodemedic_common import bounded_json
from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError

COMPONENT = "nodemedic-agent"


@dataclass
class _Sent:
    name: str
    count: int
    first: float  # monotonic
    # Set once the POST that creates the Event returned: an identical event arriving meanwhile (two lines of one
    # observation are sent concurrently) waits for it and then aggregates instead of creating a duplicate.
    created: asyncio.Event = field(default_factory=asyncio.Event)


class TokenBucket:
    def __init__(self, burst: int, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity, self.rate = float(burst), per_second
        self.tokens = float(burst)
        self.clock = clock
        self.last = self.clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        self.last = now

    def wait(self) -> float:
        """Seconds until take() can succeed (0: now)."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> bool:
        self._refill()
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


class StateFile:
    """The condition types this agent has written to its Node (so retired ones can be deleted after a restart)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> set[str]:
        try:
            data = bounded_json.loads(self.path.read_text())
            return {str(t) for t in data.get("writtenTypes", [])}
        except (OSError, ValueError, AttributeError):
            return set()

    def save(self, types: set[str]) -> None:
        with contextlib.suppress(OSError):  # a read-only state dir costs us only the retirement feature
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"writtenTypes": sorted(types)}))
            tmp.replace(self.path)


class Reporter:
    def __init__(self, kube: Kube, node: str, book: ConditionBook, *, state: StateFile, registry: CollectorRegistry,
                 log: logging.Logger, heartbeat: float = 300.0, debounce: float = 0.05, min_write_gap: float = 1.0,
                 write_burst: int = 3,
                 aggregate_window: float = 600.0, event_burst: int = 25, events_per_second: float = 0.5,
                 defaults: Sequence[ConditionReport] = ()) -> None:
        self.kube, self.node, self.book, self.state, self.log = kube, node, book, state, log
        self.defaults = tuple(defaults)
        self.heartbeat, self.debounce, self.aggregate_window = heartbeat, debounce, aggregate_window
        # On average at most one status PATCH per `min_write_gap`, whatever the checks do: a condition flapping on
        # every observation costs the API server one write a second per node, not one per observation. A burst of
        # `write_burst` lets a change that follows a write closely (the first write, a heartbeat) go out at once: a
        # strict gap held a kernel line's condition back up to a second (issue 43: 1.03 s median in the chain).
        self.min_write_gap = min_write_gap
        self.write_burst = write_burst
        self.changed = asyncio.Event()
        self.seeded = asyncio.Event()  # observations wait for this: the Node's state comes first
        self.bucket = TokenBucket(event_burst, events_per_second)
        self.sent: dict[tuple[str, str], _Sent] = {}
        self.capacity = NodeCapacity()  # from the Node objects the GET and each PATCH return, for the checks
        self.written = state.load()
        self.retire = book.retired(self.written)
        # The book version of the last status write the API server accepted (-1: none yet), for `accepted`.
        self.written_version = -1
        self._accepted = asyncio.Event()  # replaced at each accepted write: every waiter of the old one wakes
        self.suppressed = Counter("nodemedic_agent_events_suppressed_total", "Events not sent (rate limit or error)",
                                  ["reason"], registry=registry)
        self.events = Counter("nodemedic_agent_events_total", "Events sent or aggregated", ["reason", "kind"],
                              registry=registry)
        self.status_written = Gauge("nodemedic_agent_status_written_timestamp_seconds",
                                    "Unix time of the last node status write the API server accepted (the agent's "
                                    "start until the first)", registry=registry)
        self.status_written.set_to_current_time()
        Gauge("nodemedic_agent_heartbeat_seconds", "Status is re-sent at least this often",
              registry=registry).set(heartbeat)

    async def seed(self) -> None:
        """Read the Node once so a restart keeps the conditions already there."""
        node = await self.kube.request("GET", f"/api/v1/nodes/{self.node}")
        self.capacity.update(node)
        self.book.seed((node.get("status") or {}).get("conditions") or [], self.defaults)
        self.seeded.set()

    async def accepted(self, version: int) -> None:
        """Return once the API server has accepted a status write carrying the book at `version` or later (the
        repair worker acts only once its `Acting` answer is on the Node). Waits as long as the writes fail."""
        while self.written_version < version:
            await self._accepted.wait()

    def status_patch(self, now: dt.datetime) -> dict[str, object]:
        conditions: list[dict[str, str]] = [c.to_api(now) for c in self.book.conditions()]
        conditions += [{"type": t, "$patch": "delete"} for t in self.retire]
        return {"status": {"conditions": conditions}}

    async def write_conditions(self) -> None:
        now = dt.datetime.now(dt.UTC)
        self.capacity.update(await self.kube.request("PATCH", f"/api/v1/nodes/{self.node}/status",
                                                     body=self.status_patch(now),
                                                     content_type="application/strategic-merge-patch+json"))
        self.status_written.set_to_current_time()
        written = {c.type for c in self.book.conditions()}
        if self.retire:
            self.log.info("deleted retired condition types", extra={"types": self.retire})
        self.retire = []
        if written != self.written:
            self.written = written
            self.state.save(written)

    async def run(self) -> None:
        backoff = 0.5
        seeded = False
        version = -1
        writes = TokenBucket(self.write_burst, 1 / self.min_write_gap) if self.min_write_gap > 0 else None
        while True:
            try:
                if not seeded:
                    await self.seed()
                    seeded = True
                while writes is not None and not writes.take():
                    await asyncio.sleep(writes.wait())
                version = self.book.version
                await self.write_conditions()  # the patch is built from the book at `version`, before any await
                backoff = 0.5
            except ApiError as e:
                self.log.warning("status write failed, backing off", extra={"error": str(e), "retry_in": backoff})
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 30.0)
                continue
            self.written_version = version
            self._accepted.set()
            self._accepted = asyncio.Event()
            if self.book.version != version:
                continue  # changed while we were writing
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), self.heartbeat)
            await asyncio.sleep(self.debounce)  # fold a burst of changes into one PATCH

    def notify_changed(self) -> None:
        self.changed.set()

    async def event(self, report: EventReport, *, source: str) -> None:
        key = (report.reason, report.message)
        now = time.monotonic()
        if not self.bucket.take():
            self.suppressed.labels(report.reason).inc()
            return
        prior = self.sent.get(key)
        if prior is not None and not prior.created.is_set():
            await prior.created.wait()
            if self.sent.get(key) is not prior:
                prior = None  # its POST failed: this one creates the Event
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        entry: _Sent | None = None
        try:
            if prior is not None and now - prior.first < self.aggregate_window:
                prior.count += 1
                await self.kube.request("PATCH", f"/api/v1/namespaces/default/events/{prior.name}",
                                        body={"count": prior.count, "lastTimestamp": stamp},
                                        content_type="application/merge-patch+json")
                self.events.labels(report.reason, "aggregated").inc()
                return
            name = f"{self.node}.{secrets.token_hex(8)}"
            entry = self.sent[key] = _Sent(name, 1, now)
            await self.kube.request("POST", "/api/v1/namespaces/default/events", body={
                "apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
                "involvedObject": {"kind": "Node", "apiVersion": "v1", "name": self.node, "uid": self.node},
                "reason": report.reason, "message": report.message[:1024], "type": str(report.severity),
                "source": {"component": f"{COMPONENT}/{source}", "host": self.node},
                "reportingComponent": COMPONENT, "reportingInstance": self.node,
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
            })
            self.events.labels(report.reason, "created").inc()
        except ApiError as e:
            if entry is not None and self.sent.get(key) is entry:
                del self.sent[key]  # nothing was created to aggregate into
            self.suppressed.labels(report.reason).inc()
            self.log.warning("event not sent", extra={"reason": report.reason, "error": str(e)})
        finally:
            if entry is not None:
                entry.created.set()
        for k in [k for k, s in self.sent.items() if now - s.first >= self.aggregate_window]:
            del self.sent[k]
