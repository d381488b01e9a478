"""Leader election on a Lease, against an in-memory API server with resourceVersion conflicts and a fake clock:
who leads when, and that no two replicas ever act at once, whatever the clocks and the API server do."""

from __future__ import annotations

import asyncio
import copy
import logging
import random
from typing import Any

import pytest

from nodemedic_common.kube_errors import ApiError
from remediator.control.leader import LeaderElector, LeaseTimings

LOG = logging.getLogger("test.leader")
PATH = "/apis/coordination.k8s.io/v1/namespaces/ops/leases/nm"
TIMINGS = LeaseTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class LeaseServer:
    """One Lease with optimistic concurrency (PUT with a stale resourceVersion is 409), and switchable outages."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False
        self.slow = 0.0  # seconds every answer takes to come back, on the fake clock (the request itself lands)
        self.landed = 0.0  # when the last write landed
        self.requests: list[tuple[str, str]] = []
        self.timeouts: list[float] = []  # the client-side timeout of every request

    async def _arrive(self, method: str, path: str) -> None:
        self.requests.append((method, path))
        await asyncio.sleep(0)
        if self.down:
            raise ApiError(0, method, path, "ClientConnectorError: connection refused")

    async def get(self, path: str, **params: str) -> Any:
        await self._arrive("GET", path)
        self.clock.now += self.slow
        if self.lease is None:
            raise ApiError(404, "GET", path, '{"message": "not found"}')
        return copy.deepcopy(self.lease)

    async def request(self, method: str, path: str, *, body: Any = None, timeout: float = 30.0, **_: Any) -> Any:
        self.timeouts.append(timeout)
        if method == "GET":
            return await self.get(path)
        await self._arrive(method, path)
        stored = self._store(method, path, body)
        self.landed = self.clock.now
        self.clock.now += self.slow
        return stored

    def _store(self, method: str, path: str, body: Any) -> Any:
        if method == "POST":
            if self.lease is not None:
                raise ApiError(409, method, path, '{"message": "already exists"}')
        elif method == "PUT":
            if self.lease is None or body["metadata"].get("resourceVersion") != str(self.version):
                raise ApiError(409, method, path, '{"message": "the object has been modified"}')
        else:
            raise AssertionError(f"unexpected {method} {path}")
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    @property
    def holder(self) -> str:
        return (self.lease or {}).get("spec", {}).get("holderIdentity", "")


def elector(server: LeaseServer, clock: Clock, identity: str, changes: list[bool] | None = None) -> LeaderElector:
    return LeaderElector(server, namespace="ops", name="nm", identity=identity, log=LOG,  # type: ignore[arg-type]
                         timings=TIMINGS, clock=clock, on_change=None if changes is None else changes.append)


def step(*electors: LeaderElector) -> None:
    """One retry period of each elector's loop (what `run` does between its sleeps)."""

    async def one(e: LeaderElector) -> None:
        async def stop(_: float) -> None:
            raise asyncio.CancelledError

        e.sleep = stop
        with pytest.raises(asyncio.CancelledError):
            await e.run()

    for e in electors:
        asyncio.run(one(e))


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> LeaseServer:
    return LeaseServer(clock)


def test_the_first_replica_creates_the_lease_and_leads(server: LeaseServer, clock: Clock) -> None:
    changes: list[bool] = []
    a = elector(server, clock, "a", changes)
    assert not a.is_leader()
    step(a)
    assert a.is_leader() and changes == [True]
    assert server.holder == "a" and server.lease["spec"]["leaseDurationSeconds"] == 15  # type: ignore[index]
    assert server.lease["spec"]["leaseTransitions"] == 0  # type: ignore[index]


