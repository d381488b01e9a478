"""What zone exposure keeps from one plan for the next (in the snapshot's `derived`, state/derived.py): each owner's
workload and live pods per zone with the pod list they were counted from, each workload's owners and exposure, and
the workloads in order.

Why: a settled 20,000-node cluster has 42,000 owners. Asking each one's kept counts, grouping them by workload and
sorting the workloads again cost 0.4 s of every 4 s quiet cycle (`make bench-steady`), where between two cycles few
owners' pods change. An owner is counted again only when the cache hands a new list for it (state/caches.py: the
list's identity is its version), a workload's exposure worked out again only when one of its owners was or went, and
the workloads sorted again only when one came or went. All of it holds within one context (each node's zone, the
zones, the share), compared once a plan; another forgets everything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from remediator.model.plan import ZoneExposure
from remediator.model.records import PodRecord

Workload = tuple[str, str]  # (namespace, "Kind/name")


@dataclass(frozen=True, slots=True)
class OwnerZones:
    """One owner's replicated workload, or None for a pod no such controller owns, and its live pods per zone."""

    workload: Workload | None
    per_zone: dict[str, int]


@dataclass
class KeptExposures:
    context: object = None
    # owner uid -> the pod list it was counted from, and its counts
    owners: dict[str, tuple[list[PodRecord], OwnerZones]] = field(default_factory=dict)
    members: dict[Workload, list[str]] = field(default_factory=dict)  # workload -> its owners (a list: most have one)
    exposures: dict[Workload, ZoneExposure | None] = field(default_factory=dict)
    order: list[Workload] | None = None  # `exposures`' workloads sorted; None when one came or went since

    def within(self, context: object) -> KeptExposures:
        """Serve what was kept under an equal `context` only."""
        if context != self.context:
            self.owners.clear()
            self.members.clear()
            self.exposures.clear()
            self.order = None
            self.context = context
        return self

    def exposures_of(self, pods_by_owner: dict[str, list[PodRecord]], count: Callable[[list[PodRecord]], OwnerZones],
                     expose: Callable[[Workload, dict[str, int]], ZoneExposure | None]) -> list[ZoneExposure]:
        """Every workload's exposure in workload order, from `pods_by_owner` (a snapshot's): `count` for the owners
        whose list is new, `expose` (a workload and its live pods per zone) for the workloads those touch."""
        touched = self._count(pods_by_owner, count)
        for workload in touched:
            owners = self.members.get(workload)
            if owners is None:
                del self.exposures[workload]
                self.order = None
                continue
            if workload not in self.exposures:
                self.order = None
            self.exposures[workload] = expose(workload, self._per_zone(owners))
        if self.order is None:
            self.order = sorted(self.exposures)
        exposures = self.exposures
        return [e for w in self.order if (e := exposures[w]) is not None]

    def _count(self, pods_by_owner: dict[str, list[PodRecord]],
               count: Callable[[list[PodRecord]], OwnerZones]) -> set[Workload]:
        """Count the owners whose list is new and forget those gone: the workloads either touched."""
        touched: set[Workload] = set()
        owners = self.owners
        for owner, pods in pods_by_owner.items():
            was = owners.get(owner)
            if was is not None:
                if was[0] is pods:
                    continue
                self._leave(owner, was[1], touched)
            found = count(pods)
            owners[owner] = (pods, found)
            if found.workload is not None:
                self.members.setdefault(found.workload, []).append(owner)
                touched.add(found.workload)
        if len(owners) > len(pods_by_owner):  # every owner of the snapshot is in `owners` now: the others are gone
            for owner in [o for o in owners if o not in pods_by_owner]:
                self._leave(owner, owners.pop(owner)[1], touched)
        return touched

    def _per_zone(self, owners: list[str]) -> dict[str, int]:
        """The workload's live pods per zone, its owners' together (a rollout's revisions count as one workload)."""
        if len(owners) == 1:
            return self.owners[owners[0]][1].per_zone
        per_zone: dict[str, int] = {}
        for owner in owners:
            for zone, n in self.owners[owner][1].per_zone.items():
                per_zone[zone] = per_zone.get(zone, 0) + n
        return per_zone

    def _leave(self, owner: str, found: OwnerZones, touched: set[Workload]) -> None:
        if found.workload is None:
            return
        owners = self.members[found.workload]
        owners.remove(owner)
        if not owners:
            del self.members[found.workload]
        touched.add(found.workload)
