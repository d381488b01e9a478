"""Leader election on a coordination.k8s.io/v1 Lease, in the manner of client-go's leaderelection.

Expiry is judged on this process's monotonic clock from when the record *changed in our eyes*, not by
comparing the holder's renewTime with our wall clock, so clock skew between replicas cannot make two
leaders. Standbys keep their caches warm and act only while `is_leader()` holds; the leader stops acting
as soon as it could not renew within `renew_deadline` (before anyone else may take over).

Unlike client-go, which counts from the read that *showed* the change (up to one retry period after the
leader wrote it) and then polls on (up to another retry period after expiry), a standby here counts from
the read before it, the earliest moment the change can have landed, and wakes at expiry itself: a dead
leader is replaced within the lease duration of its death instead of up to two retry periods later.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError

JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor: a retry may come this much later than retry_period
MIN_RETRY_PERIOD = 1.0  # seconds; each try is a GET (and a PUT when leading) per replica


@dataclass(frozen=True)
class LeaseTimings:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def errors(self) -> list[str]:
        """What would let two replicas lead at once, checked as client-go's NewLeaderElector does, plus what our
        Lease record needs: a leader stops acting after renew_deadline without a renewal, and a standby takes over
        only after lease_duration, so the deadline must end first, with room for a jittered retry in it."""
        errors = [f"--{flag}: must be greater than zero, got {value:g}s" for flag, value in (
            ("lease-duration", self.lease_duration), ("renew-deadline", self.renew_deadline),
            ("retry-period", self.retry_period)) if not value > 0]
        if errors:
            return errors
        if not float(self.lease_duration).is_integer():
            # The Lease stores whole seconds: 1.5s would be written as 1s and a standby would take over early.
            errors.append(f"--lease-duration: must be a whole number of seconds (the Lease stores "
                          f"leaseDurationSeconds), got {self.lease_duration:g}s")
        if self.lease_duration <= self.renew_deadline:
            errors.append(f"--lease-duration ({self.lease_duration:g}s) must be greater than --renew-deadline "
                          f"({self.renew_deadline:g}s): a standby could take over while the leader still acts")
        if self.renew_deadline <= JITTER_FACTOR * self.retry_period:
            errors.append(f"--renew-deadline ({self.renew_deadline:g}s) must be greater than --retry-period x "
                          f"{JITTER_FACTOR:g} ({JITTER_FACTOR * self.retry_period:g}s): the leader would lose "
                          f"the lease between two tries")
        if self.retry_period < MIN_RETRY_PERIOD:
            errors.append(f"--retry-period: must be at least {MIN_RETRY_PERIOD:g}s (each try is a request per "
                          f"replica to the API server), got {self.retry_period:g}s")
        return errors


def _rfc3339_micro(t: dt.datetime) -> str:
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: Kube, *, namespace: str, name: str, identity: str, log: logging.Logger,
                 timings: LeaseTimings = LeaseTimings(),
                 on_change: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep) -> None:
        self.kube, self.namespace, self.name, self.identity, self.log = kube, namespace, name, identity, log
        self.t = timings
        self.on_change = on_change
        self.clock, self.sleep = clock, sleep
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self._last_read_sent: float | None = None  # when we sent the last read that answered
        self._expires_at: float | None = None  # when another holder's lease runs out in our eyes
        self._renewed_at = 0.0  # monotonic time of our last successful acquire/renew
        self._leading = False

    @property
    def path(self) -> str:
        return f"/apis/coordination.k8s.io/v1/namespaces/{self.namespace}/leases/{self.name}"

    def is_leader(self) -> bool:
        """True only while our last renewal is younger than renew_deadline: a fence for every write."""
        return self._leading and self.clock() - self._renewed_at < self.t.renew_deadline

    def _set_leading(self, leading: bool) -> None:
        if leading != self._leading:
            self._leading = leading
            self.log.info("leadership changed", extra={"leading": leading, "identity": self.identity,
                                                        "lease": f"{self.namespace}/{self.name}"})
            if self.on_change:
                self.on_change(leading)

    async def _try_acquire_or_renew(self) -> bool:
        # Every request is bounded by the renew deadline, as client-go bounds its renew loop: an answer that comes
        # later is useless (the fence has closed), and waiting for it (the API server blocks while etcd is away)
        # would only delay the next try once the API server can answer again.
        now = dt.datetime.now(dt.UTC)
        spec = {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.t.lease_duration),
                "renewTime": _rfc3339_micro(now)}
        sent = self.clock()
        try:
            lease = await self.kube.request("GET", self.path, timeout=self.t.renew_deadline)
        except ApiError as e:
            if e.status != 404:
                raise
            self._last_read_sent = sent
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {**spec, "acquireTime": spec["renewTime"], "leaseTransitions": 0}}
            await self.kube.request("POST", self.path.rsplit("/", 1)[0], body=body, timeout=self.t.renew_deadline)
            return True
        old = lease.get("spec") or {}
        holder = old.get("holderIdentity") or ""
        record = (holder, str(old.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, self._changed_since(self._last_read_sent)
        self._last_read_sent = sent
        duration = float(old.get("leaseDurationSeconds") or self.t.lease_duration)
        self._expires_at = self._observed_at + duration if holder and holder != self.identity else None
        if self._expires_at is not None and self.clock() < self._expires_at:
            return False  # someone else holds a lease that has not expired in our eyes
        new_spec = dict(old)
        new_spec.update(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = spec["renewTime"]
            new_spec["leaseTransitions"] = int(old.get("leaseTransitions") or 0) + 1
        lease["spec"] = new_spec
        # PUT with the resourceVersion we read: two standbys racing for an expired lease cannot both win.
        await self.kube.request("PUT", self.path, body=lease, timeout=self.t.renew_deadline)
        return True

    def _changed_since(self, previous_read_sent: float | None) -> float:
        """When the record we just read differently can have changed, at the earliest, on our clock.

        The read before this one still showed the old record, and the API server answers reads from the latest
        write, so the change landed after that read was sent. Counting from there is safe only while the old
        holder's fence (renew_deadline from before its renewal landed) closes before the lease runs out on our
        count: never count from more than half of lease_duration - renew_deadline before now, which keeps half
        of client-go's slack for writes in flight when the fence closes. Our first read knows no earlier bound."""
        now = self.clock()
        if previous_read_sent is None:
            return now
        return max(previous_read_sent, now - (self.t.lease_duration - self.t.renew_deadline) / 2)

    def next_try_in(self) -> float:
        """A standby wakes when the holder's lease runs out in its eyes rather than up to a retry period later."""
        now = self.clock()
        if not self._leading and self._expires_at is not None and now < self._expires_at:
            return min(self.t.retry_period, self._expires_at - now)
        return self.t.retry_period

    async def run(self) -> None:
        while True:
            # The fence counts from before the request: a renewal that lands and then answers late must not
            # stretch our leadership past what a standby, which saw the new record when it landed, allows.
            started = self.clock()
            try:
                acquired = await self._try_acquire_or_renew()
            except ApiError as e:
                acquired = False
                if e.status != 409:  # a conflict is just a lost race
                    self.log.warning("lease request failed", extra={"error": str(e)})
            if acquired:
                self._renewed_at = started
                self._set_leading(True)
            elif not self.is_leader():
                self._set_leading(False)
            await self.sleep(self.next_try_in())

    async def release(self) -> None:
        """On clean shutdown: hand the lease over at once instead of making standbys wait it out."""
        if not self._leading:
            return
        self._set_leading(False)
        try:
            lease = await self.kube.get(self.path)
            if (lease.get("spec") or {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["leaseDurationSeconds"] = 1
                await self.kube.request("PUT", self.path, body=lease)
        except ApiError as e:
            self.log.warning("lease release failed", extra={"error": str(e)})
