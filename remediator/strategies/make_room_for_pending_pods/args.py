"""MakeRoomForPendingPods' arguments, their defaults and their validation."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.fields import read_evictable_namespaces
from remediator.policy.migrations import read_approval
from remediator.policy.reader import Reader, Section

_KEYS = ("maxEvictionsPerPod", "chainDepth", "timeBudget", "maxPendingPods", "retryAfter", "evictableNamespaces",
         "approval")
# More than this many evictions to seat one pod disrupts more than a new node costs; deeper chains than this
# are never worth their search time.
MAX_EVICTIONS_PER_POD, MAX_CHAIN_DEPTH = 6, 3


@dataclass(frozen=True)
class MakeRoomForPendingPodsArgs:
    max_evictions_per_pod: int = 2  # the most pods evicted (chains included) to seat one pending pod
    chain_depth: int = 1  # links of a chain: 0 = evicted pods go only where there is room now
    time_budget: dt.timedelta = dt.timedelta(seconds=1)  # for the whole search of one cycle
    max_pending_pods: int = 20  # pending pods made room for per cycle, highest priority and oldest first
    # once room was made for a pod, no more for it for this long: its evictions, their replacements and the
    # scheduler's retry take a while, and a second plan meanwhile would evict for nothing
    retry_after: dt.timedelta = dt.timedelta(minutes=2)
    evictable_namespaces_exclude: tuple[str, ...] = ()
    # automatic: its moves are made as the cycle plans them, the pending pod nominated first; required: each cycle's
    # moves are a Migration a person approves (a pending pod waits for that person: automatic by default).
    approval: str = "automatic"


def read_args(r: Reader, strategy: Section) -> MakeRoomForPendingPodsArgs:
    m = r.section(strategy, "args", _KEYS)
    d = MakeRoomForPendingPodsArgs()
    evictions = r.integer(m, "maxEvictionsPerPod", d.max_evictions_per_pod, minimum=1)
    if evictions > MAX_EVICTIONS_PER_POD:
        r.error(m.values["maxEvictionsPerPod"], m.at("maxEvictionsPerPod"),
                f"must be at most {MAX_EVICTIONS_PER_POD}, got {evictions}: more evictions to seat one pod "
                "disrupt more than the node they save")
        evictions = d.max_evictions_per_pod
    depth = r.integer(m, "chainDepth", d.chain_depth)
    if depth > MAX_CHAIN_DEPTH:
        r.error(m.values["chainDepth"], m.at("chainDepth"), f"must be at most {MAX_CHAIN_DEPTH}, got {depth}")
        depth = d.chain_depth
    budget = r.duration(m, "timeBudget", d.time_budget, positive=True)
    if budget > dt.timedelta(seconds=10):
        r.error(m.values["timeBudget"], m.at("timeBudget"),
                "must be at most 10s: the search runs inside the planning cycle")
        budget = d.time_budget
    return MakeRoomForPendingPodsArgs(
        max_evictions_per_pod=evictions,
        chain_depth=depth,
        time_budget=budget,
        max_pending_pods=r.integer(m, "maxPendingPods", d.max_pending_pods, minimum=1),
        retry_after=r.duration(m, "retryAfter", d.retry_after, positive=True),
        evictable_namespaces_exclude=read_evictable_namespaces(r, m),
        approval=read_approval(r, m, d.approval),
    )