def test_a_standby_waits_out_the_lease_duration_on_its_own_clock_then_takes_over(
        server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a, b)
    assert a.is_leader() and not b.is_leader()
    # a dies. b first saw a's record at 1000 and must wait lease_duration from then, whatever renewTime says.
    for _ in range(7):
        clock.now += TIMINGS.retry_period
        step(b)
        assert server.holder == "a" and not b.is_leader(), f"taken over after {clock.now - 1000:.0f}s"
    clock.now += TIMINGS.retry_period  # 16 s after b first saw the record
    step(b)
    assert b.is_leader() and server.holder == "b"
    assert server.lease["spec"]["leaseTransitions"] == 1  # type: ignore[index]


def test_a_renewing_leader_is_never_displaced_and_its_standby_never_leads(server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    for _ in range(60):  # two minutes
        step(a, b)
        assert a.is_leader() and not b.is_leader()
        clock.now += TIMINGS.retry_period
    assert server.holder == "a"


def test_a_renew_time_far_in_the_past_by_the_wall_clock_does_not_expire_a_lease_just_seen_changing(
        server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a)
    server.lease["spec"]["renewTime"] = "2001-01-01T00:00:00.000000Z"  # type: ignore[index]  # a's clock is off
    step(b)
    assert not b.is_leader() and server.holder == "a"


def test_a_leader_that_cannot_renew_stops_acting_before_anyone_may_take_over(
        server: LeaseServer, clock: Clock) -> None:
    changes: list[bool] = []
    a, b = elector(server, clock, "a", changes), elector(server, clock, "b")
    step(a, b)
    renewed = clock.now
    server.down = True  # a's requests fail from here on; b's too, but b only has to wait
    while clock.now - renewed < TIMINGS.renew_deadline:
        assert a.is_leader()
        clock.now += TIMINGS.retry_period
        step(a)
    assert not a.is_leader() and changes == [True, False]
    server.down = False
    while not b.is_leader():
        assert clock.now - renewed >= TIMINGS.renew_deadline
        step(b)
        clock.now += TIMINGS.retry_period
    assert clock.now - renewed >= TIMINGS.lease_duration, "b led while a might still have been writing"


def test_a_renewal_that_answers_late_does_not_stretch_the_leaders_fence(server: LeaseServer, clock: Clock) -> None:
    a = elector(server, clock, "a")
    step(a)
    server.slow = 8.0  # each answer comes 8 s late: a's renewal lands 8 s after it started, a hears of it at 16 s
    step(a)
    # A standby that saw the renewed record the moment it landed may take over lease_duration after that: by
    # then a must have stopped acting, so a's fence counts from when it sent the renewal, not from the answer.
    clock.now = server.landed + TIMINGS.lease_duration
    assert not a.is_leader()


def test_no_lease_request_waits_longer_than_the_renew_deadline(server: LeaseServer, clock: Clock) -> None:
    # Found by tests/e2e/test_chaos_etcd.py: with etcd away the API server holds a request open; waiting the
    # client's default 30 s for it delayed leadership by up to that long once etcd was back.
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a, b)
    clock.now += TIMINGS.lease_duration + 1
    step(b)
    assert server.timeouts and max(server.timeouts) <= TIMINGS.renew_deadline, server.timeouts


def test_two_standbys_racing_for_an_expired_lease_cannot_both_win(server: LeaseServer, clock: Clock) -> None:
    a, b, c = elector(server, clock, "a"), elector(server, clock, "b"), elector(server, clock, "c")
    step(a, b, c)
    clock.now += TIMINGS.lease_duration + 1  # a is gone

    async def race() -> None:
        async def stop(_: float) -> None:
            raise asyncio.CancelledError

        for e in (b, c):
            e.sleep = stop
        results = await asyncio.gather(b.run(), c.run(), return_exceptions=True)
        assert all(isinstance(r, asyncio.CancelledError) for r in results)

    asyncio.run(race())
    assert [b.is_leader(), c.is_leader()].count(True) == 1
    assert server.holder in {"b", "c"}


