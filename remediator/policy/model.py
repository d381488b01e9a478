"""The remediation policy as typed, validated values: each section's dataclass lives with its reader
(`rules.py`, `default_evictor.py`, `limits.py`, `eviction.py`, `safety.py`, `notifications.py`, `autoscaler.py`, a
strategy's `args.py`).

Defaults there are the defaults of the policy file: a field left out of the YAML gets the dataclass's value.
Where nodemedic's default differs from descheduler's for the same name, the comment says why."""

from __future__ import annotations

from dataclasses import dataclass, field

from remediator.model.records import LabelSelector
from remediator.policy.autoscaler import AutoscalerSettings
from remediator.policy.dark import DarkSettings
from remediator.policy.default_evictor import EvictorArgs
from remediator.policy.eviction import EvictionSettings
from remediator.policy.limits import Limits
from remediator.policy.measured_usage import MetricsProviders
from remediator.policy.migrations import MigrationSettings
from remediator.policy.notifications import Notifications
from remediator.policy.repair import RepairSettings
from remediator.policy.rules import TaintRule
from remediator.policy.safety import Safety
from remediator.policy.savings import SavingsSettings
from remediator.policy.scheduler import SchedulerSettings
from remediator.policy.window import MaintenanceWindow

OWNED_TAINTS_ANNOTATION = "nodemedic.io/owned-taints"
# A taint a strategy owns records "strategy:<name>" where a rule's taint records the rule names.
STRATEGY_PREFIX = "strategy:"


@dataclass(frozen=True)
class StrategyConfig:
    name: str  # registered strategy name, e.g. "RemovePodsViolatingNodeTaints"
    args: object  # the strategy's args dataclass


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
    window: MaintenanceWindow = MaintenanceWindow()
    metrics: MetricsProviders = field(default_factory=MetricsProviders)  # `metricsProviders`: measured usage
    node_selector: LabelSelector | None = None  # `nodeSelector`: the nodes the policy acts on (None: all)
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)  # what kube-scheduler does with pods
    repair: RepairSettings = field(default_factory=RepairSettings)  # `repair`: the rails of the rules' ladders
    dark: DarkSettings = field(default_factory=DarkSettings)  # `darkNodes`: when a silent node is dark
    migrations: MigrationSettings = field(default_factory=MigrationSettings)  # `migrations`: approved engine plans
    savings: SavingsSettings = field(default_factory=SavingsSettings)  # `savings`: prices of the node-hours avoided
