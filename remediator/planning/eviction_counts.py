"""Per-cycle eviction limits (per node, per namespace, total) and the per-owner cool-down.

`LimitState` keeps one cycle's books, one candidate at a time: the gate asks `refusal` before paying for
a node-fit search, and calls `take` for each eviction it commits. Candidates keep their order, so the first ones
that fit the limits are evicted and the rest wait for a later cycle (as Protected entries in `Plan.deferred`, so
the plan says why a pod is still there).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from nodemedic_common.durations import format_duration, whole_seconds
from remediator.model.records import PodRecord
from remediator.policy.limits import Limits


@dataclass
class LimitState:
    limits: Limits
    now: dt.datetime
    owner_last_eviction: dict[str, dt.datetime]  # a private copy: evictions taken here start a cool-down now
    taken: int = 0
    per_node: Counter[str] = field(default_factory=Counter)
    per_namespace: Counter[str] = field(default_factory=Counter)

    def refusal(self, pod: PodRecord) -> str | None:
        """Why `pod` must wait for a later cycle, or None when it may be evicted now."""
        lim = self.limits
        owner = pod.controller
        last = self.owner_last_eviction.get(owner.uid) if owner is not None else None
        if owner is not None and last is not None and self.now - last < lim.owner_cooldown:
            ago = format_duration(whole_seconds(self.now - last))
            return (f"owner cool-down: {owner.kind}/{owner.name} had a pod evicted {ago} ago "
                    f"(cool-down {format_duration(lim.owner_cooldown)})")
        used_up = self.used_up(pod.node_name)
        if used_up is not None:
            return used_up
        if (lim.max_pods_to_evict_per_namespace is not None
                and self.per_namespace[pod.namespace] >= lim.max_pods_to_evict_per_namespace):
            return f"limit: maximum {lim.max_pods_to_evict_per_namespace} evictions per namespace reached in " \
                   f"{pod.namespace}"
        return None

    def exhausted(self) -> bool:
        """The total limit is used up: no eviction can be added this cycle."""
        total = self.limits.max_pods_to_evict_total
        return total is not None and self.taken >= total

    def used_up(self, node: str) -> str | None:
        """Why no further eviction may come off `node` this cycle (the total or the node's limit), or None."""
        lim = self.limits
        if self.exhausted():
            return f"limit: maximum {lim.max_pods_to_evict_total} evictions per cycle reached"
        per_node = lim.max_pods_to_evict_per_node
        if per_node is not None and self.per_node[node] >= per_node:
            return f"limit: maximum {per_node} evictions per node reached on {node}"
        return None

    def take(self, pod: PodRecord) -> None:
        self.taken += 1
        self.per_node[pod.node_name] += 1
        self.per_namespace[pod.namespace] += 1
        owner = pod.controller
        if owner is not None:
            self.owner_last_eviction[owner.uid] = self.now

    def refusal_together(self, first: PodRecord, second: PodRecord) -> str | None:
        """Why `second` must wait once `first` is taken as well (two evictions that go together, or neither)."""
        trial = LimitState(self.limits, self.now, dict(self.owner_last_eviction), self.taken, Counter(self.per_node),
                           Counter(self.per_namespace))
        trial.take(first)
        return trial.refusal(second)
