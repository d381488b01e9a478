"""A landing: a balance move whose replacement is pinned at admission to the node the plan counted on.

While the remediator holds a landing's ConfigMap (in its own namespace, labelled LANDING_LABEL), the chart's
MutatingAdmissionPolicy gives the next pod created for the moved pod's workload a nodeSelector for the planned node's
hostname and the annotation LANDING_ANNOTATION: kube-scheduler then binds it there or reports why it cannot. The
ConfigMap exists only around the eviction attempt and until the replacement is seen (remediator/control/landings.py),
so a scale-up of the workload meanwhile is the only other pod it can pin; a pinned pod still pending at the deadline
in its annotation is evicted (a pending pod's eviction ignores PDBs) and the workload's controller makes it again,
unpinned.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nodemedic_common.repair_contract import format_time, parse_time

LANDING_LABEL = "nodemedic.io/landing"  # the ConfigMaps the admission policy's binding selects ("true")
LANDING_ANNOTATION = "nodemedic.io/landing"  # on a pinned pod: "NAME DEADLINE" (RFC 3339)
HOSTNAME_LABEL = "kubernetes.io/hostname"
LANDING_PREFIX = "nodemedic-landing-"


@dataclass(frozen=True)
class Landing:
    name: str  # the ConfigMap's, LANDING_PREFIX + 8 hex digits
    namespace: str  # the workload's
    owner_uid: str  # the moved pod's controller
    owner: str  # "ReplicaSet/web-5d9c" for people
    node: str  # where the plan counted on the replacement
    hostname: str  # the node's kubernetes.io/hostname label, unique among the nodes
    moved: str  # the moved pod's key
    source: str  # the node it left
    decided: dt.datetime  # when the move was decided (the planner's memory of it counts from then)
    before: frozenset[str]  # the UIDs of the workload's pods when the move was decided: none is a replacement
    strategy: str
    lasts: dt.timedelta  # eviction.landingDeadline: from each eviction attempt to the replacement's binding
    deadline: dt.datetime  # set anew before each attempt (a PDB may refuse the move for minutes)

    def annotation(self) -> str:
        return f"{self.name} {format_time(self.deadline)}"

    def config_map(self, namespace: str) -> dict[str, object]:
        """The ConfigMap the admission policy reads as its parameter (its CEL names these keys)."""
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": namespace, "labels": {LANDING_LABEL: "true"}},
                "data": {"namespace": self.namespace, "ownerUID": self.owner_uid, "hostname": self.hostname,
                         "annotation": self.annotation(), "node": self.node, "moved": self.moved,
                         "strategy": self.strategy}}


def pinned_until(annotation: str) -> tuple[str, dt.datetime] | None:
    """(landing name, deadline) of a pod's LANDING_ANNOTATION; None when it is not one the policy writes."""
    name, _, deadline = annotation.partition(" ")
    if not name.startswith(LANDING_PREFIX) or len(name) != len(LANDING_PREFIX) + 8:
        return None
    when = parse_time(deadline)
    return None if when is None else (name, when)
