"""The `limits` section: how many pods one cycle may evict (per node, per namespace, in total), and the owner
cool-down."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from remediator.policy.reader import Reader, Section

_LIMITS_KEYS = ("maxNoOfPodsToEvictPerNode", "maxNoOfPodsToEvictPerNamespace", "maxNoOfPodsToEvictTotal",
                "ownerCooldown")


@dataclass(frozen=True)
class Limits:
    max_pods_to_evict_per_node: int | None = 10  # descheduler: maxNoOfPodsToEvictPerNode
    max_pods_to_evict_per_namespace: int | None = None  # maxNoOfPodsToEvictPerNamespace
    max_pods_to_evict_total: int | None = 50  # maxNoOfPodsToEvictTotal
    owner_cooldown: dt.timedelta = dt.timedelta(seconds=5)  # min interval between evictions of one owner's pods


def read_limits(r: Reader, top: Section) -> Limits:
    m = r.section(top, "limits", _LIMITS_KEYS)
    d = Limits()
    return Limits(
        max_pods_to_evict_per_node=r.optional_integer(m, "maxNoOfPodsToEvictPerNode", d.max_pods_to_evict_per_node),
        max_pods_to_evict_per_namespace=r.optional_integer(m, "maxNoOfPodsToEvictPerNamespace",
                                                           d.max_pods_to_evict_per_namespace),
        max_pods_to_evict_total=r.optional_integer(m, "maxNoOfPodsToEvictTotal", d.max_pods_to_evict_total),
        owner_cooldown=r.duration(m, "ownerCooldown", d.owner_cooldown),
    )
