"""Balance moves that land where the plan counted on (remediator/model/landing.py says how a replacement is pinned).

An eviction alone leaves the replacement to kube-scheduler, whose scores may put it straight back where it was (the
zone example's default scheduler did, one run in four): the plan's promise is then not kept. A landed move pins the
replacement to the node whose room the plan booked. One landing per workload at a time: a balance move of a workload
whose last replacement is not bound yet waits for a later plan, which sees that replacement where it is. A pinned pod
still pending at its deadline, or pinned to a node gone, going or cordoned against it since, is evicted (a pending pod's
eviction ignores PDBs) and made again, unpinned, by its controller: nothing is left pending for a node that cannot take
it, whichever leader is running then.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import secrets
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.tasks import keep
from remediator.actions.eviction_requests import EvictionResult, Outcome, evict
from remediator.actions.landing_writer import close_landing, left_open, open_landing
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.model.landing import LANDING_ANNOTATION, LANDING_PREFIX, Landing, pinned_until
from remediator.model.plan import PlannedEviction
from remediator.model.records import HOSTNAME_LABEL, NodeRecord, PodRecord, Taint
from remediator.policy.eviction import EvictionSettings
from remediator.scheduling.tolerations import tolerated
from remediator.state.caches import ClusterCache

CORDON = Taint("node.kubernetes.io/unschedulable")  # what a cordon is to a toleration (NoSchedule)
POLL = 0.2  # seconds between looks at the pod cache while a replacement is awaited (an in-memory read)


class LandingOutcome(StrEnum):
    LANDED = "landed"  # bound to the planned node
    ELSEWHERE = "elsewhere"  # bound to another node: the pin did not hold (a hostname label changed meanwhile)
    UNGUIDED = "unguided"  # the replacement came unpinned: no admission policy, or it had not seen the Landing yet
    STUCK = "stuck"  # pinned and still pending at the deadline: evicted, to be made again unpinned
    NONE = "none"  # no replacement by the deadline (the workload shrank, or its controller is gone)


class Landings:
    def __init__(self, *, kube: Kube, cache: ClusterCache, alerts: Alerts, count: Callable[[str], None],
                 missed: Callable[[Landing], None], log: logging.Logger, namespace: str,
                 clock: Callable[[], dt.datetime],
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.kube, self.cache, self.alerts, self.count, self.log = kube, cache, alerts, count, log
        self.missed = missed  # a landing whose replacement may have come back: the loop detector watches it after all
        self.namespace = namespace  # the remediator's own: the admission policy's binding reads Landings there
        self.clock, self.sleep = clock, sleep
        self.busy: dict[str, Landing] = {}  # owner uid -> the landing under way for that workload
        self.tasks: set[asyncio.Task[Any]] = set()  # follows and unpins under way (`run --once` waits for them)
        self.unpinning: set[str] = set()  # UIDs of the stuck pods asked to go: once each (a refusal: the next leader)
        self.cleared = False  # the Landings a previous leader left are gone

    def waits(self, e: PlannedEviction) -> bool:
        """A move of a workload whose previous landing is under way: the next plan decides it again."""
        owner = e.pod.controller
        return owner is not None and owner.uid in self.busy

    def plan(self, e: PlannedEviction, settings: EvictionSettings, now: dt.datetime) -> Landing | None:
        """The landing for a balance move, or None: landing off, no destination (or the pod's own node: a new node
        from the autoscaler), no controller to make a replacement, or no hostname label naming the node alone."""
        owner = e.pod.controller
        if settings.landing != "planned" or e.destination is None or e.destination == e.pod.node_name \
                or owner is None or (node := self.cache.nodes.get(e.destination)) is None:
            return None
        hostname = node.labels.get(HOSTNAME_LABEL, "")
        if not hostname or sum(1 for n in self.cache.nodes.values()
                               if n.labels.get(HOSTNAME_LABEL) == hostname) != 1:
            return None
        return Landing(name=f"{LANDING_PREFIX}{secrets.token_hex(4)}", namespace=e.pod.namespace,
                       owner_uid=owner.uid, owner=f"{owner.kind}/{owner.name}", node=e.destination,
                       hostname=hostname, moved=e.pod.key, source=e.pod.node_name, decided=now,
                       before=frozenset(p.uid for p in self.cache.pods_by_owner.get(owner.uid, {}).values()),
                       strategy=e.strategy, lasts=settings.landing_deadline, deadline=now + settings.landing_deadline)

    def hold(self, landing: Landing) -> None:
        self.busy[landing.owner_uid] = landing

    def attempt_hooks(self, landing: Landing) -> tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]]:
        """What `evict` runs before each attempt and after each refusal: the Landing exists only around attempts, so a
        pod the workload makes while a PDB refuses the move (a scale-up) is not pinned."""
        return (lambda: self.open(landing.owner_uid)), (lambda: self.close(self.busy.get(landing.owner_uid, landing)))

    async def open(self, owner_uid: str) -> None:
        """Before an eviction attempt: the landing's deadline counts from now. A failed write leaves the move unpinned
        (it lands as an eviction always did, and is counted `unguided`), never the eviction unsent."""
        landing = self.busy[owner_uid] = dataclasses.replace(self.busy[owner_uid],
                                                             deadline=self.clock() + self.busy[owner_uid].lasts)
        try:
            await open_landing(self.kube, self.namespace, landing)
        except ApiError as e:
            self.log.warning("landing not opened; the move's replacement goes wherever kube-scheduler puts it",
                             extra={"landing": landing.name, "pod": landing.moved, "error": str(e)})

    async def close(self, landing: Landing) -> None:
        try:
            await close_landing(self.kube, self.namespace, landing.name)
        except ApiError as e:  # left for the next leader's clear_left_open, or our own next start
            self.log.warning("landing not closed", extra={"landing": landing.name, "error": str(e)})

    async def dropped(self, landing: Landing) -> None:
        """The eviction was not made: nothing to land."""
        await self.close(self.busy.get(landing.owner_uid, landing))
        self.busy.pop(landing.owner_uid, None)

    def start_follow(self, landing: Landing) -> None:
        keep(self.tasks, self.follow(landing))

    def unpin_stuck(self, settings: EvictionSettings, may_act: Callable[[], bool], now: dt.datetime) -> None:
        """Evict each pinned pod that cannot land (stuck_pods), once."""
        if self.unpinning:  # forget the pods gone or bound since
            self.unpinning &= {p.uid for p in self.cache.pending.values()}
        for pod in stuck_pods(self.cache, now):
            if pod.uid not in self.unpinning:
                self.unpinning.add(pod.uid)
                keep(self.tasks, self.unpin(pod, settings, may_act))

    async def follow(self, landing: Landing) -> LandingOutcome:
        """After the eviction: close the Landing once the replacement is seen, then judge where it was bound."""
        return (await self.settle(landing))[0]

    async def settle(self, landing: Landing) -> tuple[LandingOutcome, PodRecord | None]:
        """`follow`, with the replacement as last seen (None: none came)."""
        landing = self.busy.get(landing.owner_uid, landing)  # as its last attempt opened it
        try:
            outcome, pod = await self._follow(landing)
        finally:
            self.busy.pop(landing.owner_uid, None)
        self.count(str(outcome))
        if outcome in (LandingOutcome.UNGUIDED, LandingOutcome.ELSEWHERE, LandingOutcome.STUCK):
            self.missed(landing)
        what = f"{landing.strategy} moved {landing.moved} to {landing.node}"
        if outcome == LandingOutcome.LANDED and pod is not None:
            await self.alerts.pod(pod, kind=AlertKind.LANDED, type_="Normal", reason="NodemedicLanded",
                                  message=f"bound to {landing.node} as planned: {what}",
                                  details={"landing": landing.name, "strategy": landing.strategy})
        elif pod is not None:
            await self.alerts.pod(pod, kind=AlertKind.LANDING_MISSED, type_="Warning", reason="NodemedicLandingMissed",
                                  message=f"{outcome}: {what}; " + _MISSED[outcome].format(node=pod.node_name),
                                  details={"landing": landing.name, "strategy": landing.strategy})
        else:
            self.log.info("no replacement for a landed move", extra={"landing": landing.name, "pod": landing.moved,
                                                                     "owner": landing.owner})
        return outcome, pod

    async def _follow(self, landing: Landing) -> tuple[LandingOutcome, PodRecord | None]:
        try:
            while (seen := self._replacement(landing)) is None:
                if self.clock() >= landing.deadline:
                    return LandingOutcome.NONE, None
                await self.sleep(POLL)
        finally:
            await self.close(landing)
        pod, pinned = seen
        if not pinned:
            return LandingOutcome.UNGUIDED, pod
        while True:
            current = self.cache.pods.get(pod.key)
            if current is None or current.uid != pod.uid:
                return LandingOutcome.NONE, pod  # deleted by someone before it was bound
            if current.node_name:
                return (LandingOutcome.LANDED if current.node_name == landing.node else LandingOutcome.ELSEWHERE,
                        current)
            if self.clock() >= landing.deadline:
                return LandingOutcome.STUCK, current  # the reaper evicts it (stuck_pods)
            await self.sleep(POLL)

    def _replacement(self, landing: Landing) -> tuple[PodRecord, bool] | None:
        """The first pod of the workload made since the move: (pod, pinned by this landing)."""
        for _, pod in sorted(self.cache.pods_by_owner.get(landing.owner_uid, {}).items()):
            if pod.uid in landing.before or not pod.live:  # UIDs: a StatefulSet's replacement has the same name
                continue
            mark = pinned_until(pod.annotations.get(LANDING_ANNOTATION, ""))
            return pod, mark is not None and mark[0] == landing.name
        return None

    async def unpin(self, pod: PodRecord, settings: EvictionSettings, may_act: Callable[[], bool]) -> EvictionResult:
        """Evict a pinned pod still pending past its deadline (stuck_pods): a pending pod's eviction ignores PDBs, and
        its controller makes it again without the pin (the Landing is closed by then)."""
        e = PlannedEviction(pod, "Landing", f"pinned by {pod.annotations.get(LANDING_ANNOTATION, '')} and still "
                                            "pending past the landing's deadline")
        result = await evict(self.kube, e, settings, may_act=may_act, log=self.log)
        self.log.info("pinned pod evicted, to be made again unpinned" if result.outcome == Outcome.EVICTED
                      else "pinned pod not evicted", extra={"pod": pod.key, "outcome": str(result.outcome),
                                                            "detail": result.detail})
        return result

    async def clear_left_open(self) -> None:
        """Once per leadership: delete the Landings a previous leader left open, so no pod is pinned for a move
        nobody follows (the pods they pinned already are the reaper's, by their annotation's deadline)."""
        if self.cleared:
            return
        try:
            for name in await left_open(self.kube, self.namespace):
                if name.startswith(LANDING_PREFIX):
                    await close_landing(self.kube, self.namespace, name)
                    self.log.info("landing left open by a previous leader closed", extra={"landing": name})
        except ApiError as e:
            self.log.warning("landings left open not read; tried again next cycle", extra={"error": str(e)})
            return
        self.cleared = True


_MISSED = {
    LandingOutcome.ELSEWHERE: "bound to {node} instead",
    LandingOutcome.UNGUIDED: "created without the pin (is the chart's MutatingAdmissionPolicy installed?); "
                             "kube-scheduler placed it",
    LandingOutcome.STUCK: "still pending at the landing's deadline: evicted, to be made again unpinned",
    LandingOutcome.NONE: "deleted before it was bound",
}


def stuck_pods(cache: ClusterCache, now: dt.datetime) -> list[PodRecord]:
    """Pinned pods still pending past their deadline, or pinned to a node that is gone, going or cordoned against them
    since (no need to wait for the deadline then), whoever pinned them: evicted, to be made again unpinned."""
    pinned = [(pod, mark[1]) for pod in cache.pending.values() if LANDING_ANNOTATION in pod.annotations
              and (mark := pinned_until(pod.annotations[LANDING_ANNOTATION])) is not None
              and pod.live and pod.controller is not None]
    if not pinned:  # every cycle asks: the nodes are walked only when a pinned pod waits
        return []
    hosts: dict[str | None, list[NodeRecord]] = {}
    for n in cache.nodes.values():
        if not n.deleting:
            hosts.setdefault(n.labels.get(HOSTNAME_LABEL), []).append(n)
    return sorted((pod for pod, deadline in pinned
                   if deadline <= now or not any(_takes(n, pod) for n in hosts.get(
                       pod.node_selector.get(HOSTNAME_LABEL), ()))),
                  key=lambda p: p.key)


def _takes(node: NodeRecord, pod: PodRecord) -> bool:
    """A cordon keeps out only the pods that do not tolerate it, as kube-scheduler's NodeUnschedulable filter does
    (pods that tolerate it: DaemonSet-like ones, those of a migration step whose target was cordoned mid-move)."""
    return not node.unschedulable or tolerated(pod.tolerations, CORDON)
