"""What the planner remembers between cycles. The controller owns it, records the evictions it starts in it and
hands it to every plan: evictions under way are planner input (planning/leaving.py), so a plan is final when it
leaves the planner.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field

from remediator.model.plan import SchedulerLoop
from remediator.model.records import PodRecord
from remediator.planning.leaving import Leaving, still_leaving
from remediator.state.snapshot import Snapshot

# A balance strategy does not move a pod off a node when the pod replaced one of its owner's pods that a balance
# strategy moved off that same node this recently: it came back, so it would again (descheduler's eviction
# loops, #994, #1695).
LOOP_GUARD = dt.timedelta(hours=1)

# A strategy's own memory: a key it chooses (a node, a pod uid) -> when it last did something about it.
Remembered = Mapping[str, dt.datetime]


@dataclass
class PlannerMemory:
    clear_since: dict[tuple[str, str], dt.datetime] = field(default_factory=dict)
    owner_last_eviction: dict[str, dt.datetime] = field(default_factory=dict)
    # (owner uid, node) -> when a balance strategy last moved one of the owner's pods off the node
    moved_off: dict[tuple[str, str], dt.datetime] = field(default_factory=dict)
    # owner uid -> its live pods when a balance strategy last planned to move one: pods created since, beyond that
    # number, are a scale-up or a rollout, not replacements (planning/scheduler_loops.py)
    owner_size: dict[str, int] = field(default_factory=dict)
    # owner uid -> the scheduler loop holding the workload from balance moves (planning/scheduler_loops.py)
    loops: dict[str, SchedulerLoop] = field(default_factory=dict)
    # strategy name -> what it returned to remember (Wants.remember); each strategy reads only its own
    strategies: dict[str, Remembered] = field(default_factory=dict)
    # pod uid -> an eviction started whose pod the caches may still show: booked as moved by every cycle until the
    # snapshot no longer holds the pod (planning/leaving.py)
    leaving: dict[str, Leaving] = field(default_factory=dict)
    # engine -> the name of its open Migration (proposed, running or reverting): set by control/migrations.py from the
    # Migration objects before each plan
    open_migrations: dict[str, str] = field(default_factory=dict)

    def record_eviction(self, pod: PodRecord, *, balance: bool, now: dt.datetime,
                        destination: str | None = None, pinned: bool = False) -> None:
        """`pinned`: a landed move (control/landings.py), whose replacement cannot come back to the node it left: not
        watched for a scheduler loop unless its landing misses (`moved_back_possible`)."""
        self.leaving[pod.uid] = Leaving(pod, destination, now)
        owner = pod.controller
        if owner is None:
            return
        self.owner_last_eviction[owner.uid] = now
        if balance and not pinned:
            self.moved_off[(owner.uid, pod.node_name)] = now

    def moved_back_possible(self, owner_uid: str, node: str, moved_at: dt.datetime) -> None:
        """A landed move whose replacement came unpinned or stuck: watched for a scheduler loop after all."""
        self.moved_off[(owner_uid, node)] = max(moved_at, self.moved_off.get((owner_uid, node), moved_at))

    def forget_eviction(self, uid: str) -> None:
        """The eviction was not made (refused, failed, aborted), or is old news: the pod counts where it is again."""
        self.leaving.pop(uid, None)

    def forget_left(self, snapshot: Snapshot) -> list[tuple[PodRecord, str | None]]:
        """Forget the evictions whose pods the snapshot no longer holds; the others, to book as moved."""
        staying = still_leaving(snapshot, self.leaving)
        held = {pod.uid for pod, _ in staying}
        for uid in [u for u in self.leaving if u not in held]:
            del self.leaving[uid]
        return staying

    def forget_before(self, horizon: dt.datetime) -> None:
        for key in [k for k, t in self.moved_off.items() if t < horizon]:
            del self.moved_off[key]
        moved = {owner for owner, _ in self.moved_off}
        for owner in [o for o in self.owner_size if o not in moved and o not in self.loops]:
            del self.owner_size[owner]
