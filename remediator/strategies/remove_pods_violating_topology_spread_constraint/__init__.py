"""RemovePodsViolatingTopologySpreadConstraint: move pods out of the domains their spread constraints overfill."""

from __future__ import annotations

from remediator.strategies.remove_pods_violating_topology_spread_constraint.args import read_args
from remediator.strategies.remove_pods_violating_topology_spread_constraint.plan import KIND, NAME, plan
from remediator.strategies.strategy import Strategy

STRATEGY = Strategy(NAME, KIND, read_args, plan)
