"""The remediator's loop: watch caches → plan → (if leading and not dry-run) taint writer and evictor.

A cycle runs when the caches change, when a timer in the plan comes due (a condition's `for`, a taint's
`recoverAfter`), or every `resync` seconds. Planning is pure and cheap; writing happens only here, only
while this replica holds the Lease, and never in dry-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from nodemedic_common.kube_client import Kube
from nodemedic_common.kube_errors import ApiError
from nodemedic_common.repair_contract import REPAIR_ANNOTATION, RepairAction
from nodemedic_common.tasks import keep
from remediator.actions.eviction_requests import EvictionResult, Outcome, evict
from remediator.actions.fence_writer import FenceWriter
from remediator.actions.nominator import nominate
from remediator.actions.repair_writer import RepairWriter
from remediator.actions.taintwriter import write_node_taints
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.dry_run import DryRunReport
from remediator.alerts.memory_headroom import MemoryHeadroom
from remediator.alerts.metrics import Metrics
from remediator.alerts.plan_announcements import PlanAnnouncements
from remediator.control.landings import Landings
from remediator.control.leader import LeaderElector
from remediator.control.migrations import Migrations
from remediator.control.planner import PlannerMemory, make_plan
from remediator.control.policy_reload import PolicyReload
from remediator.control.savings import Savings
from remediator.control.taints_seen import TAINT_SEEN_WITHIN, evictions_waiting
from remediator.model.landing import Landing
from remediator.model.plan import Plan, PlannedEviction, TaintChange
from remediator.planning import owned_taints
from remediator.policy.model import OWNED_TAINTS_ANNOTATION
from remediator.read_side.why import why
from remediator.read_side.why_answer import WhyAnswer
from remediator.repair.state import LadderState, StateError, parse_state
from remediator.state.autoscaler_detection import AutoscalerDetector
from remediator.state.caches import ClusterCache
from remediator.state.heap import HeapFreezer
from remediator.state.measured.reader import UsageReader
from remediator.state.snapshot import Snapshot
from remediator.strategies import lookup

MIN_CYCLE_INTERVAL = 0.2  # seconds between planning cycles at most
RECENT_EVICTION_MEMORY = 600.0  # seconds a pod we evicted is never planned again (the cache may lag)


class Controller:
    def __init__(self, *, kube: Kube, cache: ClusterCache, policy: PolicyReload, alerts: Alerts, metrics: Metrics,
                 log: logging.Logger, elector: LeaderElector | None, dry_run: bool, usage: UsageReader | None = None,
                 autoscalers: AutoscalerDetector | None = None, memory_headroom: MemoryHeadroom | None = None,
                 resync: float = 10.0, landing_namespace: str = "", savings_ledger: str = "",
                 taint_seen_within: float = TAINT_SEEN_WITHIN,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.cache, self.policy, self.alerts, self.metrics = kube, cache, policy, alerts, metrics
        self.log, self.elector, self.dry_run, self.resync = log, elector, dry_run, resync
        self.taint_seen_within = taint_seen_within  # how long evictions wait for a new taint in the node watch
        self.clock, self.monotonic = clock, monotonic
        self.usage = usage  # measured usage for metricsUtilization; None: requests only
        self.autoscalers = autoscalers  # the node autoscalers addsNodes: auto counts on; None: none looked for
        self.memory_headroom = memory_headroom  # None: not watched (tests)
        self.memory, self.heap = PlannerMemory(), HeapFreezer()
        self.plan = Plan()
        self.snapshot: Snapshot | None = None  # the last plan's, for /why
        self.in_flight: dict[str, asyncio.Task[EvictionResult]] = {}  # pod uid -> eviction task
        self.recently_evicted: dict[str, float] = {}  # pod uid -> monotonic time
        self.announcements = PlanAnnouncements(alerts, metrics, monotonic)
        self.dry_run_report = DryRunReport(metrics, log)
        self.last_cycle = monotonic()
        self.background: set[asyncio.Task[None]] = set()  # fire-and-forget announcements, kept referenced
        self.repairs = RepairWriter(kube, alerts, metrics.repair, log)
        self.fences = FenceWriter(kube, alerts, metrics.dark, log)
        self.replacing: dict[str, LadderState] = {}  # node -> its ladder, while the node autoscaler replaces it
        # Balance moves' replacements pinned to their planned node (control/landings.py); "" namespace: not pinned.
        self.landings = Landings(kube=kube, cache=cache, alerts=alerts, log=log, namespace=landing_namespace,
                                 count=lambda outcome: metrics.landings.labels(outcome).inc(), clock=clock,
                                 missed=self._watch_for_loops) \
            if landing_namespace else None
        # The engines' moves a person approves, run step by step on the landings (control/migrations.py).
        self.migrations = Migrations(kube=kube, cache=cache, landings=self.landings, alerts=alerts, log=log,
                                     namespace=landing_namespace, memory=self.memory, may_act=self.may_act,
                                     count=lambda engine, outcome: metrics.migrations.labels(engine, outcome).inc()) \
            if self.landings is not None else None
        # The scale-outs the placement engine avoided: a ledger (ConfigMap `savings_ledger`) beside the Lease.
        self.savings = Savings(kube=kube, namespace=landing_namespace, name=savings_ledger, metrics=metrics.savings,
                               log=log) if savings_ledger and landing_namespace else None

    def why(self, node: str) -> WhyAnswer:
        """/why/NODE: every fact the last plan decided on for `node` (remediator/read_side/why.py)."""
        if self.snapshot is None:
            return WhyAnswer.before_planning(node)
        return WhyAnswer.of(node, self.snapshot.now, why(node, self.snapshot, self.policy.current, self.plan))

    def may_act(self) -> bool:
        return not self.dry_run and (self.elector is None or self.elector.is_leader())

    def leading(self) -> bool:
        """This replica holds the Lease (or runs without one): its plan is the one applied."""
        return self.elector is None or self.elector.is_leader()

    # --- loop ----------------------------------------------------------------------------------
    async def run(self) -> None:
        await self.cache.wait_synced()
        self.log.info("caches synced", extra={"nodes": len(self.cache.nodes), "pods": len(self.cache.pods)})
        while True:
            self.heap.maybe_freeze()
            await self._wait_for_work()
            try:
                await self.cycle()
            except Exception:  # a bug or odd data must not stop remediation: log it, keep the loop alive
                self.log.exception("planning cycle failed")
                await asyncio.sleep(1.0)

    async def run_once(self, sync_timeout: float) -> tuple[int, str]:
        """One cycle, for a Job or a CronJob: wait for the caches, plan, act, wait for every eviction (each up to
        its retry deadline) and every Event. (0, summary), or (1, why) when the cluster could not be read or an
        eviction failed; a pod a PDB still protects at the deadline is not a failure: the next run tries again."""
        try:
            await asyncio.wait_for(self.cache.wait_synced(), sync_timeout)
        except TimeoutError:
            return 1, f"the caches did not sync within {sync_timeout:g}s (is the API server reachable?)"
        plan = await self.cycle()
        results = await asyncio.gather(*self.in_flight.values())
        await asyncio.gather(*(self.landings.tasks if self.landings else ()),  # each ends by its deadline
                             *(self.migrations.tasks if self.migrations else ()))
        await asyncio.gather(*self.background, *self.policy.background, return_exceptions=True)
        counts = {o: sum(1 for r in results if r.outcome == o) for o in Outcome}
        summary = (f"{len(plan.taints_add)} tainted, {len(plan.taints_remove)} untainted, "
                   + ", ".join(f"{n} {o}" for o, n in counts.items() if n) + f"; {len(plan.deferred)} deferred")
        if counts[Outcome.FAILED]:
            return 1, f"{counts[Outcome.FAILED]} eviction(s) failed: {summary}"
        return 0, summary

    async def _wait_for_work(self) -> None:
        timeout = self.resync
        if self.plan.next_check is not None:
            due = (self.plan.next_check - self.clock()).total_seconds()
            timeout = max(0.0, min(timeout, due + 0.01))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.cache.changed.wait(), timeout)
        # Coalesce a burst of watch events into one cycle, and cap the cycle rate under constant pod churn
        # (a big cluster changes all the time; planning it 5 times a second is plenty for a 1 s latency goal).
        since = self.monotonic() - self.last_cycle
        await asyncio.sleep(max(0.02, MIN_CYCLE_INTERVAL - since))
        self.cache.changed.clear()

    async def cycle(self) -> Plan:
        self.policy.poll()
        now = self.clock()
        # Outside the cycle's time (the snapshot and the plan): measured usage (read at most every 15 s, if asked)
        measured = await self.usage.read(self.policy.current, self.cache.nodes, now) \
            if self.usage is not None else None
        # Likewise the node autoscalers (two GETs at start and every few minutes, only for addsNodes: auto).
        autoscalers = await self.autoscalers.current(self.policy.current) \
            if self.autoscalers is not None else frozenset()
        if self.migrations is not None and self.leading():
            await self.migrations.read(self.policy.current)  # which engines wait for an open migration
        t0 = time.perf_counter()
        with self.heap.cycle():  # what the cycle keeps for the next is frozen with the caches (state/heap.py)
            snapshot = self.cache.snapshot(now, autoscalers=autoscalers)
            if measured is not None:
                snapshot.measured = measured
            self._forget_old_evictions()  # before planning: the planner's memory of them expires with them
            # The evictions under way are in the memory (planning/leaving.py): the plan is final as it comes back.
            plan = make_plan(snapshot, self.policy.current, self.memory)
        self.metrics.cycle_seconds.observe(time.perf_counter() - t0)
        self.plan, self.snapshot = plan, snapshot
        self.last_cycle = self.monotonic()
        self.metrics.tainted_limit.set(plan.tainted_limit)
        self.metrics.breaker_open.set(1 if plan.breaker_open else 0)
        if self.memory_headroom is not None:
            self.memory_headroom.after_cycle(lambda: (len(snapshot.nodes), sum(
                len(p) for p in snapshot.pods_by_node.values()) + len(snapshot.pending)))
        if self.leading():
            await self.announcements.notices(plan, write=not self.dry_run)
            await self.announcements.zone_exposure(plan, write=not self.dry_run,
                                                   max_series=self.policy.current.scheduler.max_exposure_series)
            await self.announcements.scheduler_loops(plan, write=not self.dry_run)
            await self.announcements.dark_nodes(plan, write=not self.dry_run)
        for strategy, report in plan.reports.items():
            if (show := self.metrics.reports.get(strategy)) is not None:
                show(report)
        self.metrics.repair.show(plan.repair)
        if self.dry_run:
            self.dry_run_report.report(plan)
        elif self.may_act():
            await self._act(plan, now)
        else:
            self._standing_by()
        return plan

    def _standing_by(self) -> None:
        if self.landings is not None:
            self.landings.cleared = False  # a leader meanwhile may leave landings open for us to close
        if self.savings is not None:
            self.savings.stepped_down()  # the next leader's ledger is the stored one

    async def _act(self, plan: Plan, now: dt.datetime) -> None:
        await self._apply(plan, now)
        if self.migrations is not None:
            await self.migrations.apply(plan.proposals, self.policy.current, now,
                                        window_open=self.policy.current.window.is_open(now))
        await self._apply_repairs(plan, now)
        if self.savings is not None and self.snapshot is not None:  # the autoscalers the plan counted on
            await self.savings.observe(self.cache.nodes, self.cache.pods, self.policy.current, self.snapshot, now)
        await self.fences.apply(plan.dark, self._as_planned, now)  # dark nodes (planning/dark_nodes.py)

    # --- acting --------------------------------------------------------------------------------
    async def _apply(self, plan: Plan, now: dt.datetime) -> None:
        failed_nodes = await self._apply_taints(plan, now)
        await self.announcements.held(plan)
        failed_nodes |= await evictions_waiting(plan, failed_nodes, self.cache.nodes, within=self.taint_seen_within,
                                                log=self.log)
        # Nominate each pending pod for the node its evictions free before evicting (actions/nominator.py says
        # why); a pod that cannot be nominated gets no evictions: the room would go to whoever comes first.
        skip: set[str] = set()
        for made in [n for report in plan.reports.values() for n in report.nominations()]:
            why = await nominate(self.kube, made.pod, made.node) if self.may_act() else "not leading"
            if why is not None:
                self.log.warning("pending pod not nominated; its evictions are skipped",
                                 extra={"pod": made.pod.key, "node": made.node, "error": why})
                skip.update(made.moved)
                continue
            if self.savings is not None:
                self.savings.claim(made, now)
            self.log.info(made.message, extra={"event": made.reason, "pod": made.pod.key, "node": made.node,
                                               "moved": list(made.moved)})
            keep(self.background, self.alerts.object(
                namespace=made.pod.namespace, type_="Normal", reason=made.reason, message=made.message,
                involved={"kind": "Pod", "apiVersion": "v1", "name": made.pod.name, "namespace": made.pod.namespace,
                          "uid": made.pod.uid}))
        if self.landings is not None and self.policy.current.eviction.landing == "planned":
            await self.landings.clear_left_open()
        for e in plan.evictions:
            if e.pod.node_name in failed_nodes or e.pod.key in skip:
                continue  # its taint did not land or is not seen yet (evicting now would only invite the pod back),
                # or no nomination
            if self.landings is not None and lookup(e.strategy).kind == "balance" and self.landings.waits(e):
                continue  # the next plan decides it again, with the last replacement where it was bound
            self._start_eviction(e, now)
        if self.landings is not None:
            self.landings.unpin_stuck(self.policy.current.eviction, self.may_act, now)
        tainted = sum(1 for n in self.cache.nodes.values() if OWNED_TAINTS_ANNOTATION in n.annotations
                      and owned_taints.parse_owned(n.annotations[OWNED_TAINTS_ANNOTATION])[0])
        self.metrics.tainted_nodes.set(tainted)

    async def _apply_repairs(self, plan: Plan, now: dt.datetime) -> None:
        """The repair ladders' writes, after the taints (a step follows its rule's taint; remediator/repair/)."""
        r = plan.repair
        for node in [n for n in self.replacing if n not in self.cache.nodes]:
            state = self.replacing.pop(node)  # the node autoscaler took it away: the replace step did its work
            self.metrics.repair.finished.labels("replace", "repaired").inc()
            self.metrics.repair.seconds.labels("replace").observe((now - state.started).total_seconds())
            await self.alerts.node(node, kind=AlertKind.REPAIRED, type_="Normal", reason="NodemedicRepaired",
                                   message=f"{state.rule}: the node was replaced and is gone",
                                   details={"rule": state.rule, "action": "replace"})
        for node, problem in sorted(r.unreadable.items()):
            if self.may_act() and (record := self.cache.nodes.get(node)) is not None:
                self.log.warning("unreadable repair annotation", extra={"node": node, "error": problem})
                await self.repairs.forget(node, problem, resource_version=record.resource_version)
        for e in r.ends:
            if self.may_act() and (record := self.cache.nodes.get(e.node)) is not None:
                self.replacing.pop(e.node, None)
                await self.repairs.end(e, resource_version=record.resource_version, now=now)
        for s in r.starts:
            record = self.cache.nodes.get(s.node)
            if not self.may_act() or record is None:
                continue
            try:
                prior = parse_state(record.annotations[REPAIR_ANNOTATION]).history \
                    if REPAIR_ANNOTATION in record.annotations else ()
            except StateError:
                prior = ()
            if await self.repairs.start(s, resource_version=record.resource_version, prior=prior) \
                    and s.state.action == RepairAction.REPLACE:
                self.replacing[s.node] = s.state

    def _as_planned(self, node: str) -> dict[str, Any] | None:
        """The node's taints and resourceVersion if it is still as the plan saw it, else None: a node that changed
        since (its kubelet back, a person's write) waits for the next plan."""
        base = self.cache.raw_nodes.get(node)
        planned = self.snapshot.nodes.get(node) if self.snapshot is not None else None
        if not self.may_act() or base is None or planned is None \
                or base["resourceVersion"] != planned.resource_version:
            return None
        return base

    async def _apply_taints(self, plan: Plan, now: dt.datetime) -> set[str]:
        by_node: dict[str, tuple[list[TaintChange], list[TaintChange]]] = defaultdict(lambda: ([], []))
        for c in plan.taints_add:
            by_node[c.node][0].append(c)
        for c in plan.taints_remove:
            by_node[c.node][1].append(c)
        failed: set[str] = set()
        # Nodes that only lose taints first: the plan keeps the tainted count within the breaker once its removals
        # are done, and adding before removing would exceed it for as long as the writes (and alerts) in between take.
        for node, (adds, removes) in sorted(by_node.items(), key=lambda item: (bool(item[1][0]), item[0])):
            if not self.may_act():
                return set(by_node)
            record = self.cache.nodes.get(node)
            current = owned_taints.parse_owned((record.annotations if record else {}).get(OWNED_TAINTS_ANNOTATION))[0]
            try:
                written = await write_node_taints(self.kube, node, base=self.cache.raw_nodes.get(node),
                                                  conditions=record.conditions if record else (), adds=adds,
                                                  removes=removes, owned=current, now=now)
            except ApiError as e:
                failed.add(node)
                self.log.error("taint write failed", extra={"node": node, "error": str(e)})
                continue
            for message, c in written.unwritten():
                self.log.info(message, extra={
                    "node": node, "taint": c.taint.key, "change": "add" if c in adds else "remove", "cause": c.cause})
            if any(c in adds for c in written.deferred):
                failed.add(node)  # not tainted as planned: none of its evictions this cycle
            for c in written.added:
                self.metrics.taint_changes.labels("add", c.taint.key).inc()
                await self.alerts.node(node, kind=AlertKind.TAINTED, type_="Warning", reason="NodemedicTainted",
                                       message=f"tainted {c.taint.key}={c.taint.value}:{c.taint.effect}: {c.cause}",
                                       details={"rule": ",".join(c.rules), "taint": c.taint.key})
            for c in written.removed:
                self.metrics.taint_changes.labels("remove", c.taint.key).inc()
                await self.alerts.node(node, kind=AlertKind.UNTAINTED, type_="Normal", reason="NodemedicUntainted",
                                       message=f"removed {c.taint.key}:{c.taint.effect}: {c.cause}",
                                       details={"rule": ",".join(c.rules), "taint": c.taint.key})
        return failed

    def _start_eviction(self, e: PlannedEviction, now: dt.datetime) -> None:
        # The cool-down (and a balance move's loop guard) starts when we decide, not when the eviction lands.
        # From here until the caches no longer hold the pod, every cycle books it as moved (planning/leaving.py).
        balance = lookup(e.strategy).kind == "balance"
        landing = self.landings.plan(e, self.policy.current.eviction, now) \
            if self.landings is not None and balance else None
        if landing is not None and self.landings is not None:
            self.landings.hold(landing)
        self.memory.record_eviction(e.pod, balance=balance, now=now, destination=e.destination,
                                    pinned=landing is not None)
        task = asyncio.create_task(self._evict(e, landing))
        self.in_flight[e.pod.uid] = task
        self.metrics.evictions_in_flight.set(len(self.in_flight))

    async def _evict(self, e: PlannedEviction, landing: Landing | None = None) -> EvictionResult:
        policy, landings = self.policy.current, self.landings
        before, after = landings.attempt_hooks(landing) if landing and landings else (None, None)
        try:
            result = await evict(self.kube, e, policy.eviction, may_act=self.may_act, log=self.log,
                                 before_attempt=before, after_refusal=after)
        finally:
            self.in_flight.pop(e.pod.uid, None)
        self.metrics.evictions.labels(e.strategy, str(result.outcome)).inc()
        self.metrics.evictions_in_flight.set(len(self.in_flight))  # with its outcome: no await between the two
        if landing is not None and landings is not None:
            if result.outcome == Outcome.EVICTED:
                landings.start_follow(landing)
            else:
                await landings.dropped(landing)
        if result.outcome in (Outcome.EVICTED, Outcome.GONE):
            self.recently_evicted[e.pod.uid] = self.monotonic()
        else:
            self.memory.forget_eviction(e.pod.uid)  # not made: the pod stays, and counts where it is again
        if result.outcome == Outcome.GONE:  # someone else removed it: no Event of ours, but the log says so
            self.log.info("pod gone before its eviction", extra={"pod": e.pod.key, "node": e.pod.node_name,
                                                                "strategy": e.strategy, "detail": result.detail})
        if result.outcome == Outcome.EVICTED:
            await self.alerts.pod(e.pod, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                                  message=f"evicted from {e.pod.node_name} by {e.strategy}: {e.reason}"
                                          + (f" ({result.detail})" if result.detail else ""),
                                  details={"strategy": e.strategy, "attempts": str(result.attempts)})
        elif result.outcome == Outcome.REFUSED:
            await self.alerts.pod(e.pod, kind=AlertKind.EVICTION_REFUSED, type_="Warning",
                                  reason="NodemedicEvictionRefused",
                                  message=f"eviction still refused after {result.attempts} attempts "
                                          f"({result.seconds:.0f}s): {result.detail}",
                                  details={"strategy": e.strategy})
        elif result.outcome == Outcome.FAILED:
            await self.alerts.pod(e.pod, kind=AlertKind.EVICTION_FAILED, type_="Warning",
                                  reason="NodemedicEvictionFailed", message=f"eviction failed: {result.detail}",
                                  details={"strategy": e.strategy})
        self.cache.changed.set()  # re-plan: the next pod of this owner may now be due
        return result

    def _watch_for_loops(self, missed: Landing) -> None:
        self.memory.moved_back_possible(missed.owner_uid, missed.source, missed.decided)

    def _forget_old_evictions(self) -> None:
        horizon = self.monotonic() - RECENT_EVICTION_MEMORY
        for uid in [u for u, t in self.recently_evicted.items() if t < horizon]:
            del self.recently_evicted[uid]
            self.memory.forget_eviction(uid)  # a pod that refuses to go this long is planned afresh
