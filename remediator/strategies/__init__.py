"""The one explicit registry of strategies: name -> Strategy (strategy.py). No import-time side effects.

Each strategy is a folder here: `args.py` (its arguments, their defaults and their validation), `plan.py` (what
it would evict, through the gate), `__init__.py` (its `STRATEGY` record, with the taint it owns, if any). Adding one
takes its folder and its one line in `REGISTERED`. The policy loader reads the strategies' args through `CATALOG`.
"""

from __future__ import annotations

import importlib
from typing import Any

from remediator.policy.model import StrategyConfig
from remediator.policy.strategies import StrategyCatalog
from remediator.strategies.remove_pods_violating_node_taints.args import RemovePodsViolatingNodeTaintsArgs
from remediator.strategies.strategy import KINDS, Strategy

__all__ = ["CATALOG", "KINDS", "STRATEGIES", "Strategy", "lookup"]

# The strategy folders. Order is not theirs to set: the policy lists the strategies it runs, and the planner runs
# every deschedule one before every balance one (KINDS), as descheduler does.
REGISTERED = (
    "remove_pods_violating_node_taints",
    "remove_pods_violating_node_affinity",
    "remove_pods_violating_inter_pod_anti_affinity",
    "remove_pods_having_too_many_restarts",
    "pod_life_time",
    "remove_failed_pods",
    "low_node_utilization",
    "high_node_utilization",
    "make_room_for_pending_pods",
    "balance_resource_mix",
    "remove_duplicates",
    "remove_pods_violating_topology_spread_constraint",
)


def _load(folder: str) -> Strategy[Any]:
    strategy = getattr(importlib.import_module(f"{__name__}.{folder}"), "STRATEGY", None)
    if not isinstance(strategy, Strategy):
        raise TypeError(f"{__name__}.{folder}.STRATEGY is missing or not a Strategy ({type(strategy).__name__})")
    return strategy


STRATEGIES: dict[str, Strategy[Any]] = {s.name: s for s in map(_load, REGISTERED)}
# What the policy loader is handed (the policy does not import the strategies that read its sections); without a
# `strategies` key a policy runs RemovePodsViolatingNodeTaints with its defaults.
CATALOG = StrategyCatalog(STRATEGIES, (StrategyConfig("RemovePodsViolatingNodeTaints",
                                                      RemovePodsViolatingNodeTaintsArgs()),))


def lookup(name: str) -> Strategy[Any]:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r} (known: {', '.join(sorted(STRATEGIES))})") from None
