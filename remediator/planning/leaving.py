"""Evictions already made that the caches may not show yet: what every later cycle counts as moved.

An eviction's effects reach the caches in steps, each a watch event that can lag the eviction by any time under
load: the pod first shows a deletionTimestamp (still holding its requests on the node: the scheduler counts it
until it is gone), then it goes, then its replacement appears and is placed. A cycle planned from any snapshot in
between sees the source node as full as before while the pod is no longer a candidate, and would pick other pods
off the same node: evictions beyond the plan (issue 25: 4 moves planned, 7 made within 0.4 s). So from the moment
the controller starts an eviction until the snapshot no longer holds the pod, each cycle books it as the cycle that
planned it did: gone from its node, arriving where the move counted on, decided (no strategy picks it again).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from remediator.model.records import PodRecord
from remediator.state.snapshot import Snapshot


@dataclass(frozen=True)
class Leaving:
    pod: PodRecord
    destination: str | None  # the node the move counted on (PlannedEviction.destination)
    since: dt.datetime  # when the controller started the eviction


def still_leaving(snapshot: Snapshot, leaving: Mapping[str, Leaving]) -> list[tuple[PodRecord, str | None]]:
    """(the pod as the snapshot holds it now, its destination) for each eviction whose pod the snapshot still holds
    on its node. A pod the snapshot no longer holds is gone for good (a uid never comes back): nothing to book."""
    wanted: dict[str, dict[str, Leaving]] = {}
    for uid, entry in leaving.items():
        wanted.setdefault(entry.pod.node_name, {})[uid] = entry
    out = []
    for node, entries in wanted.items():
        for pod in snapshot.pods(node):
            found = entries.get(pod.uid)
            if found is not None:
                out.append((pod, found.destination))
    return out
