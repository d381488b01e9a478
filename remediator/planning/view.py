"""What a strategy reads of the plan so far: one read-only view (`Gate.view`), taken from the plan's books.

The gate (gate.py) holds the verbs that decide or write; everything a strategy only reads is here, as read-only
references to the books' live collections (a later move of the same plan shows in them) and the functions that
answer a question about a node or a pod. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass

from remediator.model.plan import PlannedEviction
from remediator.model.records import PodRecord, Taint
from remediator.planning.memory import Remembered
from remediator.policy.scheduler import SchedulerSettings


@dataclass(frozen=True)
class PlanView:
    decided: Set[str]  # pod keys already evicted, protected or deferred this plan
    evicting: Set[str]  # pod keys planned for eviction this plan (by any strategy so far)
    excluded: Set[str]  # nodes no pod may move to: tainted, being tainted or emptied, or held back
    planned_taints: Mapping[str, Sequence[Taint]]  # node -> the taints this plan adds to it
    evict_taints: Mapping[str, Sequence[Taint]]  # node -> the taints it carries for a rule that evicts
    # pod uid -> the node its planned eviction counted on, for every eviction of this plan and under way
    moved_to: Mapping[str, str | None]
    leaving: Sequence[tuple[PodRecord, str | None]]  # evictions under way the snapshot does not show yet, and where to
    planned: Sequence[PlannedEviction]  # the evictions planned so far
    breaker_open: bool  # the circuit breaker holds a problem's taint back this plan
    scheduler: SchedulerSettings  # the policy's `scheduler` section: the profiles that place moved pods
    remembered: Remembered  # what the strategy returned to remember last time (Wants.remember)
    carrying: Mapping[str, float]  # nodes carrying the taint the strategy owns (strategy.py) -> the taint's age (s)
    usage: Callable[[str], dict[str, int]]  # what the node's pods request once this plan's moves are done
    by_room: Callable[[Iterable[str]], tuple[str, ...]]  # the names roomiest first: the order node fit tries them
    hold: Callable[[str], str | None]  # why a safety rail keeps evictions off the node, or None
    protection: Callable[[PodRecord], str | None]  # why the DefaultEvictor protects the pod, or None
    # PDB ("namespace/name") -> disruptions it still allows this plan, for each PDB selecting the pod
    pdb_headroom: Callable[[PodRecord], dict[str, int]]
    receiving: Callable[[str], bool]  # some pod planned to move this plan counts on room on the node
    exhausted: Callable[[], bool]  # the total eviction limit is used up: no strategy can add an eviction
