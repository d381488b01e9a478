"""The loop detector: a balance strategy moved a workload's pods off nodes, and the scheduler kept placing the
replacements right back there (RETURNS of them within LOOP_GUARD; one alone may be chance, and the loop guard
already keeps that one replacement where it is; pods created while the workload grew past its size at the move are
a scale-up or a rollout's, not replacements). The scheduler disagrees with the policy (it scores those nodes
higher than the ones the strategy counted on), so every further balance move of the workload would loop the same
way (descheduler #994, #1695): the workload is held from balance moves for LOOP_GUARD, and the plan says why (the
controller adds a metric and an Event). Deschedule strategies, which enforce a rule the pod breaks, are not held.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Set

from remediator.model.plan import Plan, SchedulerLoop
from remediator.model.records import PodRecord
from remediator.planning.memory import LOOP_GUARD, PlannerMemory
from remediator.state.snapshot import Snapshot

RETURNS = 2


def held_loops(snapshot: Snapshot, memory: PlannerMemory) -> list[SchedulerLoop]:
    """The workloads held now, the ones found this cycle among them; forgets the holds that ended."""
    now = snapshot.now
    for uid in [u for u, loop in memory.loops.items() if loop.until <= now]:
        del memory.loops[uid]
    returned: dict[str, list[tuple[PodRecord, dt.datetime]]] = {}  # owner uid -> its replacements back, when moved
    for (owner_uid, node), moved_at in sorted(memory.moved_off.items()):
        size = memory.owner_size.get(owner_uid)
        live = sum(1 for p in snapshot.pods_by_owner.get(owner_uid, ()) if p.live)
        if owner_uid in memory.loops or (size is not None and live > size):
            continue
        # creationTimestamp has whole seconds: a pod created in the second of the move may be its replacement.
        returned.setdefault(owner_uid, []).extend(
            (p, moved_at) for p in snapshot.pods_by_owner.get(owner_uid, ()) if p.live and p.node_name == node
            and p.created is not None and p.created >= moved_at.replace(microsecond=0))
    for owner_uid, back in returned.items():
        owner = back[0][0].controller if back else None
        if len(back) < RETURNS or owner is None:
            continue
        pod, moved_at = back[-1]
        memory.loops[owner_uid] = SchedulerLoop(pod.namespace, f"{owner.kind}/{owner.name}", owner_uid,
                                                pod.node_name, moved_at, now, now + LOOP_GUARD)
    return sorted(memory.loops.values(), key=lambda loop: (loop.namespace, loop.owner))


def remember_sizes(plan: Plan, snapshot: Snapshot, memory: PlannerMemory, balance: Set[str]) -> None:
    """The size of every workload a `balance` strategy plans to move a pod of, for `held_loops` to compare with: the
    largest seen while its moves are remembered. A later move planned while earlier evictions' pods are gone and their
    replacements not yet made counts fewer; keeping that smaller size would take every replacement for a scale-up and
    hide the loop (a fresh-clone run saw all 6 pods of a workload evicted that way, and no loop found)."""
    for e in plan.evictions:
        owner = e.pod.controller
        if owner is not None and e.strategy in balance:
            live = sum(1 for p in snapshot.pods_by_owner.get(owner.uid, ()) if p.live)
            memory.owner_size[owner.uid] = max(memory.owner_size.get(owner.uid, 0), live)
