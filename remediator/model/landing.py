"""A landing: a balance move whose replacement is pinned at admission to the node the plan counted on.

While the remediator holds a landing object (`landings.nodemedic.io`, in its own namespace), the chart's
MutatingAdmissionPolicy gives the next pod created for the moved pod's workload a nodeSelector for the planned node's
hostname and the annotation LANDING_ANNOTATION: kube-scheduler then binds it there or reports why it cannot. The
object exists only around the eviction attempt and until the replacement is seen (remediator/control/landings.py),
so a scale-up of the workload meanwhile is the only other pod it can pin; a pinned pod still pending at the deadline
in its annotation is evicted (a pending pod's eviction ignores PDBs) and the workload's controller makes it again,
unpinned.

A resource of our own and not a ConfigMap: the API server watches a policy's built-in parameter kind through its shared
informer, and stops that watch for good once no binding names the kind for a second (kubernetes/kubernetes#130887):
from then on it pins by ConfigMaps deleted long ago and never sees a new one. A custom resource gets a watch of its own,
made again whenever a binding names it again.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from nodemedic_common.repair_contract import format_time, parse_time

LANDING_API = "/apis/nodemedic.io/v1alpha1"
LANDING_ANNOTATION = "nodemedic.io/landing"  # on a pinned pod: "NAME DEADLINE" (RFC 3339)
LANDING_PREFIX = "nodemedic-landing-"


@dataclass(frozen=True)
class Landing:
    name: str  # the landing object's, LANDING_PREFIX + 8 hex digits
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

    def resource(self, namespace: str) -> dict[str, object]:
        """The object the admission policy reads as its parameter (its CEL names these spec fields; the chart's CRD
        landings.nodemedic.io bounds them)."""
        return {"apiVersion": "nodemedic.io/v1alpha1", "kind": "Landing",
                "metadata": {"name": self.name, "namespace": namespace},
                "spec": {"namespace": self.namespace, "ownerUID": self.owner_uid, "owner": self.owner,
                         "hostname": self.hostname, "node": self.node, "annotation": self.annotation(),
                         "moved": self.moved, "strategy": self.strategy}}


def landings_path(namespace: str) -> str:
    return f"{LANDING_API}/namespaces/{namespace}/landings"


def pinned_until(annotation: str) -> tuple[str, dt.datetime] | None:
    """(landing name, deadline) of a pod's LANDING_ANNOTATION; None when it is not one the policy writes."""
    name, _, deadline = annotation.partition(" ")
    if not name.startswith(LANDING_PREFIX) or len(name) != len(LANDING_PREFIX) + 8:
        return None
    when = parse_time(deadline)
    return None if when is None else (name, when)
