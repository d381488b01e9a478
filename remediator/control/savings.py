"""Which of the placement engine's nominations became rooms, and for how long (remediator/model/savings.py).

The controller tells `claim` of each pending pod it nominated; every cycle while leading, `observe` looks at the
caches: a claimed pod bound to a node that existed before the nomination opens a room (priced by the policy from
that node's labels) if a node autoscaler would have added a node like it (planning/new_node.py: without one there
was no scale-out to avoid, only a pod that would have waited); one bound to a node made after it (the autoscaler
bought one anyway) or still unbound after CLAIM_TTL opens none. An open room closes when its pod is gone,
terminating, finished or on another node. The ledger is read once when this replica starts leading and written when
a room opens or closes; a write that fails is tried again next cycle, merged into the stored one after a conflict.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from remediator.actions.savings_writer import LedgerStore
from remediator.alerts.savings_metrics import SavingsMetrics
from remediator.model.plan import Nomination
from remediator.model.records import NodeRecord, PodRecord
from remediator.model.savings import Ledger, LedgerError, Room, accrued, close, prune, seat
from remediator.planning.new_node import who_adds
from remediator.policy.model import Policy
from remediator.policy.repair import POOL_LABELS
from remediator.policy.savings import SavingsSettings
from remediator.state.snapshot import Snapshot

CLAIM_TTL = dt.timedelta(minutes=15)  # a nominated pod unbound this long was not seated by its room
# After a failed read or write of the ledger, the next try waits this long: a cycle can come every 0.2 s, and an
# unreadable ledger or a refused write would otherwise cost a request each one.
RETRY_AFTER = dt.timedelta(seconds=30)
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


@dataclass(frozen=True)
class Claim:
    pod: str  # "namespace/name"
    node: str  # the node its evictions free
    at: dt.datetime


def pool_of(labels: Mapping[str, str]) -> str:
    return next((labels[k] for k in POOL_LABELS if k in labels), "")


class Savings:
    def __init__(self, *, kube: Kube, namespace: str, name: str, metrics: SavingsMetrics,
                 log: logging.Logger) -> None:
        self.store, self.metrics, self.log = LedgerStore(kube, namespace, name), metrics, log
        self.claims: dict[str, Claim] = {}  # pod uid -> its nomination
        self.ledger: Ledger | None = None  # None until read (again) as this replica leads
        self.dirty = False  # changed since the last write
        self.accrued_to: dt.datetime | None = None  # the counters hold the open rooms' hours up to here
        self.unreadable = ""  # the stored ledger's problem, said once
        self.retry_at: dt.datetime | None = None  # no read or write of the ledger before this, after a failure

    def claim(self, nomination: Nomination, now: dt.datetime) -> None:
        self.claims[nomination.pod.uid] = Claim(nomination.pod.key, nomination.node, now)

    def stepped_down(self) -> None:
        """Not leading: the next leader's ledger is the stored one; ours is read again if we lead again."""
        self.ledger, self.accrued_to, self.dirty, self.retry_at = None, None, False, None

    async def observe(self, nodes: Mapping[str, NodeRecord], pods: Mapping[str, PodRecord], policy: Policy,
                      planned: Snapshot, now: dt.datetime) -> None:
        """`planned`: the last plan's snapshot, for the node autoscalers it counted on."""
        waiting = self.retry_at is not None and now < self.retry_at
        if self.ledger is None and (waiting or not await self._load(now)):
            return
        assert self.ledger is not None
        settings = policy.savings
        ledger = self._seat_claimed(self.ledger, nodes, pods, now,
                                    adder=lambda n: who_adds(n, policy.autoscaler.adds_nodes, planned.autoscalers),
                                    settings=settings)
        self._count(ledger, now, settings)
        for room in ledger.open:
            pod = pods.get(room.pod)
            if pod is None or pod.uid != room.uid or pod.node_name != room.node or pod.terminating \
                    or pod.phase in ("Succeeded", "Failed"):
                ledger = close(ledger, room.uid, now)
                self.log.info("room closed: its pod no longer runs where it was seated",
                              extra={"pod": room.pod, "node": room.node, "pool": room.pool,
                                     "hours": round((now - room.since).total_seconds() / 3600, 4)})
        if settings.currency and ledger.currency != settings.currency and (ledger.days or ledger.open):
            ledger = Ledger(settings.currency, ledger.days, ledger.open)
        ledger = prune(ledger, settings.keep_days, now)
        if ledger != self.ledger:
            self.ledger, self.dirty = ledger, True
        self.metrics.show(ledger)
        if self.dirty and not waiting:
            await self._save(now)

    def _seat_claimed(self, ledger: Ledger, nodes: Mapping[str, NodeRecord], pods: Mapping[str, PodRecord],
                      now: dt.datetime, *, adder: Callable[[NodeRecord], tuple[str | None, str]],
                      settings: SavingsSettings) -> Ledger:
        """A room for each claimed pod bound since to a node that existed before its nomination, in a pool an
        autoscaler would have grown."""
        for uid, c in list(self.claims.items()):
            pod = pods.get(c.pod)
            if pod is None or pod.uid != uid or now - c.at > CLAIM_TTL:
                del self.claims[uid]
            elif pod.node_name:
                del self.claims[uid]
                node = nodes.get(pod.node_name)
                if node is None or node.created is None or node.created > c.at:
                    self.log.info("nominated pod placed on a node made after its nomination: no saving",
                                  extra={"pod": c.pod, "node": pod.node_name})
                    continue
                who, why = adder(node)
                if who is None:
                    self.log.info("nominated pod placed without a new node, but none would have come: no saving",
                                  extra={"pod": c.pod, "node": node.name, "why": why or "autoscaler.addsNodes: false"})
                    continue
                room = Room(pod=c.pod, uid=uid, node=node.name, pool=pool_of(node.labels),
                            instance_type=node.labels.get(INSTANCE_TYPE_LABEL, ""),
                            per_hour=settings.price_for(node.labels), since=now)
                ledger = seat(ledger, room)
                self.log.info("room seated without a new node", extra={
                    "pod": c.pod, "node": node.name, "pool": room.pool, "instanceType": room.instance_type,
                    "perHour": room.per_hour})
        return ledger

    def _count(self, ledger: Ledger, now: dt.datetime, settings: SavingsSettings) -> None:
        if self.accrued_to is not None:
            self.metrics.add(accrued(ledger, self.accrued_to, now), settings.currency)
        self.accrued_to = now

    async def _load(self, now: dt.datetime) -> bool:
        self.retry_at = now + RETRY_AFTER  # cleared once read
        try:
            self.ledger = await self.store.load()
        except ApiError as e:
            self.log.warning("savings ledger not read; trying again next cycle", extra={
                "ledger": self.store.where, "error": str(e)})
            return False
        except LedgerError as e:  # kept as it is: a person reads the error and repairs or deletes the object
            if str(e) != self.unreadable:
                self.log.error("savings ledger unreadable; no savings are recorded until it is repaired or deleted",
                               extra={"error": str(e)})
            self.unreadable = str(e)
            return False
        self.unreadable, self.retry_at = "", None
        return True

    async def _save(self, now: dt.datetime) -> None:
        assert self.ledger is not None
        try:
            await self.store.save(self.ledger)
            self.dirty, self.retry_at = False, None
        except ApiError as e:
            self.retry_at = now + RETRY_AFTER
            self.log.warning("savings ledger not written; trying again next cycle", extra={
                "ledger": self.store.where, "error": str(e)})
            if e.status == 409:  # another writer came between: its version is read, and ours merged into it
                await self._merge()

    async def _merge(self) -> None:
        """After a conflict: the stored ledger's day totals (the other writer's) with our open rooms added."""
        mine = self.ledger
        try:
            stored = await self.store.load()
        except (ApiError, LedgerError):
            return  # tried again next cycle, from our ledger
        assert mine is not None
        merged = stored
        for room in mine.open:
            merged = seat(merged, room)
        self.ledger = merged
