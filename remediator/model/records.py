"""Slim cluster records: what the caches keep of nodes, pods and PDBs, and what strategies read."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum


class Effect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: Effect = Effect.NO_SCHEDULE

    def identity(self) -> tuple[str, str]:
        """Taints are unique on a node by (key, effect), as the API server enforces."""
        return (self.key, str(self.effect))


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists | Lt | Gt
    value: str = ""
    effect: str = ""  # "" matches every effect


TIMESTAMP_RESOLUTION = dt.timedelta(seconds=1)  # lastTransitionTime is serialized in whole seconds
# The times planning uses. The API server stores any RFC 3339 time it is given ("9999-12-31T23:59:59Z" included),
# and every planning cycle adds durations to such times: one stamp near datetime's ends would raise OverflowError in
# every cycle and stop all remediation. No Kubernetes component writes a time before the Unix epoch or after the last
# instant Go's int64 nanoseconds hold (2262-04-11); with the longest duration a policy accepts (Go's, ~292 years)
# added or taken, a time in this range stays far inside datetime's. A time outside it is unknown where it is read.
EARLIEST_TIME = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST_TIME = dt.datetime(2262, 4, 11, tzinfo=dt.UTC)


def usable_time(t: dt.datetime) -> bool:
    """Aware (RFC 3339 requires an offset; a naive time cannot be compared with an aware one) and in range."""
    return t.tzinfo is not None and EARLIEST_TIME <= t <= LATEST_TIME


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    last_transition: dt.datetime | None = None
    reason: str = ""
    message: str = ""
    observed_at: dt.datetime | None = None  # when our watch first saw this status with this lastTransitionTime
    heartbeat: dt.datetime | None = None  # lastHeartbeatTime: when its writer last wrote it (dark nodes' witness)

    def held_since(self) -> dt.datetime | None:
        """The latest moment the condition can have reached its status: the time a `for` or `recoverAfter`
        is counted from. lastTransitionTime is truncated to the second, so the transition happened somewhere in
        [lastTransitionTime, +1 s); it also happened before our watch saw it. Taking the earlier of those two
        upper bounds never starts the clock early and, while we watch, adds only the watch latency."""
        if self.last_transition is None or not usable_time(self.last_transition):
            return None  # (records.parse_time keeps such a time out; a record built otherwise gets the same answer)
        latest = self.last_transition
        if latest.microsecond == 0:
            latest += TIMESTAMP_RESOLUTION
        if self.observed_at is None or self.observed_at < self.last_transition:
            return latest  # not watched, or our clock disagrees with the writer's: trust only the stamp
        return min(latest, self.observed_at)


@dataclass(frozen=True)
class OwnerRef:
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True)
class SelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist (labels); also Gt | Lt (node affinity)
    values: tuple[str, ...] = ()
    # What `in` asks: the values themselves while few, a set once scanning them costs more (a node pool named by
    # matchFields metadata.name lists thousands of nodes, asked about once per node).
    members: frozenset[str] | tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", frozenset(self.values) if len(self.values) > 8 else self.values)


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector. An empty selector matches everything; `None` where a selector is optional."""

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[SelectorRequirement, ...] = ()


@dataclass(frozen=True)
class PodAffinityTerm:
    """One required (anti-)affinity term of a pod, namespaces already resolved against the pod's own."""

    selector: LabelSelector | None  # None matches no pod (as in Kubernetes)
    namespaces: tuple[str, ...]  # the pods' namespaces it looks at
    any_namespace: bool  # a namespaceSelector was given: we keep no namespace labels, so it counts as all
    topology_key: str


@dataclass(frozen=True)
class SpreadConstraint:
    """A topology spread constraint (DoNotSchedule ones block node fit; ScheduleAnyway ones only guide balance
    moves, which must not make them worse)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None  # matchLabelKeys already folded in; None matches no pod
    min_domains: int = 1
    honor_node_affinity: bool = True  # nodeAffinityPolicy (default Honor)
    honor_node_taints: bool = False  # nodeTaintsPolicy (default Ignore)


@dataclass(frozen=True)
class DefaultConstraint:
    """One of kube-scheduler's PodTopologySpread defaultConstraints: no selector (the scheduler derives it from the
    pod's owner, scheduling/default_spread.py)."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway


# schedulerName -> the default constraints that scheduler gives a pod declaring none (policy/scheduler.py)
DefaultsOf = Callable[[str], tuple[DefaultConstraint, ...]]


@dataclass(frozen=True)
class NodeSelectorTerm:
    """One term of requiredDuringSchedulingIgnoredDuringExecution; terms are ORed, requirements ANDed."""

    match_expressions: tuple[SelectorRequirement, ...] = ()
    match_fields: tuple[SelectorRequirement, ...] = ()  # only metadata.name is defined by Kubernetes


@dataclass(frozen=True)
class NodeRecord:
    name: str
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    conditions: tuple[Condition, ...] = ()
    allocatable: dict[str, int] = field(default_factory=dict)  # cpu (milli), memory (bytes), pods, ...
    created: dt.datetime | None = None
    deleting: bool = False  # deletionTimestamp set
    resource_version: str = ""
    claim: str = ""  # the Karpenter NodeClaim that owns the node (its ownerReference), "" for any other node

    def condition(self, type_: str) -> Condition | None:
        for c in self.conditions:
            if c.type == type_:
                return c
        return None

    @property
    def ready(self) -> bool:
        c = self.condition("Ready")
        return c is not None and c.status == "True"


