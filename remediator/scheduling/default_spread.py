"""kube-scheduler's PodTopologySpread defaultConstraints, applied to a pod as the scheduler applies them.

The scheduler gives a pod its profile's default constraints only when the pod declares no
topologySpreadConstraints at all, and only with a selector it derives from the pod's controller (a ReplicaSet,
StatefulSet or ReplicationController) and the Services selecting it (helper.DefaultSelector); a pod with no such
owner gets none. The selector's matching pods are then counted per domain with the same skew arithmetic as a
declared constraint (topologyspread.py): matching pods in a domain, plus the pod itself, minus the fewest in any
eligible domain, at most maxSkew.

nodemedic keeps no Service or ReplicaSet objects, so the selector here is the pod's own labels less the ones its
controller sets per pod or per revision: the labels every pod of its workload carries. For a ReplicaSet (whose
selector includes pod-template-hash) those select exactly its pods, as the scheduler's selector does; for a
StatefulSet and a ReplicationController, every pod made from its template. A Service's selector is ANDed in by the
scheduler and selects all of those pods already, so it changes no count.
"""

from __future__ import annotations

from remediator.model.records import DefaultsOf, LabelSelector, PodRecord, SpreadConstraint

SPREAD_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController"})
# Labels a controller sets that differ between pods of one workload (a StatefulSet pod's name and index) or between
# its revisions (a StatefulSet's controller-revision-hash; a ReplicaSet's pod-template-hash is its own and stays).
PER_POD_LABELS = frozenset({"statefulset.kubernetes.io/pod-name", "apps.kubernetes.io/pod-index",
                            "controller-revision-hash"})
# Copied from the pod's node when it is bound (kube-apiserver's PodTopologyLabels admission, on by default since
# 1.35): they tell where a replica runs, not which workload it belongs to.
NODE_LABEL_PREFIXES = ("topology.kubernetes.io/", "topology.k8s.io/")
DO_NOT_SCHEDULE = "DoNotSchedule"


def workload_selector(pod: PodRecord) -> LabelSelector | None:
    """The selector the scheduler derives for `pod` (see above), or None when it derives none."""
    owner = pod.controller
    if owner is None or not owner.controller or owner.kind not in SPREAD_OWNERS:
        return None
    labels = tuple(sorted((k, v) for k, v in pod.labels.items()
                          if k not in PER_POD_LABELS and not k.startswith(NODE_LABEL_PREFIXES)))
    return LabelSelector(match_labels=labels) if labels else None


def default_spread(pod: PodRecord, defaults_of: DefaultsOf,
                   ) -> tuple[tuple[SpreadConstraint, ...], tuple[SpreadConstraint, ...]]:
    """(DoNotSchedule, ScheduleAnyway) constraints the pod's scheduler gives it by default; ((), ()) for a pod that
    declares its own or that the scheduler derives no selector for."""
    if pod.hard_spread or pod.soft_spread:
        return (), ()
    defaults = defaults_of(pod.scheduler_name)
    owner = pod.controller
    if not defaults or owner is None or owner.kind not in SPREAD_OWNERS:  # checked before the selector is built
        return (), ()
    selector = workload_selector(pod)
    if selector is None:
        return (), ()
    hard = tuple(SpreadConstraint(c.max_skew, c.topology_key, selector) for c in defaults
                 if c.when_unsatisfiable == DO_NOT_SCHEDULE)
    soft = tuple(SpreadConstraint(c.max_skew, c.topology_key, selector) for c in defaults
                 if c.when_unsatisfiable != DO_NOT_SCHEDULE)
    return hard, soft


def filter_skew(in_domain: int, fewest: int, *, matches_itself: bool) -> int:
    """The skew kube-scheduler's filter checks against maxSkew for a node of a domain holding `in_domain` matching
    pods, when the emptiest eligible domain holds `fewest` (0 with fewer domains than minDomains)."""
    return in_domain + (1 if matches_itself else 0) - fewest
