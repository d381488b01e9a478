"""The remediator's loop: watch caches → plan → (if leading and not dry-run) taint writer and evictor.

A cycle runs when the caches change, when a timer in the plan comes due (a condition's `for`, a taint's
`recoverAfter`), or every `resync` seconds. Planning is pure and cheap; writing happens only here, only
while this replica holds the Lease, and never in dry-run.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from nodemedic_common.config_errors import ConfigError
from remediator.actions.evictor import EvictionResult, Outcome, evict
from remediator.actions.nominator import nominate
from remediator.actions.taintwriter import write_node_taints
from remediator.alerts.alert import AlertKind
from remediator.alerts.announcer import Alerts
from remediator.alerts.metrics import Metrics
from remediator.heap import HeapFreezer
from remediator.leader import LeaderElector
from remediator.model import HoldReason, Plan, PlannedEviction, TaintChange
from remediator.planner import PlannerMemory, plan_cycle
from remediator.planning import taints as owned_taints
from remediator.policy.loader import load_policy
from remediator.policy.model import OWNED_TAINTS_ANNOTATION, Policy
from remediator.policy.secret_files import DEFAULT_SECRETS_DIR, read_secret_bytes
from remediator.state.autoscaler_detection import AutoscalerDetector
from remediator.state.caches import ClusterCache
from remediator.state.kube import ApiError, Kube
from remediator.state.usage_reader import UsageReader
from remediator.strategies import lookup

MIN_CYCLE_INTERVAL = 0.2  # seconds between planning cycles at most
RECENT_EVICTION_MEMORY = 600.0  # seconds a pod we evicted is never planned again (the cache may lag)
# Seconds a held taint is remembered after it was last held: one that comes back within this is not announced again
# (a condition flapping under an open breaker would otherwise raise an Event and a notification at every flap).
HELD_MEMORY = 600.0


class PolicySource:
    """The policy file, re-read when its content changes, or the content of a file it reads a notification secret
    from (a rotated key in a mounted Secret); a bad new file keeps the last good policy."""

    def __init__(self, path: str, policy: Policy, *, secrets_dir: str = DEFAULT_SECRETS_DIR) -> None:
        self.path = Path(path)
        self.policy = policy
        self.secrets_dir = secrets_dir
        self.stat = self._stat()
        self.digest = self._digest()

    def _files(self) -> list[Path]:
        return [self.path, *(Path(f) for f in self.policy.notifications.secret_files)]

    def _stat(self) -> tuple[tuple[float, int, int], ...]:
        stats = []
        for file in self._files():
            try:
                st = file.stat()
            except OSError:
                stats.append((0.0, 0, 0))
                continue
            stats.append((st.st_mtime, st.st_size, st.st_ino))
        return tuple(stats)

    def _digest(self) -> str:
        try:
            policy = hashlib.sha256(self.path.read_bytes())
        except OSError:
            return ""
        for file in self._files()[1:]:
            try:  # bounded and regular files only, as the loader reads them: the file may have changed since
                policy.update(hashlib.sha256(read_secret_bytes(str(file), self.secrets_dir)).digest())
            except OSError:
                policy.update(b"unreadable")  # reported by the reload that follows
        return policy.hexdigest()

    def poll(self) -> tuple[bool, list[str]]:
        """(changed to a new good policy, errors of a bad new file). Cheap when nothing changed: one stat()."""
        stat = self._stat()
        if stat == self.stat:
            return False, []
        self.stat = stat  # a ConfigMap update swaps a symlink: the inode changes even when mtime does not
        digest = self._digest()
        if not digest or digest == self.digest:
            return False, []
        self.digest = digest
        try:
            self.policy = load_policy(self.path, secrets_dir=self.secrets_dir)
        except ConfigError as e:
            return False, e.errors
        except Exception as e:  # noqa: BLE001 - a loader bug on odd input (a RecursionError was one) must still be
            # counted and announced as a rejected policy, not skipped in silence by the cycle's own handler.
            return False, [f"{self.path}: <document>: the policy could not be loaded: {type(e).__name__}: {e}"]
        self.stat, self.digest = self._stat(), self._digest()  # the new policy may read other secret files
        return True, []


class Controller:
    def __init__(self, *, kube: Kube, cache: ClusterCache, source: PolicySource, alerts: Alerts, metrics: Metrics,
                 log: logging.Logger, elector: LeaderElector | None, dry_run: bool, lease_namespace: str,
                 lease_name: str, usage: UsageReader | None = None,
                 autoscalers: AutoscalerDetector | None = None, resync: float = 10.0,
                 clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self.kube, self.cache, self.source, self.alerts, self.metrics = kube, cache, source, alerts, metrics
        self.log, self.elector, self.dry_run = log, elector, dry_run
        self.lease_namespace, self.lease_name = lease_namespace, lease_name
        self.resync = resync
        self.clock, self.monotonic = clock, monotonic
        self.usage = usage  # measured usage for metricsUtilization; None: requests only
        self.autoscalers = autoscalers  # the node autoscalers addsNodes: auto counts on; None: none looked for
        self.memory = PlannerMemory()
        self.heap = HeapFreezer()
        self.plan = Plan()
        self.in_flight: dict[str, asyncio.Task[EvictionResult]] = {}  # pod uid -> eviction task
        self.recently_evicted: dict[str, float] = {}  # pod uid -> monotonic time
        self.held_seen: dict[tuple[str, str, HoldReason], float] = {}  # (node, taint, reason) -> when last held
        self.dry_run_seen: set[str] = set()
        self.breaker_was_open = False
        self.crash_loops_seen: set[tuple[str, str, str]] = set()  # (node, namespace, owner) announced and in the gauge
        self.last_cycle = monotonic()
        self.background: set[asyncio.Task[None]] = set()  # fire-and-forget announcements, kept referenced

    def may_act(self) -> bool:
        return not self.dry_run and (self.elector is None or self.elector.is_leader())

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
        await asyncio.gather(*self.background, return_exceptions=True)
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
        self._reload_policy()
        now = self.clock()
        # Measured usage first (a read of its own at most every 15 s, only when a strategy asks for it), outside
        # the cycle's time: the cycle is the snapshot of the caches and the plan.
        measured = await self.usage.read(self.source.policy, self.cache.nodes, now) \
            if self.usage is not None else None
        # Likewise the node autoscalers (two GETs at start and every few minutes, only for addsNodes: auto).
        autoscalers = await self.autoscalers.current(self.source.policy) \
            if self.autoscalers is not None else frozenset()
        t0 = time.perf_counter()
        snapshot = self.cache.snapshot(now, autoscalers=autoscalers)
        if measured is not None:
            snapshot.measured = measured
        self._forget_old_evictions()  # before planning: the planner's memory of them expires with them
        plan = plan_cycle(snapshot, self.source.policy, self.memory)
        self.metrics.cycle_seconds.observe(time.perf_counter() - t0)
        plan.evictions = [e for e in plan.evictions
                          if e.pod.uid not in self.in_flight and e.pod.uid not in self.recently_evicted]
        self.plan = plan
        self.last_cycle = self.monotonic()
        self.metrics.tainted_limit.set(plan.tainted_limit)
        self.metrics.breaker_open.set(1 if plan.breaker_open else 0)
        await self._announce_crash_loops(plan)
        if plan.fragmentation is not None:
            self.metrics.fragmentation_pending.set(len(plan.fragmentation.pending))
            for resource in ("cpu", "memory"):
                self.metrics.fragmentation_stranded.labels(resource).set(plan.fragmentation.stranded.get(resource, 0))
        if plan.resource_mix is not None:
            self.metrics.resource_mix_deviation.labels("before").set(plan.resource_mix.before)
            self.metrics.resource_mix_deviation.labels("after").set(plan.resource_mix.after)
        if self.dry_run:
            self._report_dry_run(plan)
        elif self.may_act():
            await self._apply(plan, now)
        return plan

    # --- acting --------------------------------------------------------------------------------
    async def _apply(self, plan: Plan, now: dt.datetime) -> None:
        failed_nodes = await self._apply_taints(plan, now)
        await self._announce_held(plan)
        # Nominate each pending pod for the node its evictions free before evicting (actions/nominator.py says
        # why); a pod that cannot be nominated gets no evictions: the room would go to whoever comes first.
        skip: set[str] = set()
        for made in plan.fragmentation.made_room if plan.fragmentation is not None else ():
            why = await nominate(self.kube, made.pod, made.node) if self.may_act() else "not leading"
            if why is not None:
                self.log.warning("pending pod not nominated; its evictions are skipped",
                                 extra={"pod": made.pod.key, "node": made.node, "error": why})
                skip.update(made.moved)
                continue
            message = f"pending because free room is split across nodes: nodemedic moves pods to free {made.node}"
            self.log.info(message, extra={"event": "NodemedicMakingRoom", "pod": made.pod.key, "node": made.node,
                                          "moved": list(made.moved)})
            task = asyncio.get_running_loop().create_task(self.alerts.object(
                namespace=made.pod.namespace, type_="Normal", reason="NodemedicMakingRoom", message=message,
                involved={"kind": "Pod", "apiVersion": "v1", "name": made.pod.name, "namespace": made.pod.namespace,
                          "uid": made.pod.uid}))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        for e in plan.evictions:
            if e.pod.node_name in failed_nodes or e.pod.key in skip:
                continue  # its taint did not land (evicting now would only invite the pod back), or no nomination
            self._start_eviction(e, now)
        tainted = sum(1 for n in self.cache.nodes.values() if OWNED_TAINTS_ANNOTATION in n.annotations
                      and owned_taints.parse_owned(n.annotations[OWNED_TAINTS_ANNOTATION])[0])
        self.metrics.tainted_nodes.set(tainted)

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
                await write_node_taints(self.kube, node, base=self.cache.raw_nodes.get(node), adds=adds,
                                        removes=removes, owned=current, now=now)
            except ApiError as e:
                failed.add(node)
                self.log.error("taint write failed", extra={"node": node, "error": str(e)})
                continue
            for c in adds:
                self.metrics.taint_changes.labels("add", c.taint.key).inc()
                await self.alerts.node(node, kind=AlertKind.TAINTED, type_="Warning", reason="NodemedicTainted",
                                       message=f"tainted {c.taint.key}={c.taint.value}:{c.taint.effect}: {c.cause}",
                                       details={"rule": ",".join(c.rules), "taint": c.taint.key})
            for c in removes:
                self.metrics.taint_changes.labels("remove", c.taint.key).inc()
                await self.alerts.node(node, kind=AlertKind.UNTAINTED, type_="Normal", reason="NodemedicUntainted",
                                       message=f"removed {c.taint.key}:{c.taint.effect}: {c.cause}",
                                       details={"rule": ",".join(c.rules), "taint": c.taint.key})
        return failed

    async def _announce_held(self, plan: Plan) -> None:
        now = self.monotonic()
        for key in [k for k, t in self.held_seen.items() if now - t >= HELD_MEMORY]:
            del self.held_seen[key]
        for h in plan.held:
            key = (h.node, h.taint.key, h.reason)
            announced = key in self.held_seen
            self.held_seen[key] = now
            if announced:
                continue
            self.metrics.held.labels(str(h.reason)).inc()
            breaker = h.reason is HoldReason.CIRCUIT_BREAKER
            await self.alerts.node(h.node, kind=AlertKind.BREAKER_OPEN if breaker else AlertKind.HELD,
                                   type_="Warning",
                                   reason="NodemedicCircuitBreakerOpen" if breaker else "NodemedicHeld",
                                   message=f"not tainting {h.taint.key}: {h.why}",
                                   details={"rule": ",".join(h.rules)})
        if plan.breaker_open and not self.breaker_was_open:
            self.metrics.breaker_trips.inc()
        self.breaker_was_open = plan.breaker_open

    async def _announce_crash_loops(self, plan: Plan) -> None:
        """A node holding a workload's only restarting pods: a gauge while it lasts (dry-run too: it is an
        observation), and one Event when it starts (not in dry-run, which writes nothing). The leader only."""
        if self.elector is not None and not self.elector.is_leader():
            return
        current = {(c.node, c.namespace, c.owner): c for c in plan.crash_loop_nodes}
        for key in self.crash_loops_seen - set(current):
            self.metrics.crash_loop_node.remove(*key)
        for key, c in sorted(current.items()):
            self.metrics.crash_loop_node.labels(*key).set(len(c.restarting))
            if key not in self.crash_loops_seen and not self.dry_run:
                await self.alerts.node(c.node, kind=AlertKind.CRASH_LOOP_NODE, type_="Warning",
                                       reason="NodemedicCrashLoopNode", message=c.describe(),
                                       details={"namespace": c.namespace, "owner": c.owner,
                                                "pods": ",".join(c.restarting)})
        self.crash_loops_seen = set(current)

    def _start_eviction(self, e: PlannedEviction, now: dt.datetime) -> None:
        # The cool-down (and a balance move's loop guard) starts when we decide, not when the eviction lands.
        # From here until the caches no longer hold the pod, every cycle books it as moved (planning/leaving.py).
        self.memory.record_eviction(e.pod, balance=lookup(e.strategy).kind == "balance", now=now,
                                    destination=e.destination)
        task = asyncio.create_task(self._evict(e))
        self.in_flight[e.pod.uid] = task

    async def _evict(self, e: PlannedEviction) -> EvictionResult:
        policy = self.source.policy
        try:
            result = await evict(self.kube, e, policy.eviction, may_act=self.may_act, log=self.log)
        finally:
            self.in_flight.pop(e.pod.uid, None)
        self.metrics.evictions.labels(e.strategy, str(result.outcome)).inc()
        if result.outcome in (Outcome.EVICTED, Outcome.GONE):
            self.recently_evicted[e.pod.uid] = self.monotonic()
        else:
            self.memory.forget_eviction(e.pod.uid)  # not made: the pod stays, and counts where it is again
        if result.outcome == Outcome.EVICTED:
            await self.alerts.pod(e.pod, kind=AlertKind.EVICTED, type_="Normal", reason="NodemedicEvicted",
                                  message=f"evicted from {e.pod.node_name} by {e.strategy}: {e.reason}",
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

    def _forget_old_evictions(self) -> None:
        horizon = self.monotonic() - RECENT_EVICTION_MEMORY
        for uid in [u for u, t in self.recently_evicted.items() if t < horizon]:
            del self.recently_evicted[uid]
            self.memory.forget_eviction(uid)  # a pod that refuses to go this long is planned afresh

    # --- dry run and policy --------------------------------------------------------------------
    def _report_dry_run(self, plan: Plan) -> None:
        doc = plan.to_json()
        actions: list[tuple[str, dict[str, object]]] = []
        taints_doc = doc["taints"]
        assert isinstance(taints_doc, dict)
        actions += [("taint", a) for a in taints_doc["add"]] + [("untaint", a) for a in taints_doc["remove"]]
        evictions = doc["evictions"]
        assert isinstance(evictions, list)
        actions += [("evict", a) for a in evictions]
        current: set[str] = set()
        for kind, action in actions:
            # The action, not its explanation: a cause says "for 1h0m5s" and changes every cycle.
            key = f"{kind}:{sorted((k, v) for k, v in action.items() if k not in ('cause', 'reason'))}"
            current.add(key)
            if key not in self.dry_run_seen:
                self.metrics.dry_run_planned.labels(kind).inc()
                self.log.info("dry-run: would " + kind, extra={"dry_run": True, "action": action})
        self.dry_run_seen = current  # what the plan no longer holds is forgotten (and reported again if it returns)

    def _reload_policy(self) -> None:
        before = self.source.policy
        changed, errors = self.source.poll()
        if changed:
            self.metrics.policy_reloads.labels("ok").inc()
            self.log.info("policy reloaded", extra={"policy": str(self.source.path)})
            notifier = self.alerts.notifier
            if notifier is not None and self.source.policy.notifications != before.notifications:
                try:
                    notifier.reconfigure(self.source.policy.notifications)
                except ValueError as e:  # validated with the file, so only a bug gets here: keep the old sinks
                    self.log.error("notification sinks not reconfigured, keeping the old ones",
                                   extra={"policy": str(self.source.path), "error": str(e)})
        elif errors:
            self.metrics.policy_reloads.labels("error").inc()
            self.log.error("policy rejected, keeping the last good one",
                           extra={"policy": str(self.source.path), "errors": errors})
            if self.dry_run:
                return  # a dry run writes nothing, not even this Event
            message = f"policy {self.source.path} rejected, keeping the last good one: " + "; ".join(errors[:5])
            task = asyncio.get_running_loop().create_task(self.alerts.object(
                namespace=self.lease_namespace, type_="Warning", reason="NodemedicPolicyRejected", message=message,
                involved={"kind": "Lease", "apiVersion": "coordination.k8s.io/v1", "name": self.lease_name,
                          "namespace": self.lease_namespace}))
            self.background.add(task)
            task.add_done_callback(self.background.discard)