# A pod in these phases holds no resources: its containers have stopped. A pod being deleted (PodRecord.terminating)
# is not among them: it holds its requests on its node until the kubelet has stopped it, so node fit and the
# affinity checks test the phase alone, while what kube-scheduler counts for spread is PodRecord.live.
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# Every node carries its own name under this label: a topology domain of one node.
HOSTNAME_LABEL = "kubernetes.io/hostname"


@dataclass(frozen=True)
class ContainerStatuses:
    """What the deschedule strategies read of one kind of a pod's containers (app, init or ephemeral), folded
    together."""

    restarts: int = 0  # restartCount summed
    waiting: tuple[str, ...] = ()  # state.waiting.reason of the containers that have one
    terminated: tuple[str, ...] = ()  # state.terminated.reason of the containers that have one
    exit_codes: tuple[int, ...] = ()  # state.terminated.exitCode of the terminated containers


NO_STATUSES = ContainerStatuses()  # shared by every pod whose containers have nothing to say (most of them)


@dataclass(frozen=True, slots=True)
class PodCondition:
    """One entry of a pod's status.conditions, as PodLifeTime's `conditions` filters read it. The transition time is
    kept as whole seconds after the pod's creationTimestamp (both are whole seconds on the API): a few seconds for
    most pods, so equal conditions of many pods are one shared object (`state/records.py`) and a pod's whole list
    usually is too, instead of five datetimes per pod."""

    type: str
    status: str
    reason: str = ""
    seconds_after_created: int | None = None  # None: no lastTransitionTime, or no creationTimestamp


@dataclass(frozen=True)
class PreferredNodeTerm:
    """One preferredDuringSchedulingIgnoredDuringExecution entry of a pod's node affinity."""

    weight: int
    term: NodeSelectorTerm


# Slotted: 150,000 of these live in the caches, and past 29 attributes an instance __dict__ stops sharing its keys
# (CPython), which made every pod 1.3 KiB larger.
@dataclass(frozen=True, slots=True)
class PodRecord:
    namespace: str
    name: str
    uid: str
    node_name: str = ""
    phase: str = "Pending"
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()
    priority: int | None = None
    priority_class: str = ""
    scheduler_name: str = "default-scheduler"  # spec.schedulerName: the profile that places it and its replacements
    tolerations: tuple[Toleration, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    required_node_affinity: tuple[NodeSelectorTerm, ...] = ()  # empty = no required affinity
    preferred_node_affinity: tuple[PreferredNodeTerm, ...] = ()
    required_anti_affinity: tuple[PodAffinityTerm, ...] = ()  # podAntiAffinity required...IgnoredDuringExecution
    required_affinity: tuple[PodAffinityTerm, ...] = ()  # podAffinity required...IgnoredDuringExecution
    hard_spread: tuple[SpreadConstraint, ...] = ()  # topologySpreadConstraints with DoNotSchedule
    soft_spread: tuple[SpreadConstraint, ...] = ()  # ScheduleAnyway ones: balance moves must not worsen them
    requests: dict[str, int] = field(default_factory=dict)  # summed over containers (max with init containers)
    images: tuple[str, ...] = ()  # the containers' images, sorted (RemoveDuplicates tells replicas apart by them)
    qos: str = "BestEffort"  # BestEffort | Burstable | Guaranteed
    has_local_storage: bool = False  # any emptyDir or hostPath volume
    has_pvc: bool = False
    claims: tuple[str, ...] = ()  # claimName of each persistentVolumeClaim volume (for protected storage classes)
    terminating: bool = False  # deletionTimestamp set
    start_time: dt.datetime | None = None
    created: dt.datetime | None = None
    reason: str = ""  # status.reason (e.g. Evicted, NodeLost, Shutdown)
    containers: ContainerStatuses = NO_STATUSES
    init_containers: ContainerStatuses = NO_STATUSES
    ephemeral_containers: ContainerStatuses = NO_STATUSES
    conditions: tuple[PodCondition, ...] = ()  # status.conditions (shared tuples, see PodCondition)
    # The message of a PodScheduled=False/Unschedulable condition ("0/3 nodes are available: 3 Insufficient cpu."),
    # "" when the scheduler has not given up on the pod: what the placement engine looks for.
    unschedulable: str = ""
    # Neither finished (Succeeded, Failed) nor being deleted: the pods kube-scheduler counts for topology spread and a
    # workload counts as its running replicas. Not the test of what holds room on a node: a terminating pod still
    # does, until it is gone (TERMINAL_PHASES alone decides that). Worked out once per record: a plan asks it of every
    # pod several times (as a property it cost 6 % of a 5,000-node plan).
    live: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "live", self.phase not in TERMINAL_PHASES and not self.terminating)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def controller(self) -> OwnerRef | None:
        for o in self.owners:
            if o.controller:
                return o
        return self.owners[0] if self.owners else None

    def transitioned(self, condition: PodCondition) -> dt.datetime | None:
        """The condition's lastTransitionTime."""
        if self.created is None or condition.seconds_after_created is None:
            return None
        return self.created + dt.timedelta(seconds=condition.seconds_after_created)


@dataclass(frozen=True)
class PdbRecord:
    namespace: str
    name: str
    selector: LabelSelector | None  # None selects nothing (policy/v1: empty selector selects all)
    disruptions_allowed: int = 0