def test_release_hands_the_lease_over_at_once(server: LeaseServer, clock: Clock) -> None:
    changes: list[bool] = []
    a, b = elector(server, clock, "a", changes), elector(server, clock, "b")
    step(a, b)
    asyncio.run(a.release())
    assert not a.is_leader() and changes == [True, False]
    assert server.holder == ""
    step(b)
    assert b.is_leader(), "a released lease is taken without waiting out the duration"


def test_release_by_a_replica_that_does_not_lead_writes_nothing(server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a, b)
    before = len(server.requests)
    asyncio.run(b.release())
    assert len(server.requests) == before and server.holder == "a"


def test_a_failed_release_is_logged_not_raised(server: LeaseServer, clock: Clock,
                                                caplog: pytest.LogCaptureFixture) -> None:
    a = elector(server, clock, "a")
    step(a)
    server.down = True
    with caplog.at_level(logging.WARNING, logger=LOG.name):
        asyncio.run(a.release())
    assert not a.is_leader() and "lease release failed" in caplog.text


def test_a_standby_counts_the_lease_from_its_read_before_the_change_and_wakes_at_expiry(
        server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a, b)  # 1000: a leads, b's first read
    clock.now = 1001.0
    step(a)  # a's last renewal, then a dies; its fence closes at 1011
    clock.now = 1002.0
    step(b)  # b sees the renewal; its read before this one (sent at 1000) still showed the old record
    assert b.next_try_in() == TIMINGS.retry_period
    clock.now = 1014.0
    step(b)
    assert not b.is_leader() and b.next_try_in() == 1.0, "b wakes when the lease runs out, not a retry later"
    clock.now = 1015.0  # lease_duration after b's read at 1000; client-go's count would run to 1017 and poll on
    step(b)
    assert b.is_leader() and server.holder == "b"
    assert not a.is_leader(), "a's fence (renew_deadline from its renewal at 1001) closed before b led"


def test_a_standby_that_read_long_ago_never_counts_from_before_the_old_leaders_fence_allows(
        server: LeaseServer, clock: Clock) -> None:
    a, b = elector(server, clock, "a"), elector(server, clock, "b")
    step(a, b)  # b's read at 1000
    while clock.now < 1020.0:  # b does not read for 20 s (say its requests failed) while a renews
        clock.now += TIMINGS.retry_period
        step(a)
    renewed = clock.now  # a's last renewal, then a dies
    clock.now += 1.0
    step(b)
    slack = (TIMINGS.lease_duration - TIMINGS.renew_deadline) / 2
    takeover = clock.now - slack + TIMINGS.lease_duration  # counted from no earlier than now - slack, not 1000
    clock.now = takeover - 0.01
    step(b)
    assert not b.is_leader() and server.holder == "a"
    clock.now = takeover
    step(b)
    assert b.is_leader()
    assert clock.now - (renewed + TIMINGS.renew_deadline) >= slack, "half the slack after a's fence is kept"


def test_two_replicas_never_lead_at_once_whatever_the_timing(clock: Clock) -> None:
    """Random interleavings of renewals, reads, deaths, outages and slow answers (seeded, so a failure replays)."""
    rng = random.Random(20261124)
    for _ in range(300):
        server = LeaseServer(clock)
        a, b = elector(server, clock, "a"), elector(server, clock, "b")
        alive = {"a": True, "b": True}
        for _ in range(80):
            action = rng.random()
            if action < 0.35:
                clock.now += rng.uniform(0.0, 3.0)
            elif action < 0.85:
                name = rng.choice("ab")
                server.slow = rng.choice([0.0, 0.0, rng.uniform(0.0, 4.0)])
                if alive[name]:
                    step(a if name == "a" else b)
                server.slow = 0.0
            elif action < 0.95:
                name = rng.choice("ab")
                alive[name] = not alive[name]
            else:
                server.down = not server.down
            assert not (a.is_leader() and b.is_leader()), "two leaders"
