"""What PodLifeTime keeps from one run for the next (in the snapshot's `derived`, state/derived.py): each node's
oldest pod's creation time among the pods in scope, with the pod list it was found from (and the scope).

Why: with `maxPodLifeTimeSeconds`, a pod younger than the maximum never goes, and at 20,000 nodes looking at every pod
of every node for the few old enough cost 0.4 s of a steady cycle (`make bench-steady`); a node whose oldest pod is
young enough is passed over whole.
"""

from __future__ import annotations

import datetime as dt

from remediator.model.records import PodRecord
from remediator.state.derived import PerList
from remediator.strategies.pod_scope import PodScope


class OldestPods(PerList[dt.datetime | None]):
    """node -> the creation time of its oldest pod in scope (None: no such pod says when it was created)."""


def oldest_created(pods: list[PodRecord], *, scope: PodScope) -> dt.datetime | None:
    return min((p.created for p in scope.select(pods) if p.created is not None), default=None)
