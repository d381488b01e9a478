"""The one explicit registry of strategies: name -> Strategy (strategy.py). No import-time registration.

Each strategy is a folder here: `args.py` (its arguments, their defaults and their validation), `plan.py` (what
it would evict), `__init__.py` (its `STRATEGY`). Adding one takes its folder, its import and its line in
`REGISTERED` below.
"""

from __future__ import annotations

from remediator.strategies import (  # one line per strategy, and one in REGISTERED
    balance_resource_mix,
    high_node_utilization,
    low_node_utilization,
    make_room_for_pending_pods,
    pod_life_time,
    remove_duplicates,
    remove_failed_pods,
    remove_pods_having_too_many_restarts,
    remove_pods_violating_inter_pod_anti_affinity,
    remove_pods_violating_node_affinity,
    remove_pods_violating_node_taints,
    remove_pods_violating_topology_spread_constraint,
)
from remediator.strategies.strategy import KINDS, Strategy

__all__ = ["KINDS", "STRATEGIES", "Strategy", "lookup"]

REGISTERED = (
    remove_pods_violating_node_taints.STRATEGY,
    remove_pods_violating_node_affinity.STRATEGY,
    remove_pods_violating_inter_pod_anti_affinity.STRATEGY,
    remove_pods_having_too_many_restarts.STRATEGY,
    pod_life_time.STRATEGY,
    remove_failed_pods.STRATEGY,
    low_node_utilization.STRATEGY,
    high_node_utilization.STRATEGY,
    make_room_for_pending_pods.STRATEGY,
    balance_resource_mix.STRATEGY,
    remove_duplicates.STRATEGY,
    remove_pods_violating_topology_spread_constraint.STRATEGY,
)
STRATEGIES: dict[str, Strategy] = {s.name: s for s in REGISTERED}


def lookup(name: str) -> Strategy:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise KeyError(f"unknown strategy {name!r} (known: {', '.join(sorted(STRATEGIES))})") from None
