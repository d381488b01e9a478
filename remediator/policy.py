"""The remediation policy as typed, validated values (loaded from YAML by `policyfile.py`).

Defaults here are the defaults of the policy file: a field left out of the YAML gets the value below.
Where nodemedic's default differs from descheduler's for the same name, the comment says why.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from remediator.model import LabelSelector, Taint

OWNED_TAINTS_ANNOTATION = "nodemedic.io/owned-taints"
EXCLUDE_LABEL = "nodemedic.io/exclude"


@dataclass(frozen=True)
class TaintRule:
    """Condition `type` at `status` for at least `for_` -> `taint` on the node (and maybe evictions)."""

    name: str  # unique; defaults to "<type>-<status>" lowercased when the file gives none
    condition_type: str
    condition_status: str  # "True" | "False" | "Unknown"
    for_: dt.timedelta
    taint: Taint
    evict: bool = True
    recover_after: dt.timedelta = dt.timedelta(minutes=5)
    allow_no_execute: bool = False  # NoExecute taints need this explicit opt-in


@dataclass(frozen=True)
class Namespaces:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()  # at most one of include/exclude is set


@dataclass(frozen=True)
class EvictorArgs:
    """descheduler's DefaultEvictor arguments, same names and semantics (see docs/remediator.md)."""

    evict_local_storage_pods: bool = False
    evict_daemonset_pods: bool = False
    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    ignore_pvc_pods: bool = False
    priority_threshold: int | None = None  # value; None = system-critical (2e9) as in descheduler
    priority_threshold_name: str = ""  # a PriorityClass name, resolved each cycle from the watched PriorityClasses
    label_selector: LabelSelector | None = None
    namespaces: Namespaces = Namespaces()
    min_replicas: int = 0
    min_pod_age: dt.timedelta | None = None
    # descheduler defaults nodeFit to false; nodemedic to true: never evict a pod that has nowhere to go.
    node_fit: bool = True
    honor_safe_to_evict: bool = True  # cluster-autoscaler.kubernetes.io/safe-to-evict: "false" protects


@dataclass(frozen=True)
class RemovePodsViolatingNodeTaintsArgs:
    namespaces: Namespaces = Namespaces()
    label_selector: LabelSelector | None = None
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()  # "key" or "key=value"
    # None = the taints the rules own with evict: true (so a manual cordon never triggers mass eviction).
    included_taints: tuple[str, ...] | None = None


@dataclass(frozen=True)
class LowNodeUtilizationArgs:
    """descheduler's LowNodeUtilization arguments (requests-based usage, percent of allocatable)."""

    thresholds: tuple[tuple[str, float], ...] = ()  # resource -> percent: at or below on every one = underutilized
    target_thresholds: tuple[tuple[str, float], ...] = ()  # above on any one = overutilized
    use_deviation_thresholds: bool = False  # both are distances below/above the mean usage instead
    number_of_nodes: int = 0  # act only when more than this many nodes are underutilized
    evictable_namespaces_exclude: tuple[str, ...] = ()
    eviction_limit_per_node: int | None = None  # evictionLimits.node


@dataclass(frozen=True)
class HighNodeUtilizationArgs:
    """descheduler's HighNodeUtilization arguments, plus what consolidation needs (see docs/utilization.md)."""

    thresholds: tuple[tuple[str, float], ...] = ()
    number_of_nodes: int = 0
    evictable_namespaces_exclude: tuple[str, ...] = ()
    only_thresholding_resources: bool = False  # evictionModes: [OnlyThresholdingResources]
    # nodemedic: taint a node being emptied (NoSchedule, owned) so the scheduler does not refill it and the
    # cluster autoscaler can remove it; at most `max_consolidating_nodes` carry it at once; the taint is
    # removed again when the node was not removed within `consolidation_timeout`.
    taint_drained_nodes: bool = True
    max_consolidating_nodes: int = 1
    consolidation_timeout: dt.timedelta = dt.timedelta(minutes=15)


CONSOLIDATION_TAINT = Taint(key="nodemedic.io/consolidating", value="true")
# A taint a strategy owns records "strategy:<name>" where a rule's taint records the rule names.
STRATEGY_PREFIX = "strategy:"
CONSOLIDATION_OWNER = STRATEGY_PREFIX + "HighNodeUtilization"  # the "rule" in the owned-taints annotation


@dataclass(frozen=True)
class StrategyConfig:
    name: str  # registered strategy name, e.g. "RemovePodsViolatingNodeTaints"
    args: object  # the strategy's args dataclass


@dataclass(frozen=True)
class Limits:
    max_pods_to_evict_per_node: int | None = 10  # descheduler: maxNoOfPodsToEvictPerNode
    max_pods_to_evict_per_namespace: int | None = None  # maxNoOfPodsToEvictPerNamespace
    max_pods_to_evict_total: int | None = 50  # maxNoOfPodsToEvictTotal
    owner_cooldown: dt.timedelta = dt.timedelta(seconds=5)  # min interval between evictions of one owner's pods


@dataclass(frozen=True)
class EvictionSettings:
    retry_deadline: dt.timedelta = dt.timedelta(minutes=10)  # per pod: give up on 429s after this
    initial_backoff: dt.timedelta = dt.timedelta(seconds=1)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    grace_period_seconds: int | None = None


@dataclass(frozen=True)
class Safety:
    max_tainted_nodes: int | None = 3  # count
    max_tainted_nodes_percent: float | None = 10.0  # of nodes in scope; the smaller of count/percent wins
    min_tainted_nodes: int = 1  # floor, so a 3-node pool can still remediate one node
    paused: bool = False
    exclude_label: str = EXCLUDE_LABEL  # nodes labelled <exclude_label>=true are never tainted nor drained


@dataclass(frozen=True)
class AutoscalerSettings:
    """What the cluster's node autoscaler does, so nodemedic works with it instead of racing it (docs/autoscalers.md).

    `adds_nodes`: an autoscaler (Karpenter, cluster-autoscaler) adds a node for pods that fit nowhere, so node fit
    also accepts, for a pod drained off a tainted node, a new node like the one it leaves.
    `consolidates`: the autoscaler empties underutilized nodes itself (Karpenter's WhenEmptyOrUnderutilized,
    cluster-autoscaler's scale-down): then HighNodeUtilization, which does the same, is refused: one consolidator.
    """

    adds_nodes: bool = False
    consolidates: bool = False


@dataclass(frozen=True)
class SinkConfig:
    type: str  # "webhook" | "slack" | "alertmanager"
    url: str
    name: str = ""
    timeout: dt.timedelta = dt.timedelta(seconds=5)
    max_attempts: int = 5
    initial_backoff: dt.timedelta = dt.timedelta(milliseconds=500)
    max_backoff: dt.timedelta = dt.timedelta(seconds=30)
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Notifications:
    queue_size: int = 1000
    sinks: tuple[SinkConfig, ...] = ()


@dataclass(frozen=True)
class Policy:
    rules: tuple[TaintRule, ...] = ()
    evictor: EvictorArgs = EvictorArgs()
    strategies: tuple[StrategyConfig, ...] = field(default_factory=tuple)
    limits: Limits = Limits()
    eviction: EvictionSettings = EvictionSettings()
    safety: Safety = Safety()
    notifications: Notifications = Notifications()
    autoscaler: AutoscalerSettings = AutoscalerSettings()
